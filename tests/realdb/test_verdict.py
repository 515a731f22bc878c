"""The verdict under staged limits on the harness's private servers: each
run stages one limit (durable single-row inserts, one hot set of rows,
point selects from many threads, a PgBouncer pool of one connection, an
open loop far below capacity, a costly client pinned to one CPU) and the
JSON interval lines must name it in most intervals after the first two
(the monitor's first poll has no rates).  Runs are a few seconds each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from benchtop.sources.sync_probe import timed_sync_ms
from tests.fixtures.servers import mysql_admin_exec, pg_admin_exec, retry

pytestmark = [pytest.mark.realdb, pytest.mark.alone]

ROOT = Path(__file__).parents[2]
SIZE = ["--tables", "1", "--table-size", "2000"]
SECONDS = "5"  # three intervals judged after the first two
SLOW_SYNC_MS = 0.1  # a third of a one-row durable insert over loopback (about 0.3 ms): the sync binds it
MOST = 0.6  # of the intervals after the first two (the check asks 80% of fifteen on the shared servers)

BUSY_CLIENT = """
name = "client_busy"
description = "a costly client-side loop around a statement the server answers at once"
[[transaction]]
name = "busy"
script = '''
loop 20000
set x = (x + rand(1, 100) * 7) % 1013
end
exec read: SELECT 1
'''
"""


def dsn(server, database: str | None = None) -> str:
    scheme = "mysql" if server.kind == "mysql" else "postgresql"
    return f"{scheme}://{server.user}@{server.host}:{server.port}/{database or server.database}"


def run(server, *args: str, pin_cpu: int | None = None, target=None,
        seconds: str = SECONDS) -> tuple[list[str], dict, str]:
    """A headless JSON run against `server` (or the `target` DSN through it);
    the limits its counted intervals named after the first two, its summary and stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MYSQL_PWD=server.password or "", PGPASSWORD=server.password or "")
    engine = "mysql" if server.kind == "mysql" else "postgres"
    argv = [sys.executable, "-m", "benchtop", "--headless", "--json", "--time", seconds, "--monitor-interval", "1",
            "--engine", engine, "--dsn", target or dsn(server), *args]
    pin = (lambda: os.sched_setaffinity(0, {pin_cpu})) if pin_cpu is not None else None
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT),
                         stdin=subprocess.DEVNULL, preexec_fn=pin)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    intervals = [d for d in lines if d.get("type") == "interval"]
    summary = next(d for d in lines if d.get("type") == "summary")
    return [d["verdict"]["limit"] for d in intervals[2:]], summary, res.stderr


def run_verdicts(server, *args: str, target=None, seconds: str = SECONDS) -> list[dict]:
    """The verdict objects of a run's intervals after the first two."""
    return [d["verdict"] for d in run_intervals(server, *args, target=target, seconds=seconds)]


def run_intervals(server, *args: str, target=None, seconds: str = SECONDS, skip: int = 2) -> list[dict]:
    """A run's interval lines after the first `skip`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PGPASSWORD=server.password or "")
    argv = [sys.executable, "-m", "benchtop", "--headless", "--json", "--time", seconds, "--monitor-interval", "1",
            "--engine", "postgres", "--dsn", target or dsn(server), *args]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT),
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    return [d for d in lines if d.get("type") == "interval"][skip:]


@contextmanager
def noisy_neighbour(folder: Path, hogs: int = 1, writers: int = 1) -> Iterator[None]:
    """CPU hogs and a writer that syncs every 64 KiB (dd oflag=dsync), at normal
    priority, as ../shared/tools/noisy-neighbour.sh runs them; ended with the block."""
    loop = "while :; do :; done"
    write = f"while :; do dd if=/dev/zero of='{folder}/noisy' bs=64k count=16 oflag=dsync conv=notrunc 2>/dev/null; done"
    procs = [subprocess.Popen(["sh", "-c", cmd], start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for cmd in [loop] * hogs + [write] * writers]
    try:
        yield
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


CROWDED_CORES = 0.5  # other processes' cores that make a staging's own limit no longer the run's


def skip_when_crowded(limits: list[str], want: str, others: float, evidence: str | None) -> None:
    """On a shared host (the developers' 2-core machine runs several test suites at once) the staged
    limit is not this run's while other processes hold the CPUs it queues for: the verdict says so."""
    if want != "neighbours" and limits.count("neighbours") > len(limits) / 2 and others >= CROWDED_CORES:
        pytest.skip(f"other processes took {others:.1f} cores: {evidence}")


def assert_named(limits: list[str], want: str, summary: dict) -> None:
    got = Counter(limits)
    steady = summary["steady_state"].get("verdict") or {}
    skip_when_crowded(limits, want, (steady.get("figures") or {}).get("neighbour_cores") or 0.0, steady.get("evidence"))
    assert limits and got[want] >= MOST * len(limits), f"{want}: {dict(got)} {summary['steady_state'].get('verdict')}"
    assert steady["limit"] == want and steady["evidence"], steady


@pytest.fixture(scope="module")
def mysql_tables(mysql_server):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MYSQL_PWD=mysql_server.password or "")
    subprocess.run([sys.executable, "-m", "benchtop", "prepare", "--engine", "mysql", "--dsn", dsn(mysql_server), *SIZE],
                   capture_output=True, env=env, cwd=str(ROOT), timeout=120, check=False)
    return mysql_server


