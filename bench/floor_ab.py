#!/usr/bin/env python3
"""Two benchtop installs and the floor client on the floor check's
256-connection row, alternating: whole-process CPU per transaction, and
how much of benchtop's is not its event loops' (Python: start-up, the
readings, the monitor, the summary).

    python bench/floor_ab.py --a OLD/bin/benchtop --b NEW/bin/benchtop [--rounds 3] [--pgsql-port 15432]

Each round runs A, B and bench/roundtrip_floor.c (built here), in an order
that turns from round to round, for 10 s of
pgbench's select-only (`pgbench -i -s 2` prepared) at 256 connections on 4
threads, normal priority, against a running PostgreSQL (user sbtest,
password from PGPASSWORD or ~/.pgpass).  The loops' CPU is their threads'
own (/proc/PID/task, bt-loop*), read every 50 ms to their last reading;
the whole process's from wait4.  Prints each run, then medians, and A's
and B's CPU per transaction at a like throughput: on the 2-core host a
round's TPS moves 30,000-45,000 from minute to minute, every client's CPU
per transaction falls as it rises (fewer wake-ups per transaction), and a
change of a few percent hides under that unless compared at one TPS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from vs_peers import build_floor

HZ = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    transactions: int
    user_s: float
    sys_s: float
    loops_s: float  # the event loops' threads (0 for the floor client: all of it is its loops)

    @property
    def us_per_txn(self) -> float:
        return (self.user_s + self.sys_s) / self.transactions * 1e6

    @property
    def rest_s(self) -> float:
        return self.user_s + self.sys_s - self.loops_s if self.loops_s else 0.0


def _loop_ticks(pid: int, seen: dict[str, int]) -> None:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tasks:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")].startswith("bt-loop"):
            fields = stat[stat.rindex(")") + 2:].split()
            seen[tid] = int(fields[11]) + int(fields[12])


def measured(cmd: list[str]) -> tuple[str, float, float, float]:
    """Its output, user and system seconds, and its loop threads' seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else ""))
    reader.start()
    seen: dict[str, int] = {}
    while proc.poll() is None:
        _loop_ticks(proc.pid, seen)
        time.sleep(0.05)
    reader.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (out[0], after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
            sum(seen.values()) / HZ)


def benchtop_run(exe: str, port: int) -> Run:
    out, user, system, loops = measured([
        exe, "--headless", "--json", "--engine", "postgres", "--dsn", f"postgresql://sbtest@127.0.0.1:{port}/sbtest",
        "--workload", "tpcb-select-only", "--scale", "2", "--connections", "256", "--threads", "4", "--time", "10",
        "--report-interval", "0", "--worker-priority", "normal"])
    summary = [json.loads(line) for line in out.splitlines() if '"summary"' in line]
    if not summary:
        raise SystemExit(f"floor_ab: {exe} gave no summary: {out.strip().splitlines()[-1:]}")
    return Run(summary[-1]["transactions"], user, system, loops)


def floor_run(exe: Path, port: int) -> Run:
    out, user, system, _ = measured([str(exe), f"host=127.0.0.1 port={port} user=sbtest dbname=sbtest", "4", "64",
                                     "10", "200000", "--epoll", "--normal", "--pgbench"])
    return Run(int(out.strip().split()[-1]), user, system, 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the first benchtop (its console script)")
    ap.add_argument("--b", required=True, help="the second benchtop")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pgsql-port", type=int, default=15432)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be 1 or more")
    floor = build_floor(Path(os.environ.get("TMPDIR", "/tmp")))
    runs: dict[str, list[Run]] = {"A": [], "B": [], "floor": []}
    for i in range(args.rounds):
        # the order turns each round: a run right after another's 256 connections close may start on a busier
        # host (with A always first, B's TPS was higher in 5 rounds of 5; turning, in 3 of 6)
        names = list(runs)
        for name in names[i % 3:] + names[:i % 3]:
            run = (floor_run(floor, args.pgsql_port) if name == "floor"
                   else benchtop_run(args.a if name == "A" else args.b, args.pgsql_port))
            runs[name].append(run)
            print(f"round {i + 1} {name:5}: {run.transactions} transactions, user {run.user_s:.2f} s, system "
                  f"{run.sys_s:.2f} s, {run.us_per_txn:.2f} us each, besides the loops {run.rest_s:.2f} s", flush=True)
    # each run against the floor of its own round, as the floor check does: the host's throughput moves
    # from minute to minute, and every client's CPU per transaction with it
    for name, done in runs.items():
        us = statistics.median(r.us_per_txn for r in done)
        ratio = statistics.median(r.us_per_txn / f.us_per_txn for r, f in zip(done, runs["floor"]))
        print(f"{name:5} median {us:.2f} us per transaction, {ratio:.2f}x the floor of its round, "
              f"besides the loops {statistics.median(r.rest_s for r in done):.2f} s")
    if args.rounds >= 3:
        like = statistics.median(r.transactions for r in runs["A"] + runs["B"])
        for name in ("A", "B"):
            fit = stats.linregress([r.transactions for r in runs[name]], [r.us_per_txn for r in runs[name]])
            at = fit.intercept + fit.slope * like
            print(f"{name:5} at a like {like:,.0f} transactions: {at:.2f} us per transaction "
                  f"(a line fitted over its rounds, r = {fit.rvalue:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
