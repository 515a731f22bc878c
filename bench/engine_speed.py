#!/usr/bin/env python3
"""Engine speed and memory targets (issue 2), measured, not asserted by tests.

    python bench/engine_speed.py            # the full targets: 30 s rate runs, 10 min memory run
    python bench/engine_speed.py --quick    # a 1-minute taste of each

Prints: null-engine transactions/s on one worker, ns per histogram record,
achieved rate vs target at 10,000/s and 100,000/s, and RSS over a long run.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchtop.engine import ConnSettings, Engine, EngineSettings  # noqa: E402
from benchtop.record.samples import IntervalStats  # noqa: E402
from benchtop.workload import builtin_program  # noqa: E402


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(settings: EngineSettings, seconds: float) -> IntervalStats:
    """One null-engine oltp_point_select run: the interval after a 0.5 s ramp."""
    eng = Engine(ConnSettings(driver="null"), settings, builtin_program("oltp_point_select", "null"))
    eng.start()
    time.sleep(0.5)
    a = eng.snapshot()
    time.sleep(seconds)
    b = eng.snapshot()
    eng.stop()
    eng.join()
    eng.close()
    return IntervalStats.between(a, b)


def null_tps(seconds: float) -> float:
    return measure(EngineSettings(threads=1), seconds).tps


def hist_record_ns() -> str:
    with tempfile.TemporaryDirectory() as d:
        exe = Path(d) / "hist_record"
        subprocess.run(["cc", "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-o", str(exe), str(ROOT / "bench" / "hist_record.c")], check=True)
        return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.strip()


def rate_held(rate: float, seconds: float, threads: int) -> tuple[float, float]:
    iv = measure(EngineSettings(threads=threads, rate=rate), seconds)
    return iv.tps, iv.latency_ms["p99"]


def memory_flat(seconds: float, threads: int) -> list[tuple[float, float]]:
    eng = Engine(ConnSettings(driver="null"), EngineSettings(threads=threads),
                 builtin_program("oltp_read_write", "null"))
    eng.start()
    points = []
    t0 = time.monotonic()
    prev = eng.snapshot()
    while time.monotonic() - t0 < seconds:
        time.sleep(1.0)
        cur = eng.snapshot()
        IntervalStats.between(prev, cur)  # what a report loop does every second
        prev = cur
        points.append((time.monotonic() - t0, rss_mb()))
    eng.stop()
    eng.join()
    eng.close()
    return points


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rate_s = 5 if args.quick else 30
    mem_s = 30 if args.quick else 600
    print(f"null engine, 1 worker, oltp_point_select: {null_tps(3 if args.quick else 10):,.0f} transactions/s (target >= 2,000,000)")
    print(f"histogram record: {hist_record_ns()} (target <= 25 ns)")
    for rate in (10_000, 100_000):
        tps, p99 = rate_held(rate, rate_s, threads=2)
        print(f"rate {rate:,}/s over {rate_s} s: achieved {tps:,.1f}/s ({(tps / rate - 1) * 100:+.3f}%), p99 {p99:.3f} ms (target within 1%)")
    pts = memory_flat(mem_s, threads=8)
    first = pts[min(len(pts) - 1, 4)][1]
    last = pts[-1][1]
    print(f"RSS over {mem_s} s with 8 workers: {first:.1f} MB after 5 s -> {last:.1f} MB at the end "
          f"({last - first:+.1f} MB); max {max(p for _, p in pts):.1f} MB")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