@pytest.fixture(scope="module")
def pg_tables(pg_server):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PGPASSWORD=pg_server.password or "")
    subprocess.run([sys.executable, "-m", "benchtop", "prepare", "--engine", "postgres", "--dsn", dsn(pg_server), *SIZE],
                   capture_output=True, env=env, cwd=str(ROOT), timeout=120, check=False)
    return pg_server


def test_durable_single_row_inserts_are_bound_by_the_disk(mysql_tables):
    folder = getattr(mysql_tables, "datadir", None)
    # timed as the verdict times it: an overwrite and fdatasync beside the data, less the probe's CPU queueing
    sync_ms = timed_sync_ms(Path(folder), 32) if folder else None
    if sync_ms is not None and sync_ms < SLOW_SYNC_MS:
        # a durable commit waits for its sync; on a disk that syncs in tens of
        # microseconds (a virtual disk with a write cache) the round trip is the
        # larger wait, and the verdict rightly says so
        pytest.skip(f"this disk syncs in {sync_ms:.3f} ms: durable commits are not disk-bound here")
    before = mysql_admin_exec(mysql_tables, "SELECT @@innodb_flush_log_at_trx_commit")[0][0]
    mysql_admin_exec(mysql_tables, "SET GLOBAL innodb_flush_log_at_trx_commit = 1")
    try:
        limits, summary, _ = run(mysql_tables, *SIZE, "--workload", "oltp_insert", "--threads", "1")
    finally:
        mysql_admin_exec(mysql_tables, f"SET GLOBAL innodb_flush_log_at_trx_commit = {int(before)}")
    assert_named(limits, "disk", summary)
    assert "syncs per transaction" in summary["steady_state"]["verdict"]["evidence"]
    assert summary["steady_state"]["verdict"]["figures"]["sync_ms"] > 0


