#!/usr/bin/env python3
"""The knee search against an exhaustive sweep of the same range: does the
search find a setting within 10% of the sweep's best throughput under the
p99 limit, in at most a quarter of the sweep's wall time?

    python bench/knee_vs_sweep.py --p99-limit MS [--min-threads 1] [--max-threads 64]
        [--point-s S] [--out DIR] -- RUN OPTIONS

RUN OPTIONS go to both (target, workload, sizes; e.g. `-- --engine mysql --dsn
mysql://sbtest@127.0.0.1:13306/sbtest --workload oltp_point_select --tables 1 --table-size 10000`);
the tables must be prepared.  The search runs first; the sweep then runs every power of two and the
midpoints between them in the range (1, 2, 3, 4, 6, 8, 12, 16, 24, ...), each point as long as the
search's longest probe (or --point-s), one process per point as a user would.  Prints both, the
search's answer and the verdict.  Run it on a quiet machine: it is a timing benchmark.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path


def sweep_points(low: int, high: int) -> list[int]:
    """Powers of two and the midpoints between them, inside [low, high].

    >>> sweep_points(1, 32)
    [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    """
    out = {low, high}
    p = 1
    while p <= high:
        for v in (p, p + p // 2):
            if low <= v <= high:
                out.add(v)
        p *= 2
    return sorted(out)


def benchtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchtop", *args], capture_output=True, text=True)


def run_search(args: argparse.Namespace, run_opts: list[str], out: Path) -> tuple[dict, float]:
    t0 = time.monotonic()
    res = benchtop("knee", "--headless", "--json", *run_opts, "--min-threads", str(args.min_threads),
                   "--max-threads", str(args.max_threads), "--p99-limit", str(args.p99_limit), "--out", str(out))
    took = time.monotonic() - t0
    if res.returncode != 0:
        sys.exit(f"knee_vs_sweep: the search failed: {res.stderr.strip().splitlines()[-1:]}")
    for line in res.stdout.splitlines():
        d = json.loads(line)
        if d.get("type") == "probe":
            print(f"  probe {d['probe']:2d}: {d['threads']:4d} threads {d['tps']:10.1f} tps  p99 {d['p99_ms']:8.3f} ms"
                  f"  {d['time_s']:.1f} s{'' if d['feasible'] else '  over the limit'}")
    knee = json.loads((out / "summary.json").read_text())["knee"]
    return knee, took


def run_sweep(args: argparse.Namespace, run_opts: list[str], point_s: float) -> tuple[list[dict], float]:
    t0 = time.monotonic()
    rows = []
    for n in sweep_points(args.min_threads, args.max_threads):
        res = benchtop("--headless", "--json", *run_opts, "--threads", str(n), "--time", f"{point_s:g}")
        if res.returncode != 0:
            sys.exit(f"knee_vs_sweep: the sweep failed at {n} threads: {res.stderr.strip().splitlines()[-1:]}")
        s = [json.loads(line) for line in res.stdout.splitlines() if '"summary"' in line][-1]
        rows.append({"threads": n, "tps": s["tps"], "p99_ms": s["latency_ms"]["p99"]})
        ok = s["latency_ms"]["p99"] <= args.p99_limit
        print(f"  sweep: {n:4d} threads {s['tps']:10.1f} tps  p99 {s['latency_ms']['p99']:8.3f} ms"
              f"{'' if ok else '  over the limit'}")
    return rows, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p99-limit", type=float, required=True, help="milliseconds")
    ap.add_argument("--min-threads", type=int, default=1)
    ap.add_argument("--max-threads", type=int, default=64)
    ap.add_argument("--point-s", type=float, default=0.0,
                    help="seconds per sweep point (default: the search's longest probe)")
    ap.add_argument("--out", default="", help="the search's results folder (default: a new one)")
    argv = sys.argv[1:]
    run_opts = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    out = Path(args.out or f"bench/results/knee-{time.strftime('%Y%m%d-%H%M%S')}")
    print(f"search: threads {args.min_threads}..{args.max_threads}, p99 limit {args.p99_limit:g} ms")
    knee, search_s = run_search(args, run_opts, out)
    longest = max((p["time_s"] for p in knee["probes"]), default=1.0)
    point_s = args.point_s or math.ceil(longest)
    print(f"  {knee['answer']}")
    print(f"sweep: {len(sweep_points(args.min_threads, args.max_threads))} points of {point_s:g} s")
    rows, sweep_s = run_sweep(args, run_opts, point_s)
    under = [r for r in rows if r["p99_ms"] <= args.p99_limit]
    best = max(under, key=lambda r: r["tps"]) if under else None
    kb = knee.get("best")
    print()
    print(f"search: {kb['threads'] if kb else '-'} threads, {kb['tps'] if kb else 0:.1f} tps "
          f"in {search_s:.0f} s ({len(knee['probes'])} probes)")
    print(f"sweep:  {best['threads'] if best else '-'} threads, {best['tps'] if best else 0:.1f} tps in {sweep_s:.0f} s")
    within = bool(best and kb and kb["tps"] >= 0.9 * best["tps"]) or (best is None and kb is None)
    quarter = search_s <= sweep_s / 4
    print(f"within 10% of the sweep's best: {'yes' if within else 'NO'}; "
          f"at most a quarter of its time ({search_s / sweep_s:.0%}): {'yes' if quarter else 'NO'}")
    print(f"report: benchtop report {out} --png DIR")
    return 0 if within and quarter else 1


if __name__ == "__main__":
    sys.exit(main())
