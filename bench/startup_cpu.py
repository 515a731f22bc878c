#!/usr/bin/env python3
"""The CPU a run costs with no load: what start-up, the target's readings
and exit add to every run, whatever its length.

    python bench/startup_cpu.py --pgsql-port 15432 [--runs 6]

Runs `benchtop --headless` and `sysbench` against a running PostgreSQL
(user and password sbtest, database sbtest, sysbench's oltp tables
prepared) for one second at one transaction per second, alternating, and
prints the mean user+sys CPU of each whole process.  In bench/vs_peers.py
that cost is spread over the transactions of a 20 s run.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from vs_peers import timed  # the same CPU count as the table's (user+sys, children included)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pgsql-port", type=int, required=True)
    ap.add_argument("--runs", type=int, default=6)
    args = ap.parse_args()
    env = {"PGPASSWORD": "sbtest"}
    common = ["--tables=4", "--threads=4", "--time=1", "--rate=1"]
    benchtop = [sys.executable, "-m", "benchtop", "--headless", "--json", "--engine", "postgres", "--dsn",
                f"postgresql://sbtest@127.0.0.1:{args.pgsql_port}/sbtest", "--workload", "oltp_point_select",
                "--report-interval=0", "--no-monitor", *common]
    sysbench = ["sysbench", "oltp_point_select", "--db-driver=pgsql", "--pgsql-host=127.0.0.1",
                f"--pgsql-port={args.pgsql_port}", "--pgsql-user=sbtest", "--pgsql-password=sbtest",
                "--pgsql-db=sbtest", *common, "run"]
    runs: dict[str, list[float]] = {"benchtop": [], "sysbench": []}
    for i in range(args.runs):
        order = [("benchtop", benchtop), ("sysbench", sysbench)]
        for name, cmd in order if i % 2 == 0 else order[::-1]:
            runs[name].append(timed(cmd, env=env)[1])
    for name, cpus in runs.items():
        print(f"{name:9} CPU of a run with no load: mean {1000 * statistics.mean(cpus):.0f} ms, "
              f"{1000 * min(cpus):.0f}-{1000 * max(cpus):.0f} ms over {len(cpus)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