def test_one_hot_set_of_rows_is_bound_by_lock_waits(mysql_tables):
    before = mysql_admin_exec(mysql_tables, "SELECT @@innodb_flush_log_at_trx_commit")[0][0]
    mysql_admin_exec(mysql_tables, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
    try:  # ten rows of the table, sixteen writers
        limits, summary, _ = run(mysql_tables, "--tables", "1", "--table-size", "10", "--workload",
                                 "oltp_update_non_index", "--threads", "16")
    finally:
        mysql_admin_exec(mysql_tables, f"SET GLOBAL innodb_flush_log_at_trx_commit = {int(before)}")
    assert_named(limits, "locks", summary)
    assert "row lock waits per write" in summary["steady_state"]["verdict"]["evidence"]


def test_one_hot_set_of_rows_on_postgresql_is_bound_by_lock_waits_or_the_syncs_they_wait_behind(pg_tables):
    # both limits are real here (sixteen writers on ten rows, each holding its row through its commit's sync):
    # which leads depends on the disk (locks on one that syncs in a quarter of a millisecond, the syncs on CI's
    # slower one), so every interval names one of the two and the lock queue is named, first or next
    verdicts = run_verdicts(pg_tables, "--tables", "1", "--table-size", "10", "--workload",
                            "oltp_update_non_index", "--threads", "16", seconds="6")
    got = Counter(v["limit"] for v in verdicts)
    assert verdicts and got["locks"] + got["disk"] == len(verdicts), dict(got)
    assert any("locks" in (v["limit"], (v.get("next") or {}).get("limit")) for v in verdicts), verdicts


def test_point_selects_from_many_threads_are_bound_by_the_server_cpu(pg_tables):
    limits, summary, _ = run(pg_tables, *SIZE, "--workload", "oltp_point_select", "--threads", "8")
    assert_named(limits, "server_cpu", summary)
    assert "postgres" in summary["steady_state"]["verdict"]["evidence"]


def test_many_connections_on_two_event_loops_are_bound_by_the_server_cpu_to_the_last_interval(pg_tables):
    # 64 connections on 2 loops: a loop queued for a CPU holds its 32 connections, and 64 backends each on a
    # CPU a few ms a second still queue; both read as nothing, the run queue's time looked like the wire's.
    # The last interval, read after the stop, had lost both (the loops' threads and the backends were gone)
    # and took the backends' exit as a burst of server CPU; the first had no pass over /proc to count from
    intervals = run_intervals(pg_tables, *SIZE, "--workload", "oltp_point_select", "--connections", "64",
                              "--threads", "2", "--worker-priority", "normal", seconds="4.5", skip=0)
    verdicts = [d["verdict"] for d in intervals]
    limits = [v["limit"] for v in verdicts[2:]]
    skip_when_crowded(limits, "server_cpu", max(v["figures"].get("neighbour_cores") or 0.0 for v in verdicts),
                      verdicts[-1]["evidence"])
    assert limits.count("server_cpu") >= MOST * len(limits), limits
    # the first and the last too: waits read from the start's pass and before the stop, no exit burst
    figures = [v["figures"] for v in verdicts]
    assert all((f.get("cpu_wait_share") or 0.0) >= 0.5 for f in figures), figures
    assert all(f["server_cores"] <= (os.cpu_count() or 1) for f in figures), figures


@contextmanager
def pool_of_one(pg_tables, pgbouncer_server) -> Iterator[str]:
    """A PgBouncer database `sbtest_pool1` with a pool of one server connection (its DSN), removed after."""
    if pgbouncer_server.process is None:
        pytest.skip("needs the harness's own PgBouncer (its pgbouncer.ini gets a pool of one)")
    ini = pgbouncer_server.process.ini
    original = ini.read_text()
    line = f"sbtest_pool1 = host={pg_tables.host} port={pg_tables.port} dbname={pg_tables.database} pool_size=1"
    ini.write_text(original.replace("[databases]\n", f"[databases]\n{line}\n", 1))
    pg_admin_exec(pgbouncer_server, "RELOAD")
    try:
        yield dsn(pgbouncer_server, "sbtest_pool1")
    finally:
        ini.write_text(original)
        pg_admin_exec(pgbouncer_server, "RELOAD")


def test_a_pool_of_one_connection_is_bound_by_the_pool_queue(pg_tables, pgbouncer_server):
    admin = f"pgbouncer://{pgbouncer_server.user}@{pgbouncer_server.host}:{pgbouncer_server.port}/pgbouncer"
    with pool_of_one(pg_tables, pgbouncer_server) as target:
        limits, summary, _ = run(pgbouncer_server, *SIZE, "--workload", "oltp_point_select", "--threads", "16",
                                 "--pgbouncer", admin, target=target)
    assert_named(limits, "pool", summary)
    assert "waiting for a server connection" in summary["steady_state"]["verdict"]["evidence"]


def test_a_pool_reached_without_pgbouncer_option_is_read_through_the_same_address(pg_tables, pgbouncer_server):
    """issue 42: benchtop printed "PgBouncer in transaction pooling" and said `unclear`, the pool unread."""
    with pool_of_one(pg_tables, pgbouncer_server) as target:
        limits, summary, _ = run(pgbouncer_server, *SIZE, "--workload", "oltp_point_select", "--threads", "16",
                                 target=target)
    assert_named(limits, "pool", summary)
    assert "PgBouncer: " in summary["steady_state"]["verdict"]["evidence"]


def test_an_open_loop_far_below_capacity_is_bound_by_its_rate(pg_tables):
    limits, summary, _ = run(pg_tables, *SIZE, "--workload", "oltp_point_select", "--threads", "4", "--rate", "50")
    assert_named(limits, "rate", summary)


def test_a_costly_client_on_one_cpu_is_bound_by_the_client_cpu(pg_tables, tmp_path):
    workload = tmp_path / "client_busy.toml"
    workload.write_text(BUSY_CLIENT)
    limits, summary, _ = run(pg_tables, "--workload", str(workload), "--threads", "2", "--worker-priority", "normal",
                             pin_cpu=0)
    assert_named(limits, "client_cpu", summary)
    assert "of the 1 core it can use" in summary["steady_state"]["verdict"]["evidence"]


def test_mariadb_prepared_statements_are_named_in_the_top_list(mysql_tables):
    """Binary-protocol statements (benchtop's engine, sysbench) have no digest
    on MariaDB: with the events_statements_current consumer on, each one is
    a top-list row from prepared_statements_instances, not one `all prepared` row."""
    from benchtop.sources.mysql import MySQLSource

    consumer = "UPDATE performance_schema.setup_consumers SET ENABLED = %s WHERE NAME = 'events_statements_current'"
    before = mysql_admin_exec(mysql_tables, "SELECT ENABLED FROM performance_schema.setup_consumers "
                                            "WHERE NAME = 'events_statements_current'")[0][0]
    mysql_admin_exec(mysql_tables, consumer, ("YES",))
    env = dict(os.environ, PYTHONPATH=str(ROOT), MYSQL_PWD=mysql_tables.password or "")
    load = subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", "--time", "6", "--no-monitor", "--engine",
                             "mysql", "--dsn", dsn(mysql_tables), *SIZE, "--workload", "oltp_point_select",
                             "--threads", "2"], env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    src = MySQLSource("mysql", mysql_tables.target(), timeout_s=2.0)
    try:
        src.connect()

        def loading() -> bool:  # the load's statement has run: the first poll is the baseline under load
            [(executed,)] = mysql_admin_exec(
                mysql_tables, "SELECT SUM(COUNT_EXECUTE) FROM performance_schema.prepared_statements_instances "
                              "WHERE SQL_TEXT LIKE 'SELECT c FROM sbtest1 WHERE id%'")
            return bool(executed)
        retry(loading, timeout=30, interval=0.1)
        src.poll()
        time.sleep(1.5)
        top = src.poll().panels["top_statements"]
    finally:
        src.close()
        load.terminate()  # read: the rest of its 6 s adds nothing
        load.wait(30)
        mysql_admin_exec(mysql_tables, consumer, (before,))
    row = next(r for r in top if r.get("prepared") and "sbtest1" in r["query"])
    assert row["query"].startswith("SELECT c FROM sbtest1 WHERE id") and row["calls_per_s"] > 5
    assert row["total_ms_per_s"] > 0 and row["schema"] == mysql_tables.database
    assert not [r for r in top if r.get("aggregate")]


