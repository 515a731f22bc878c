#!/usr/bin/env python3
"""Long run with many connections: RSS of the benchtop process over time.

    python bench/long_run.py                         # 1,024 connections, 10 minutes, headless
    python bench/long_run.py --tui                   # the same with the TUI open (in tmux)
    python bench/long_run.py --threads 64 --time 60  # a quicker look

Starts a private MariaDB (the test harness's code; max_connections raised for
the run), prepares a small oltp table, runs benchtop oltp_point_select against
it and prints the RSS of the benchtop process every 30 s and at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.local import DATABASE, PASSWORD, USER, LocalMariaDB, free_port  # noqa: E402


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1024)
    ap.add_argument("--time", type=int, default=600)
    ap.add_argument("--every", type=int, default=30)
    ap.add_argument("--tui", action="store_true", help="run the TUI inside tmux instead of headless")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="benchtop-long-"))
    os.chmod(root, 0o755)
    my = LocalMariaDB(root, free_port())
    session = f"benchtop-long-{os.getpid()}"
    try:
        my.start()
        my.wait_ready()
        import pymysql

        with pymysql.connect(host="127.0.0.1", port=my.port, user="root", unix_socket=str(my.socket)) as c:
            c.cursor().execute(f"SET GLOBAL max_connections = {args.threads + 100}")
        env = {**os.environ, "MYSQL_PWD": PASSWORD, "PYTHONPATH": str(ROOT)}
        dsn = f"mysql://{USER}@127.0.0.1:{my.port}/{DATABASE}"
        base = [sys.executable, "-m", "benchtop"]
        common = ["--engine", "mysql", "--dsn", dsn, "--tables", "1", "--table-size", "10000"]
        subprocess.run([*base, "prepare", *common], check=True, env=env, capture_output=True)
        run = [*base, *common, "--workload", "oltp_point_select", "--threads", str(args.threads),
               "--time", str(args.time), "--no-monitor"]
        if args.tui:
            cmd = " ".join(f"'{a}'" for a in run)
            subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "48",
                            f"env MYSQL_PWD={PASSWORD} PYTHONPATH={ROOT} {cmd}"], check=True)
            time.sleep(3)
            pid = int(subprocess.run(["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
                                     capture_output=True, text=True, check=True).stdout.split()[0])
            kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
            pid = int(kids[0]) if kids else pid
            proc = None
        else:
            proc = subprocess.Popen([*run, "--headless", "--report-interval", "1"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            pid = proc.pid
        t0 = time.monotonic()
        samples = []
        while time.monotonic() - t0 < args.time + 5:
            time.sleep(min(args.every, 5))
            r = rss_mb(pid)
            if r == 0.0:
                break
            samples.append((time.monotonic() - t0, r))
            if int(samples[-1][0]) % args.every < 5:
                print(f"t={samples[-1][0]:6.0f}s RSS {r:8.1f} MB", flush=True)
        if proc is not None:
            proc.wait(timeout=120)
        if samples:
            early = next((r for t, r in samples if t >= 30), samples[0][1])
            print(f"{'TUI' if args.tui else 'headless'}, {args.threads} connections, {args.time} s: "
                  f"RSS {early:.1f} MB at 30 s -> {samples[-1][1]:.1f} MB at the end, max {max(r for _, r in samples):.1f} MB")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        my.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
