#!/usr/bin/env python3
"""How often `benchtop ab` is right: A/A comparisons (identical sides) must
say no difference, A/B comparisons of a small true difference must get its
sign and exclude 1, with a noisy neighbour started at a random moment during
half of them; the same A/B made the seeds' way (one run of each side) for how
often a single pair of runs gets the sign wrong; and, with --duet-dsn, the
interval's width of A/A comparisons run as a duet (B on that second target,
both sides at once) against the same taking turns, for the same wall time.

    python bench/ab_accuracy.py [--parts aa,ab,single,width] [--count 20] [--rounds 6 | --max-time S] [--round-time 3]
        [--single-count 20] [--single-time 60] [--a "--point-selects 10"] [--b "--point-selects 11"]
        [--truth-time 60] [--duet-dsn DSN --width-count 5] [--out DIR] -- RUN OPTIONS

RUN OPTIONS are shared by every run (target, workload, sizes, threads; e.g. `-- --engine mysql --dsn
mysql://sbtest@127.0.0.1:13306/sbtest --workload oltp_read_only --tables 2 --table-size 10000 --threads 4`);
the tables must be prepared.  The true ratio is measured first by one long run of each side.  Prints a
line per comparison and the totals (with --rounds above 6, also what the same comparisons said
after their first 6, 12, ... rounds); writes DIR/accuracy.json.  --max-time S: each comparison runs
--until-confident within S seconds instead of a fixed number of rounds.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

NOISY = Path(__file__).resolve().parents[2] / "shared" / "tools" / "noisy-neighbour.sh"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchtop.ab import stats  # noqa: E402


def benchtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchtop", *args], capture_output=True, text=True)


def single_tps(run_opts: list[str], side: str, seconds: int) -> float:
    """One headless run of a side: its summary's TPS."""
    res = benchtop("--headless", "--json", *run_opts, *shlex.split(side), "--time", str(seconds))
    if res.returncode != 0:
        sys.exit(f"ab_accuracy: a run failed: {res.stderr.strip().splitlines()[-1:]}")
    summary = [json.loads(line) for line in res.stdout.splitlines() if '"summary"' in line][-1]
    return float(summary["tps"])


def compare(args: argparse.Namespace, run_opts: list[str], a: str, b: str, out: Path, *extra: str,
            round_time: float | None = None) -> dict:
    """One `benchtop ab`: its verdict and TPS ratio with the interval, and its wall time."""
    t0 = time.monotonic()
    count = (["--until-confident", "--max-time", f"{args.max_time:g}"] if args.max_time
             else ["--rounds", str(args.rounds)])
    res = benchtop("ab", "--headless", *run_opts, *count,
                   "--round-time", f"{round_time or args.round_time:g}", "--a", a, "--b", b, "--out", str(out), *extra)
    if res.returncode != 0:
        sys.exit(f"ab_accuracy: benchtop ab failed: {res.stderr.strip().splitlines()[-1:]}")
    ab = json.loads((out / "ab.json").read_text())["ab"]
    tps = ab["metrics"]["tps"]
    return {"verdict": ab["verdict"], "ratio": tps["ratio"], "ci_low": tps["ci_low"], "ci_high": tps["ci_high"],
            "confidence": ab["confidence"], "rounds": len(ab["rounds"]), "wall_s": round(time.monotonic() - t0, 1),
            "tps": [[r["a"]["tps"], r["b"]["tps"]] for r in ab["rounds"]]}


def fewer_rounds(results: list[dict], rounds: int) -> dict[int, collections.Counter[str]]:
    """The verdicts the same comparisons would have given after their first
    6, 12, 18 ... rounds (a fixed --rounds N, judged at 95%): how many
    rounds a difference of this size needs on this host."""
    return {n: collections.Counter(
        stats.compare([a for a, _ in r["tps"][:n]], [b for _, b in r["tps"][:n]], True, 0.02).verdict.value
        for r in results if len(r["tps"]) >= n) for n in range(6, rounds, 6)}


def interval(r: dict) -> str:
    """'0.9612 (0.9401 .. 0.9830, 95%, 6 rounds)', or no interval yet."""
    ci = (f"{r['ci_low']:.4f} .. {r['ci_high']:.4f}, " if r["ci_low"] is not None and r["ci_high"] is not None
          else "no interval, ")
    return f"{r['ratio']:.4f} ({ci}{100 * r['confidence']:.3g}%, {r['rounds']} rounds, {r['wall_s']:.0f} s)"


