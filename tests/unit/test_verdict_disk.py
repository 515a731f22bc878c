"""The disk rule counts the server's own syncs (pg_stat_wal, InnoDB's log
fsyncs, the server's writes from /proc/PID/io); the host's device flushes
and writes are every process's and decide only when the server's own
counts are missing.  Signals from recorded intervals (verdict_signals.jsonl)
and the figures of issue 42's asynchronous-commit run beside a syncing
neighbour."""

from __future__ import annotations

from dataclasses import replace

from benchtop.verdict import Signals, decide
from benchtop.verdict import rules
from benchtop.verdict.snapshots import mysql_signals, postgres_signals
from tests.unit.test_verdict import stage

# PostgreSQL synchronous_commit=off, oltp_read_write, 4 threads, beside `dd oflag=dsync` (issue 42): the
# device flushed 2.5-12 times per transaction for the neighbour; pg_stat_wal counted 0.04 syncs per commit
ASYNC = Signals(seconds=1.0, threads=4, tps=420.0, busy_workers=3.9, latency_ms=9.3, queries_per_txn=18.0,
                writes_per_txn=4.0, cpus=2, client_cpus=2, client_cores=0.08, server_cores=0.6,
                server_process="postgres", host_busy_pct=100.0, iowait_pct=3.0, run_queue=9, disk="vda",
                disk_util_pct=42.0, flushes_per_s=1060.0, disk_writes_per_s=5014.0, flush_await_ms=0.9,
                db_sessions=4.0, io_waiting=0.0, lock_waiting=0.0, syncs_per_commit=0.04, server_local=True)


def test_asynchronous_commit_beside_a_syncing_neighbour_is_not_disk():
    assert rules.device_flushes_per_txn(ASYNC) > 2.5  # the neighbour's flushes, per this run's transaction
    v = decide(ASYNC)
    assert v.limit != "disk"
    assert rules.flushes_per_txn(ASYNC) == 0.04
    ev = rules.disk_evidence(ASYNC)
    assert "0.04 syncs per transaction (postgres's own)" in ev
    assert "host-wide (all processes): vda 42% busy" in ev and "device flushes per transaction" in ev


def test_the_same_run_with_every_commit_synced_is_disk_with_the_servers_own_count():
    durable = replace(ASYNC, syncs_per_commit=0.95)
    v = decide(durable)
    assert v.limit == "disk"
    assert "0.95 syncs per transaction (postgres's own)" in v.evidence
    assert "11.94 device flushes per transaction" in v.evidence  # context, labelled


def test_device_flushes_decide_only_when_the_servers_own_counts_are_missing():
    s = stage("PostgreSQL oltp_insert")[0]  # recorded before the server's syncs were read
    assert s.syncs_per_commit is None and s.server_syncs_per_s is None
    missing = replace(s, io_waiting=None)
    assert decide(missing).limit == "disk"
    assert "device flushes per transaction (all processes: the server's own syncs not read)" in decide(missing).evidence
    # the server's own count, when read, decides instead of the device's
    assert decide(replace(missing, syncs_per_commit=0.02)).limit != "disk"
    # a local server that wrote nothing did not cause the device's flushes
    assert rules.flushes_per_txn(replace(missing, server_write_bytes_per_s=0.0)) == 0.0


def test_disk_utilisation_of_the_host_decides_only_without_the_servers_account():
    busy_disk = replace(ASYNC, disk_util_pct=99.0)
    assert decide(busy_disk).limit != "disk"  # the server said none of its sessions waited on I/O
    blind = replace(busy_disk, io_waiting=None, syncs_per_commit=None)
    assert rules.disk_score(blind) >= rules.IO_WAITING_SHARE


def test_innodb_log_fsyncs_per_transaction_are_the_servers_own():
    s = stage("MariaDB oltp_insert")[0]
    # one fsync per write in the server's own poll (436 writes/s there while the run's interval counted 276 tps:
    # the two windows need not cover the same second)
    own = replace(s, server_syncs_per_s=s.locking_statements_per_s, flushes_per_s=s.tps * 4,
                  disk_writes_per_s=s.tps * 9)
    assert abs(rules.server_syncs_per_txn(own) - 1.0) < 1e-9
    assert abs(rules.server_syncs_per_txn(replace(own, locking_statements_per_s=None)) - 436.39 / s.tps) < 1e-9
    assert decide(own).limit == "disk" and "1.00 syncs per transaction (mariadbd's own)" in decide(own).evidence
    # innodb_flush_log_at_trx_commit=2: a sync a second, whatever the device does for others
    lazy = replace(own, server_syncs_per_s=1.0)
    assert decide(lazy).limit != "disk"


def test_snapshots_carry_the_servers_own_syncs():
    class PG:
        kind, ok = "postgresql", True
        panels = {"sessions": {"active": 4, "idle": 1}, "wait_events": [],
                  "wal": {"wal_sync_per_s": 17.5}, "database": {"commits_per_s": 437.5}}

    class My:
        kind, ok = "mysql", True
        panels = {"innodb": {"row_lock_waiting": 0.0, "log_fsyncs_per_s": 512.0}, "waits": [],
                  "threads": {"running": 3}}

    assert postgres_signals(PG())["syncs_per_commit"] == 0.04
    assert mysql_signals(My())["server_syncs_per_s"] == 512.0