def test_asynchronous_commit_beside_a_syncing_neighbour_is_not_disk(pg_tables, tmp_path):
    """issue 42: the device's flushes were the neighbour's, the server's own syncs 0.04 per commit."""
    pg_admin_exec(pg_tables, "ALTER SYSTEM SET synchronous_commit = off")
    pg_admin_exec(pg_tables, "SELECT pg_reload_conf()")
    try:
        with noisy_neighbour(tmp_path):
            intervals = run_intervals(pg_tables, *SIZE, "--workload", "oltp_read_write", "--threads", "4",
                                      seconds="6")
    finally:
        pg_admin_exec(pg_tables, "ALTER SYSTEM RESET synchronous_commit")
        pg_admin_exec(pg_tables, "SELECT pg_reload_conf()")
    verdicts = [d["verdict"] for d in intervals]
    limits = Counter(v["limit"] for v in verdicts)
    assert verdicts and limits["disk"] <= len(verdicts) // 3, [(v["limit"], v["evidence"]) for v in verdicts]
    # the WAL writer syncs up to 5 times a second (wal_writer_delay 200 ms) whatever the commits: an interval of a
    # few transactions (a deadlock's second on 2000 rows) reads one sync per commit without any commit waiting for it
    own = [d["verdict"]["figures"]["syncs_per_txn"] for d in intervals
           if d["verdict"]["figures"].get("syncs_per_txn") is not None and d["tps"] >= 50]
    assert own and sorted(own)[len(own) // 2] < 0.5, own  # the server's own syncs, not the device's flushes


def test_durable_inserts_beside_a_noisy_neighbour_are_disk_by_the_servers_own_syncs(pg_tables, tmp_path):
    """issue 42: beside a CPU hog and a syncing writer, the workers queue for a CPU half their time, yet every
    commit still waits for its sync: the limit a quiet host shows too, with the neighbours named next."""
    folder = getattr(pg_tables, "datadir", None)
    sync_ms = timed_sync_ms(Path(folder), 32) if folder else None
    if sync_ms is not None and sync_ms < SLOW_SYNC_MS:
        pytest.skip(f"this disk syncs in {sync_ms:.3f} ms: durable commits are not disk-bound here")
    counts = "SELECT (SELECT wal_sync FROM pg_stat_wal), (SELECT xact_commit FROM pg_stat_database WHERE datname = %s)"
    before = pg_admin_exec(pg_tables, counts, [pg_tables.database])[0]
    with noisy_neighbour(tmp_path):
        verdicts = run_verdicts(pg_tables, *SIZE, "--workload", "oltp_insert", "--threads", "2")
    after = pg_admin_exec(pg_tables, counts, [pg_tables.database])[0]
    truth = (int(after[0]) - int(before[0])) / max(1, int(after[1]) - int(before[1]))
    limits = Counter(v["limit"] for v in verdicts)
    assert verdicts and limits["disk"] >= MOST * len(verdicts), [(v["limit"], v["evidence"]) for v in verdicts]
    own = sorted(v["figures"]["syncs_per_txn"] for v in verdicts if "syncs_per_txn" in v["figures"])
    assert own and abs(own[len(own) // 2] - truth) <= 0.2 * truth, (own, truth)


DELAY_PROXY = """
import asyncio, sys, time
listen, to, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000

async def pipe(r, w):
    q = asyncio.Queue()
    async def read():
        try:
            while data := await r.read(65536):
                await q.put((time.monotonic() + delay, data))
        finally:
            await q.put((0.0, b""))
    async def write():
        while True:
            due, data = await q.get()
            if not data:
                break
            if due > time.monotonic():
                await asyncio.sleep(due - time.monotonic())
            w.write(data)
            await w.drain()
        w.close()
    await asyncio.gather(read(), write(), return_exceptions=True)

async def handle(cr, cw):
    sr, sw = await asyncio.open_connection("127.0.0.1", to)
    await asyncio.gather(pipe(cr, sw), pipe(sr, cw), return_exceptions=True)

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


def test_a_slow_link_is_network_with_the_time_outside_the_server(pg_tables, tmp_path):
    """issue 42: 1 ms each way through a loopback proxy was `unclear` in every interval."""
    from tests.fixtures.local import free_port

    port = free_port()
    script = tmp_path / "delay_proxy.py"
    script.write_text(DELAY_PROXY)
    proxy = subprocess.Popen([sys.executable, str(script), str(port), str(pg_tables.port), "1"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
        target = f"postgresql://{pg_tables.user}@127.0.0.1:{port}/{pg_tables.database}"
        verdicts = run_verdicts(pg_tables, *SIZE, "--workload", "oltp_point_select", "--threads", "8",
                                target=target, seconds="6")
    finally:
        proxy.kill()
        proxy.wait(10)
    # intervals where other processes held the CPUs the workers queued for are theirs (see assert_named)
    judged = [v for v in verdicts
              if not (v["limit"] == "neighbours" and v["figures"].get("neighbour_cores", 0.0) >= CROWDED_CORES)]
    if len(judged) < len(verdicts) / 2:
        pytest.skip(f"other processes held the CPUs: {verdicts[-1]['evidence']}")
    limits = Counter(v["limit"] for v in judged)
    assert limits["network"] >= MOST * len(judged), [(v["limit"], v["evidence"]) for v in verdicts]
    named = [v for v in verdicts if v["limit"] == "network"]
    assert all(v["figures"]["outside_ms_per_query"] >= 1.0 for v in named), [v["figures"] for v in named]
    assert "ms per query outside the server and the client" in named[0]["evidence"]
