"""The network named by the time outside the server: each query's latency
against the server's own statement time (its timers), less the client's CPU
and the workers' run-queue wait, at any latency and on a busy host."""

from __future__ import annotations

from dataclasses import replace

from benchtop.verdict import Signals, decide
from benchtop.verdict import rules
from benchtop.verdict.snapshots import from_snapshots

# issue 42: oltp_point_select at 8 threads through a loopback proxy adding 1 ms each way: 1,391 tps,
# 5.75 ms per transaction, server 0.09 cores, client 0.03; `unclear` in 23 of 23 intervals before
PROXY = Signals(seconds=1.0, threads=8, tps=1391.0, busy_workers=8.0, latency_ms=5.75, queries_per_txn=1.0,
                writes_per_txn=0.0, cpus=2, client_cpus=2, client_cores=0.03, server_cores=0.09,
                server_process="python3", host_busy_pct=55.0, run_queue=1, db_sessions=1.0, io_waiting=0.0,
                lock_waiting=0.0, server_ms_per_query=0.06, server_local=True)


def test_a_slow_link_is_network_with_its_figures():
    v = decide(PROXY)
    assert v.limit == "network"
    assert v.evidence.startswith("5.8 ms per transaction, server 0.06 ms of it (its statement timers), client CPU 0.02 ms")
    assert "5.67 of 5.75 ms per query outside the server and the client" in v.evidence


def test_a_slow_link_on_a_busy_host_is_still_network():
    busy = replace(PROXY, host_busy_pct=100.0, run_queue=9, neighbour_cores=1.3, neighbour_top="sh 1.30",
                   worker_cpu_wait=0.4, server_cpu_wait=0.1)
    assert decide(busy).limit == "network"
    # before: a saturated host was never the network's, and no link slower than 2 ms per query was
    assert rules.network_score(busy) == 0.0 and rules.network_score(replace(busy, host_busy_pct=50.0)) == 0.0


def test_time_inside_the_server_or_the_run_queue_is_not_the_network():
    assert decide(replace(PROXY, server_ms_per_query=5.0)).limit != "network"
    queued = replace(PROXY, worker_cpu_wait=6.5, neighbour_cores=1.8, neighbour_top="sh 1.80")
    assert rules.network_outside_score(queued) < rules.NETWORK_OUTSIDE_SHARE
    assert decide(queued).limit == "neighbours"


def test_without_statement_timers_the_rule_does_not_guess():
    assert rules.network_outside_score(replace(PROXY, server_ms_per_query=None)) is None


def test_the_servers_statement_time_comes_from_the_runs_database():
    class PG:
        kind, ok = "postgresql", True
        panels = {"sessions": {"active": 1}, "wait_events": [],
                  "top_statements": [{"db": "sbtest", "query": "SELECT c FROM sbtest1 WHERE id=$1",
                                      "calls_per_s": 1391.0, "total_ms_per_s": 83.5},
                                     {"db": "postgres", "query": "SELECT pg_sleep($1)", "calls_per_s": 1.0,
                                      "total_ms_per_s": 1000.0}]}

    assert from_snapshots([PG()], "sbtest")["server_ms_per_query"] == 0.06


def test_durable_commits_outside_the_statement_timers_are_not_the_network():
    # PostgreSQL's implicit commit syncs after the INSERT's timer stops; the wait event sample missed it
    durable = replace(PROXY, writes_per_txn=1.0, latency_ms=0.8, tps=2637.0, busy_workers=2.0, threads=2,
                      server_ms_per_query=0.05, syncs_per_commit=0.93)
    assert rules.network_outside_score(durable) is None
    assert decide(replace(durable, syncs_per_commit=0.02)).limit == "network"
