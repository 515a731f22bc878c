#!/usr/bin/env python3
"""Cluster-run speed targets (issue 16), measured on a local multi-node Ray
cluster on loopback, not asserted by tests:

    python bench/cluster_speed.py                 # 64 load hosts over 4 local nodes, then 1 vs 2 nodes
    python bench/cluster_speed.py --hosts 16 --intervals 10 --presses 100 --scaling-time 5   # quicker

Prints
  1. gather + merge per interval with N load-host actors (several per node):
     the controller's whole reading (ClusterController.sample(): parallel
     gather, per-host deltas and rows, exact merge, the merged interval),
     median and p99, and the gather alone; bytes of one host's reading;
  2. a key press (threads, then rate) applied on every host: time until
     every host acknowledged, p50 and p99;
  3. aggregate null-engine rate, two nodes with one worker each / one node
     with one worker (alternating runs).

Needs the cluster extra (pip install -e '.[cluster]').  Every node of a local
cluster shares this machine's cores: on a machine with fewer cores than
nodes x workers figure 3 measures the machine, not the scaling.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only (read when Ray is imported)

from benchtop.options.run_options import options_from_argv  # noqa: E402
from benchtop.session import RunSession  # noqa: E402


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def session(address: str, *args: str) -> RunSession:
    opts = options_from_argv("run", ["--cluster", address, "--engine", "null", "--workload", "oltp_point_select",
                                     "--time", "0", "--no-monitor", *args])
    return RunSession(opts, monitor=False, instrumentation=False, progress=None)


def gather_and_knobs(address: str, hosts: int, intervals: int, presses: int) -> None:
    # a low rate per host keeps 64 engines from starving a small machine while
    # every reading still carries a histogram of a few hundred buckets
    with session(address, "--load-hosts", str(hosts), "--threads", str(hosts), "--rate", str(hosts * 50),
                 "--arrival", "poisson") as s:
        t = time.perf_counter()
        ctl = s.controller()
        print(f"{hosts} load hosts placed and ready in {time.perf_counter() - t:.1f} s "
              f"on {len({h.node_id for h in ctl.group.hosts})} nodes")
        ctl.start()
        time.sleep(1.0)
        ctl.sample()
        whole, gather, cpu = [], [], []
        tick = time.monotonic()
        for _ in range(intervals):
            # on the report interval's beat, as the headless loop and the TUI sample
            tick += ctl.report_interval
            time.sleep(max(0.0, tick - time.monotonic()))
            t, c = time.perf_counter(), time.process_time()
            smp = ctl.sample()
            whole.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            gather.append(ctl.group.gather_s)
            assert smp.interval.transactions == sum(r.transactions for r in smp.hosts)
        reporting = smp.fields["hosts_reporting"]
        reading = ctl.group.hosts[0].reading
        size = len(pickle.dumps(reading, protocol=5))
        print(f"1. gather + merge, {hosts} hosts: median {statistics.median(whole) * 1e3:.1f} ms, "
              f"p99 {pct(whole, 99) * 1e3:.1f} ms (gather alone: median {statistics.median(gather) * 1e3:.1f} ms; "
              f"controller CPU median {statistics.median(cpu) * 1e3:.1f} ms); "
              f"{reporting}/{hosts} reporting; one host's reading {size} bytes")
        for name, knob in (("threads", lambda i: ctl.set_threads(hosts + (i % 2))),
                           ("rate", lambda i: ctl.set_rate(hosts * (50 + 10 * (i % 2))))):
            times = []
            for i in range(presses):
                t = time.perf_counter()
                knob(i)
                times.append(time.perf_counter() - t)
            print(f"2. key press ({name}) applied on all {hosts} hosts: p50 {statistics.median(times) * 1e3:.1f} ms, "
                  f"p99 {pct(times, 99) * 1e3:.1f} ms over {presses}")
        ctl.stop("bench")


def aggregate(address: str, seconds: float, rounds: int) -> None:
    tps: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for hosts in (1, 2):
            with session(address, "--load-hosts", str(hosts), "--threads", str(hosts)) as s:
                ctl = s.controller()
                ctl.start()
                time.sleep(1.0)
                ctl.sample()  # the base: engines started, connections made
                first = ctl._last
                time.sleep(seconds)
                ctl.sample()
                last = ctl._last
                assert first is not None and last is not None
                tps[hosts].append((last.transactions - first.transactions) / (last.t - first.t))
                ctl.stop("bench")
    print("   rounds:", [f"{a / 1e6:.2f}M/{b / 1e6:.2f}M" for a, b in zip(tps[1], tps[2])])
    one, two = statistics.median(tps[1]), statistics.median(tps[2])
    print(f"3. null engine, one worker per node: 1 node {one:,.0f} tx/s, 2 nodes {two:,.0f} tx/s "
          f"= {two / one:.2f}x ({os.cpu_count()} cores on this machine)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--intervals", type=int, default=30)
    ap.add_argument("--presses", type=int, default=200)
    ap.add_argument("--scaling-time", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    if args.hosts:
        with local_cluster(args.nodes) as address:
            gather_and_knobs(address, args.hosts, args.intervals, args.presses)
    if args.scaling_time > 0:
        # two nodes, as the target reads: idle extra nodes' Ray services would take CPU from the workers
        with local_cluster(2) as address:
            aggregate(address, args.scaling_time, args.rounds)


@contextmanager
def local_cluster(nodes: int) -> Iterator[str]:
    """A local Ray cluster of `nodes` nodes on loopback (the head first),
    without the dashboard (a web UI that would share the cores)."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()

if __name__ == "__main__":
    main()