def widths(args: argparse.Namespace, run_opts: list[str]) -> dict[str, list[dict]]:
    """A/A comparisons with B on --duet-dsn, alternately as a duet (both at
    once, each round twice as long: the same wall time) and taking turns."""
    out: dict[str, list[dict]] = {"duet": [], "turns": []}
    other = f"--dsn {args.duet_dsn}"
    for i in range(args.width_count):
        for mode in ("duet", "turns") if i % 2 == 0 else ("turns", "duet"):
            extra = ("--duet",) if mode == "duet" else ()
            r = compare(args, run_opts, "", other, args.out / f"width-{mode}-{i:02d}", *extra,
                        round_time=2 * args.round_time if mode == "duet" else args.round_time)
            out[mode].append(r)
            print(f"width {i + 1:2d} {mode:5s}: {r['ratio']:.4f} ({r['ci_low']:.4f} .. {r['ci_high']:.4f}), "
                  f"width {r['ci_high'] - r['ci_low']:.4f}, {r['wall_s']:.0f} s", flush=True)
    return out


class Neighbour:
    """noisy-neighbour.sh (a CPU hog and a syncing writer) started after a random delay, for a random time."""

    def __init__(self, rng: random.Random, within_s: float) -> None:
        self.delay = rng.uniform(0.0, within_s / 2)
        self.length = int(rng.uniform(within_s / 4, within_s))
        self.proc: subprocess.Popen[bytes] | None = None
        self.t0 = time.monotonic()

    def poll(self) -> None:
        if self.proc is None and time.monotonic() - self.t0 >= self.delay:
            self.proc = subprocess.Popen(["bash", str(NOISY), str(self.length), "1", "1"], start_new_session=True,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.proc.wait(10)


def compare_beside(args: argparse.Namespace, run_opts: list[str], a: str, b: str, out: Path,
                   neighbour: Neighbour | None) -> dict:
    if neighbour is None:
        return compare(args, run_opts, a, b, out)
    # the comparison runs in a thread of its own so the neighbour can start mid-way
    box: dict[str, dict] = {}
    t = threading.Thread(target=lambda: box.setdefault("r", compare(args, run_opts, a, b, out)))
    t.start()
    try:
        while t.is_alive():
            neighbour.poll()
            t.join(0.2)
    finally:
        neighbour.stop()
    return box["r"]


def main() -> None:
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=20, help="A/A comparisons, and A/B comparisons (default 20 each)")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--max-time", type=float, help="each comparison --until-confident within this many seconds")
    p.add_argument("--round-time", type=int, default=3)
    p.add_argument("--single-time", type=int, default=60, help="seconds of each side's one run, the seeds' way")
    p.add_argument("--single-count", type=int, default=20, help="pairs of single runs, the seeds' way")
    p.add_argument("--truth-time", type=int, default=60, help="seconds of each side's long run for the true ratio")
    p.add_argument("--truth", type=float, help="the true ratio B/A as measured before on a quiet host (no long runs: "
                                               "on a busy one they can get even its sign wrong)")
    p.add_argument("--a", default="--point-selects 10")
    p.add_argument("--b", default="--point-selects 11")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", type=Path, default=Path("bench/results/ab_accuracy"))
    p.add_argument("--parts", default="aa,ab,single", help="which parts run: aa, ab, single, width (with --duet-dsn)")
    p.add_argument("--duet-dsn", help="a second target with the same tables: B's in the duet-against-turns widths")
    p.add_argument("--width-count", type=int, default=5, help="A/A comparisons of each mode for the widths")
    args = p.parse_args(argv[:cut])
    run_opts = argv[cut + 1:]
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    if "width" in parts:
        if not args.duet_dsn:
            sys.exit("ab_accuracy: the width part needs --duet-dsn, a second target with the same tables")
        found = widths(args, run_opts)
        med = {mode: statistics.median(r["ci_high"] - r["ci_low"] for r in rs) for mode, rs in found.items()}
        wall = {mode: statistics.median(r["wall_s"] for r in rs) for mode, rs in found.items()}
        (args.out / "widths.json").write_text(json.dumps({"median_width": med, "median_wall_s": wall,
                                                          "results": found}, indent=1) + "\n")
        print(f"A/A interval width, median of {args.width_count}: duet {med['duet']:.4f} ({wall['duet']:.0f} s), "
              f"taking turns {med['turns']:.4f} ({wall['turns']:.0f} s)")
    if not parts & {"aa", "ab", "single"}:
        return
    truth = args.truth or single_tps(run_opts, args.b, args.truth_time) / single_tps(run_opts, args.a, args.truth_time)
    want = "b_faster" if truth > 1 else "b_slower"
    wrong = "b_slower" if truth > 1 else "b_faster"
    how = "as given" if args.truth else f"{args.truth_time} s of each"
    print(f"true ratio B/A {truth:.4f} ({how}): want {want}", flush=True)
    noisy_at = set(rng.sample(range(args.count), args.count // 2))
    per_comparison_s = args.max_time or 2 * args.rounds * (args.round_time + 1)
    results: dict[str, list[dict]] = {"aa": [], "ab": [], "single": []}
    for i in range(args.count if "aa" in parts else 0):
        r = compare(args, run_opts, "", "", args.out / f"aa-{i:02d}")
        results["aa"].append(r)
        print(f"A/A {i + 1:2d}: {r['verdict']:14s} {interval(r)}", flush=True)
    for i in range(args.count if "ab" in parts else 0):
        neighbour = Neighbour(rng, per_comparison_s) if i in noisy_at else None
        r = compare_beside(args, run_opts, args.a, args.b, args.out / f"ab-{i:02d}", neighbour)
        r["noisy"] = neighbour is not None
        results["ab"].append(r)
        print(f"A/B {i + 1:2d}{' (noisy)' if r['noisy'] else '        '}: {r['verdict']:14s} {interval(r)}",
              flush=True)
    for i in range(args.single_count if "single" in parts else 0):
        first, second = (args.a, args.b) if i % 2 == 0 else (args.b, args.a)
        x, y = single_tps(run_opts, first, args.single_time), single_tps(run_opts, second, args.single_time)
        ratio = y / x if first == args.a else x / y
        results["single"].append({"ratio": ratio})
        print(f"single {i + 1:2d}: B/A {ratio:.4f}", flush=True)
    aa_ok = sum(r["verdict"] in ("no_difference", "undecided") for r in results["aa"])
    ab_ok = sum(r["verdict"] == want for r in results["ab"])
    ab_noisy_ok = sum(r["verdict"] == want for r in results["ab"] if r["noisy"])
    single_wrong = sum((r["ratio"] > 1) != (truth > 1) for r in results["single"])
    totals = {"truth_ratio": round(truth, 4), "aa_no_difference": aa_ok, "ab_right_and_excluding_1": ab_ok,
              "ab_right_beside_noise": ab_noisy_ok, "noisy_comparisons": len(noisy_at),
              "single_runs_wrong_sign": single_wrong, "count": args.count, "single_count": args.single_count, "rounds": args.rounds,
              "max_time_s": args.max_time,
              "round_time_s": args.round_time, "single_time_s": args.single_time}
    (args.out / "accuracy.json").write_text(json.dumps({"totals": totals, "results": results}, indent=1) + "\n")
    singles = (f"; one run of each ({args.single_time} s): wrong sign in {single_wrong} of {args.single_count}"
               if results["single"] else "")
    print(f"A/A: no difference in {aa_ok} of {args.count}; A/B: right sign, 1 excluded, in {ab_ok} of {args.count} "
          f"({ab_noisy_ok} of {len(noisy_at)} beside the noisy neighbour){singles}")
    if not args.max_time and args.rounds > 6:
        if results["aa"]:
            print("A/A after fewer rounds, claimed a difference: " + "; ".join(
                f"{n} rounds {c['b_faster'] + c['b_slower']} of {sum(c.values())}"
                for n, c in fewer_rounds(results["aa"], args.rounds).items()))
        if results["ab"]:
            print("A/B after fewer rounds, right sign with 1 excluded (wrong sign): " + "; ".join(
                f"{n} rounds {c[want]} of {sum(c.values())} ({c[wrong]})"
                for n, c in fewer_rounds(results["ab"], args.rounds).items()))


if __name__ == "__main__":
    main()
