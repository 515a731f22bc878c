"""CPU against what a process may use: the server's and benchtop's CPU
affinity and cgroup quota (cpu.max), not the host's cores."""

from __future__ import annotations

import os
from dataclasses import replace

from benchtop.sources.proc_scan import allowed_cpus, cgroup_quota
from benchtop.verdict import Signals, decide

# mariadbd pinned to one CPU of two (issue 42: `mariadbd 0.39 of 2 cores` for a server allowed one)
PINNED = Signals(seconds=1.0, threads=8, tps=9000.0, busy_workers=7.8, latency_ms=0.87, queries_per_txn=1.0,
                 writes_per_txn=0.0, cpus=2, client_cpus=2, client_cores=0.35, server_cores=0.93,
                 server_process="mariadbd", server_cpus=1.0, host_busy_pct=70.0, run_queue=2, neighbour_cores=0.05,
                 worker_cpu_wait=0.1, server_cpu_wait=0.4, db_sessions=6.0, io_waiting=0.0, lock_waiting=0.0,
                 server_local=True)


def test_a_pinned_server_is_measured_against_the_cpu_it_may_use():
    v = decide(PINNED)
    assert v.limit == "server_cpu"
    assert v.evidence.startswith("mariadbd 0.93 of 1 core it may use (host 2)")
    # the same cores counted against the host's two: not the limit
    assert decide(replace(PINNED, server_cpus=None)).limit != "server_cpu"


def test_a_client_under_a_cgroup_quota_is_measured_against_its_quota():
    s = replace(PINNED, server_cpus=None, server_cores=0.3, client_cores=0.46, client_cpus=0.5)
    v = decide(s)
    assert v.limit == "client_cpu" and "benchtop 0.46 of the 0.5 cores it can use" in v.evidence


def test_cgroup_quota_is_the_smallest_on_the_way_to_the_root(tmp_path):
    proc, root = tmp_path / "proc", tmp_path / "cg"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "cgroup").write_text("0::/box/db\n")
    (root / "box" / "db").mkdir(parents=True)
    (root / "cpu.max").write_text("max 100000\n")
    (root / "box" / "cpu.max").write_text("150000 100000\n")
    (root / "box" / "db" / "cpu.max").write_text("max 100000\n")
    assert cgroup_quota(42, str(proc), str(root)) == 1.5
    (root / "box" / "db" / "cpu.max").write_text("50000 100000\n")
    assert cgroup_quota(42, str(proc), str(root)) == 0.5
    (proc / "42" / "cgroup").write_text("12:cpu:/legacy\n")  # cgroup v1: no cpu.max to read
    assert cgroup_quota(42, str(proc), str(root)) is None


def test_this_process_may_use_its_affinity():
    assert allowed_cpus() <= len(os.sched_getaffinity(0))
    assert allowed_cpus(os.getpid()) == allowed_cpus()
