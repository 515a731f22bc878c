"""Other processes as the limit: the run's wait for a CPU (schedstat) in the
share the host's other processes hold the CPUs, and that wait taken out of
the workers' time off the CPUs before the lock and disk rules attribute it.
Signals from the recorded intervals and issue 42's busy-host runs."""

from __future__ import annotations

from dataclasses import replace

from benchtop.verdict import Signals, decide
from benchtop.verdict import rules
from tests.unit.test_verdict import stage

# MariaDB point selects from 2 threads beside two `sh` CPU hogs and a `dd` (issue 42's staging 5)
LIGHT = Signals(seconds=1.0, threads=2, tps=1900.0, busy_workers=1.95, latency_ms=1.03, queries_per_txn=1.0,
                writes_per_txn=0.0, cpus=2, client_cpus=2, client_cores=0.06, server_cores=0.16,
                server_process="mariadbd", host_busy_pct=100.0, run_queue=5, neighbour_cores=1.74,
                neighbour_top="sh 1.71, dd 0.03", worker_cpu_wait=0.35, server_cpu_wait=0.55, db_sessions=1.0,
                io_waiting=0.0, lock_waiting=0.0, server_local=True)

# MariaDB updates of 10 hot rows from 32 threads on a saturated host: ~5% of sessions in lock waits, the
# server got 0.6 cores, run queue 34; most of the workers' time off the CPUs was the run queue
HOT_ROWS = Signals(seconds=1.0, threads=32, tps=700.0, busy_workers=31.5, latency_ms=45.0, queries_per_txn=1.0,
                   writes_per_txn=1.0, cpus=2, client_cpus=2, client_cores=0.1, server_cores=0.6,
                   server_process="mariadbd", host_busy_pct=100.0, run_queue=34, neighbour_cores=1.3,
                   neighbour_top="sh 0.98, dd 0.31", worker_cpu_wait=6.0, server_cpu_wait=16.0, db_sessions=30.0,
                   lock_waiting=1.6, lock_waits_per_s=180.0, locking_statements_per_s=700.0, io_waiting=0.0,
                   server_local=True)


def test_cpu_hogs_beside_a_light_load_are_the_limit():
    v = decide(LIGHT)
    assert v.limit == "neighbours"
    assert v.evidence.startswith("1.7 of 2 cores busy outside this run (sh 1.71, dd 0.03)")
    assert "workers waited 46% of their time for a CPU" in v.evidence
    assert v.text().startswith("bound by other processes: ")
    # the same load without the hogs: nothing queues, nobody else is busy
    quiet = replace(LIGHT, neighbour_cores=0.02, neighbour_top=None, worker_cpu_wait=0.01, server_cpu_wait=0.02,
                    host_busy_pct=12.0, run_queue=1)
    assert decide(quiet).limit != "neighbours"


def test_a_server_busy_on_its_own_queue_is_server_cpu_not_neighbours():
    s = replace(stage("quiet host: PostgreSQL oltp_point_select, 8 threads")[0], neighbour_cores=0.05,
                worker_cpu_wait=2.0, server_cpu_wait=3.0)
    assert rules.neighbours_score(s) < 0.05
    assert decide(s).limit == "server_cpu"


def test_a_saturated_host_is_not_the_servers_when_others_take_more_cores():
    s = stage("PostgreSQL oltp_point_select, 1 thread, on a host other processes keep saturated")[0]
    assert decide(s).limit == "server_cpu"  # recorded without the /proc pass: the old reading stands
    read = replace(s, neighbour_cores=1.4, neighbour_top="sh 1.40", worker_cpu_wait=0.3, server_cpu_wait=0.2)
    v = decide(read)
    assert v.limit == "neighbours" and "sh 1.40" in v.evidence


def test_run_queue_wait_is_not_read_as_lock_waits():
    old = replace(HOT_ROWS, worker_cpu_wait=None, server_cpu_wait=None, neighbour_cores=None)
    assert decide(old).limit == "locks"  # issue 42: locks at 0.95 while 5% of sessions waited on locks
    assert rules.off_cpu_share(old) > 0.95
    assert rules.off_cpu_share(HOT_ROWS) < 0.3  # the run queue taken out
    v = decide(HOT_ROWS)
    assert v.limit == "neighbours" and "cores busy outside this run (sh 0.98, dd 0.31)" in v.evidence


def test_run_queue_wait_is_not_read_as_syncs():
    s = replace(stage("PostgreSQL oltp_update_non_index")[0], lock_waiting=0.0, top_lock_wait=None)
    assert decide(s).limit == "disk"  # the syncs of every commit, as recorded
    queued = replace(s, worker_cpu_wait=0.2 * s.busy_workers, server_cpu_wait=0.75 * s.busy_workers,
                     neighbour_cores=0.1)
    assert rules.off_cpu_share(queued) < 0.1
    assert decide(queued).limit != "disk"


def test_a_client_pinned_to_one_cpu_queues_behind_itself_not_the_neighbours():
    # the costly client loop on `taskset -c 0`, 2 workers, beside other engineers' test runs (0.9 cores)
    s = Signals(seconds=1.0, threads=2, tps=520.0, busy_workers=1.98, latency_ms=3.8, queries_per_txn=1.0,
                writes_per_txn=0.0, cpus=2, client_cpus=1, client_cores=0.86, server_cores=0.05,
                server_process="postgres", host_busy_pct=99.0, run_queue=6, neighbour_cores=0.9,
                neighbour_top="pytest 0.45, python3 0.44", worker_cpu_wait=1.1, server_cpu_wait=0.07,
                db_sessions=1.0, io_waiting=0.0, lock_waiting=0.0, server_local=True)
    v = decide(s)
    assert v.limit == "client_cpu", v.text()
    assert rules.neighbours_score(s) < 0.05


