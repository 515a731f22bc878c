"""`python -m tests.proxysql_standin --port 16032`: serve the stand-in with
live simulated traffic, for trying the TUI by hand."""

from __future__ import annotations

import argparse
import time

from tests.proxysql_standin.server import start_standin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.proxysql_standin", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=16032)
    parser.add_argument("--qps", type=float, default=1000.0, help="simulated queries per second (0: idle)")
    parser.add_argument("--hostgroup-pool", action="store_true", help="also serve stats_mysql_hostgroup_connection_pool")
    args = parser.parse_args(argv)
    try:
        standin = start_standin(port=args.port, host=args.host, hostgroup_pool=args.hostgroup_pool)
    except OSError as exc:
        parser.exit(2, f"cannot listen on {args.host}:{args.port}: {exc.strerror}\n")
    print(f"ProxySQL admin stand-in on {standin.dsn()} (stats user: {standin.dsn('stats')}); Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(1.0)
            if args.qps > 0:
                standin.simulate_traffic(1.0, args.qps)
    except KeyboardInterrupt:
        pass
    finally:
        standin.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
