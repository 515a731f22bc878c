#!/usr/bin/env python3
"""What a Prometheus scrape costs a run: the same 256-thread run with and
without a scraper reading `--metrics-listen` every second, alternating.

    python bench/metrics_overhead.py [--engine null] [--threads 256] [--time 20] [--pairs 3] [-- RUN OPTIONS]

Options after `--` go to both runs (e.g. `-- --engine mysql --dsn mysql://sbtest@127.0.0.1:13306/sbtest
--workload oltp_point_select`).  Prints each pair's TPS and the median ratio; the target is a scraped
run within 1% of the unscraped one.  The default null engine has no server, so the scrape's CPU shows
undiluted; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(args: argparse.Namespace, extra: list[str], scrape_every: float | None) -> tuple[float, list[float]]:
    """(tps, seconds each scrape took) of one run."""
    cmd = [sys.executable, "-m", "benchtop", "--headless", "--json", "--engine", args.engine,
           "--threads", str(args.threads), "--time", str(args.time), "--report-interval", "1", *extra]
    stop, scrapes = threading.Event(), []
    if scrape_every is not None:
        port = free_port()
        cmd += ["--metrics-listen", f"127.0.0.1:{port}", "--metrics-linger", "0"]

        def scraper() -> None:
            while not stop.wait(scrape_every):
                try:
                    t0 = time.perf_counter()
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                        r.read()
                    scrapes.append(time.perf_counter() - t0)
                except OSError:
                    pass  # not listening yet, or already gone
        threading.Thread(target=scraper, daemon=True).start()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    stop.set()
    summary = [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"summary"' in line][-1]
    return float(summary["tps"]), scrapes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="null")
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--time", type=float, default=20.0)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--scrape-every", type=float, default=1.0)
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    ratios, took = [], []
    for i in range(args.pairs):
        order = [None, args.scrape_every] if i % 2 == 0 else [args.scrape_every, None]
        got = {every: run(args, extra, every) for every in order}
        (plain, _), (scraped, each) = got[None], got[args.scrape_every]
        ratios.append(scraped / plain)
        took += each
        print(f"pair {i + 1}: without {plain:.1f} tps, scraped {len(each)} times {scraped:.1f} tps, "
              f"ratio {ratios[-1]:.4f}", flush=True)
    median = statistics.median(ratios)
    print(f"median scraped/plain TPS {median:.4f} ({(1 - median) * 100:+.2f}% cost); target: within 1% "
          f"-> {'meets' if median >= 0.99 else 'MISSES'}")
    # a bound that does not depend on the runs' spread: a scrape's whole wall time, client included,
    # is more than the CPU it takes from the run
    if took:
        per_s = statistics.median(took) / args.scrape_every
        print(f"a scrape took {statistics.median(took) * 1000:.2f} ms (median of {len(took)}): at most "
              f"{per_s * 100:.2f}% of one core at one scrape every {args.scrape_every:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