def test_durable_commits_beside_neighbours_are_disk_with_the_neighbours_next():
    # PostgreSQL oltp_insert, 2 threads, synchronous_commit=on, beside a CPU hog, a dd oflag=dsync writer and
    # other engineers' test suites: both sessions sampled in IO:WALSync, the device flushing in 0.06 ms,
    # pg_stat_wal 0.90 syncs per commit, the workers queued for a CPU most of their time
    crowded = Signals(seconds=1.0, threads=2, tps=367.0, busy_workers=1.99, latency_ms=5.48, queries_per_txn=1.0,
                      writes_per_txn=1.0, cpus=2, client_cpus=2, client_cores=0.04, server_cores=0.10,
                      server_process="postgres", host_busy_pct=100.0, run_queue=7, disk="vda", disk_util_pct=20.0,
                      flushes_per_s=1786.0, flush_await_ms=0.06, neighbour_cores=1.6, neighbour_top="pytest 0.9, sh 0.6",
                      worker_cpu_wait=0.45, server_cpu_wait=0.8, db_sessions=2.0, io_waiting=2.0, lock_waiting=0.0,
                      top_io_wait="IO:WALSync", syncs_per_commit=0.9, server_local=True)
    assert rules.waits_beyond_run_queue(crowded) == 0.6
    # every commit still syncs by the server's own count: the limit that holds on a quiet host, the neighbours next
    v = decide(crowded)
    assert (v.limit, v.next) == ("disk", "neighbours"), v.text()
    assert "workers waited 63% of their time for a CPU" in v.text()
    assert any("other processes held the run back too" in w for w in v.lowered_by)
    quiet = replace(crowded, neighbour_cores=0.05, neighbour_top=None, worker_cpu_wait=0.01, server_cpu_wait=0.02,
                    host_busy_pct=15.0, run_queue=1, latency_ms=1.4, tps=1420.0)
    v = decide(quiet)
    assert v.limit == "disk" and "0.90 syncs per transaction (postgres's own)" in v.evidence


def test_a_run_that_takes_most_of_the_busy_cpu_queues_behind_itself():
    # PostgreSQL point selects from 8 threads (the server_cpu staging) beside 0.7 cores of other test suites
    s = Signals(seconds=1.0, threads=8, tps=9100.0, busy_workers=7.9, latency_ms=0.87, queries_per_txn=1.0,
                writes_per_txn=0.0, cpus=2, client_cpus=2, client_cores=0.35, server_cores=0.88,
                server_process="postgres", host_busy_pct=97.0, run_queue=9, neighbour_cores=0.7,
                neighbour_top="python3 0.38, mariadbd 0.33", worker_cpu_wait=2.6, server_cpu_wait=4.4,
                db_sessions=8.0, io_waiting=0.0, lock_waiting=0.0, server_local=True)
    assert rules.neighbours_score(s) == 0.0
    assert decide(s).limit == "server_cpu"


def test_a_light_run_beside_two_hogs_is_the_neighbours_though_it_takes_most_of_the_busy_cpu():
    # the busy-host check's step 5 (2 MariaDB point-select workers beside two `sh` hogs on 2 CPUs), its first
    # interval: the hogs got 0.76 cores against the run's 1.24, a share under NEIGHBOUR_MAIN_SHARE; with 2
    # transactions in flight on 2 CPUs the run alone would not queue, so its wait is the hogs'
    s = replace(LIGHT, tps=28800.0, latency_ms=0.069, client_cores=0.45, server_cores=0.79, run_queue=4,
                neighbour_cores=0.76, neighbour_top="sh 0.74", worker_cpu_wait=0.5, server_cpu_wait=0.68)
    assert rules.neighbour_share(s) < rules.NEIGHBOUR_MAIN_SHARE
    v = decide(s)
    assert v.limit == "neighbours", v.text()
    # more workers than the server's CPUs: the same share is the run queueing behind itself
    assert rules.neighbours_score(replace(s, threads=8, busy_workers=7.9)) == 0.0


# pgbench's select-only from 256 connections on 4 event loops, the server on the same 2 CPUs (the floor check's
# row): the loops queued for a CPU 3.7 of 4 on average and the backends ran ~6 ms a second each
MANY_ON_LOOPS = Signals(seconds=1.0, threads=256, loop_threads=4, tps=38074.0, busy_workers=256.0, latency_ms=6.72,
                        queries_per_txn=1.0, writes_per_txn=0.0, cpus=2, client_cpus=2, client_cores=0.407,
                        server_cores=1.461, server_process="postgres", server_cpus=2.0, host_busy_pct=99.0,
                        iowait_pct=0.0, run_queue=6, neighbour_cores=0.033, worker_cpu_wait=3.748,
                        server_cpu_wait=19.757, db_sessions=1.0, io_waiting=0.0, lock_waiting=0.0,
                        top_statement="SELECT abalance FROM pgbench_accounts WHERE aid = $1",
                        top_statement_ms_per_s=465.9, top_statement_share=1.0, server_ms_per_query=0.012,
                        server_local=True)


def test_an_event_loop_queued_for_a_cpu_holds_every_connection_it_carries():
    assert rules.cpu_wait_share(MANY_ON_LOOPS) > 0.9
    v = decide(MANY_ON_LOOPS)
    assert v.limit == "server_cpu", v.text()
    # read as 3.7 workers of 256 queued, the run queue's time looked like the wire's
    assert decide(replace(MANY_ON_LOOPS, loop_threads=0)).limit == "network"
