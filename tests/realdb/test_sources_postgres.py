"""The PostgreSQL source against the harness's PostgreSQL, with write load
from a background thread so WAL and commit rates move."""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import psycopg
import pytest

from benchtop.sources.base import Missing
from benchtop.sources.poller import SourcePoller
from benchtop.sources.postgres import PostgresSource
from tests.fixtures.servers import Server, pg_admin_exec, pg_connect, retry
from tests.fixtures.statement_log import StatementLog

pytestmark = pytest.mark.realdb


@contextmanager
def write_load(server: Server, sessions: int = 1) -> Iterator[None]:
    stop = threading.Event()
    errors: list[BaseException] = []
    with pg_connect(server) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS src_load (id bigserial PRIMARY KEY, pad text)")

    def run() -> None:
        try:
            with pg_connect(server) as conn:
                while not stop.is_set():
                    conn.execute("INSERT INTO src_load (pad) SELECT repeat('x', 200) FROM generate_series(1, 20)")
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(sessions)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not errors, errors


def _source(server: Server) -> PostgresSource:
    src = PostgresSource("postgresql", server.target(), timeout_s=2.0)
    src.connect()
    return src


def test_rates_move_under_load(pg_server: Server) -> None:
    src = _source(pg_server)
    try:
        with write_load(pg_server, sessions=2):
            started = time.monotonic()
            src.poll()
            pg_admin_exec(pg_server, "CHECKPOINT")
            time.sleep(1.0)
            between = time.monotonic() - started  # the poll and the checkpoint take their time too
            snap = src.poll()
        assert snap.ok and snap.interval_s == pytest.approx(between, abs=0.3)
        assert snap.panels["wal_bytes_per_s"] > 10_000
        assert snap.panels["wal"]["wal_bytes_per_s"] > 0
        ck = snap.panels["checkpoints"]
        assert ck["requested"] >= 1 and ck["requested_per_h"] > 0
        assert {"timed", "buffers_written", "write_time_ms", "sync_time_ms", "buffers_written_per_s"} <= set(ck)
        hit = snap.panels["cache_hit_ratio"]
        assert 0 < hit["interval"] <= 1 and 0 < hit["cumulative"] <= 1
        db = snap.panels["database"]
        assert db["name"] == "sbtest" and db["commits_per_s"] > 10 and db["size_bytes"] > 0
        assert snap.panels["sessions"]["total"] >= 2
        assert isinstance(snap.panels["wait_events"], list)
        assert snap.panels["autovacuum_workers"] >= 0
        assert snap.panels["replication"] == Missing(
            "no replicas", "pg_stat_replication is empty: no standby is streaming from this server"
        )
        settings = snap.panels["settings"]
        assert settings["fsync"] == "on" and settings["server_version_num"] == src.version_num
        assert settings["shared_buffers_bytes"] > 0
        assert snap.poll_ms < 500
    finally:
        src.close()


def test_queries_are_read_only_and_time_limited_without_session_state(
    pg_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each query runs in its own read-only, time-limited transaction; the
    session keeps no SET, so behind PgBouncer's transaction pooling nothing
    leaks into the server connections the benchmark uses."""
    from benchtop.sources import sql as sql_files

    src = _source(pg_server)
    try:
        assert src._conn is not None
        probe = ("SELECT current_setting('transaction_read_only') AS ro, current_setting('statement_timeout') AS st,"
                 " current_setting('lock_timeout') AS lt, current_setting('application_name') AS app")
        monkeypatch.setattr(sql_files, "get", lambda *a, **k: probe)
        assert src._query("anything") == [{"ro": "on", "st": "2s", "lt": "50ms", "app": "benchtop-monitor"}]
        session = src._conn.query(
            "SELECT current_setting('default_transaction_read_only') AS ro, current_setting('statement_timeout') AS st,"
            " current_setting('lock_timeout') AS lt"
        )[0]
        assert session == {"ro": "off", "st": "0", "lt": "0"}
        monkeypatch.setattr(sql_files, "get", lambda *a, **k: "CREATE TABLE must_not_exist (a int)")
        snap_missing = None
        try:
            src._query("anything")
        except Exception as exc:  # noqa: BLE001 - the panel failure carries the server's refusal
            snap_missing = exc
        assert snap_missing is not None and "read-only" in str(getattr(snap_missing, "missing", snap_missing))
    finally:
        src.close()


def test_wait_events_show_lock_waiters(pg_server: Server) -> None:
    with pg_connect(pg_server) as holder, pg_connect(pg_server) as waiter:
        holder.execute("CREATE TABLE IF NOT EXISTS src_lock (id int PRIMARY KEY)")
        holder.execute("INSERT INTO src_lock VALUES (1) ON CONFLICT DO NOTHING")
        holder.autocommit = False
        holder.execute("UPDATE src_lock SET id = 1 WHERE id = 1")
        blocked = threading.Thread(
            target=lambda: waiter.execute("UPDATE src_lock SET id = 1 WHERE id = 1"), daemon=True
        )
        blocked.start()
        src = _source(pg_server)
        try:
            deadline = time.monotonic() + 10
            while True:
                snap = src.poll()
                if any(w["type"] == "Lock" for w in snap.panels["wait_events"]) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert {"type": "Lock", "event": "transactionid", "count": 1} in snap.panels["wait_events"]
            assert snap.panels["sessions"].get("idle in transaction", 0) >= 1
        finally:
            src.close()
            holder.rollback()
            blocked.join(10)


def test_hung_backend_costs_one_deadline_then_recovers(pg_server: Server) -> None:
    # Stopping our own backend process hangs this connection only: libpq has
    # no read timeout, so only the poller's interrupt() can free the poll.
    src = PostgresSource("postgresql", pg_server.target(), timeout_s=1.0)
    poller = SourcePoller(src, interval=0.5, deadline_s=1.0, backoff_initial_s=0.2)
    poller.connect()
    try:
        assert poller.poll().ok
        assert src._conn is not None
        backend = src._conn.backend_pid
        os.kill(backend, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            snap = poller.poll()
            assert not snap.ok and time.monotonic() - t0 < 3.0
        finally:
            os.kill(backend, signal.SIGCONT)
        assert retry(lambda: poller.poll().ok, timeout=20, interval=0.3)
        assert src._conn is not None and src._conn.backend_pid != backend
    finally:
        poller.close()


def test_commits_leave_out_the_monitors_own(pg_server: Server) -> None:
    """Each poll commits about ten read-only transactions of its own; on an
    idle database commits/s was about 4/s per monitor instead of 0."""
    src = _source(pg_server)
    try:
        readings = []
        for i in range(6):
            if i:
                time.sleep(1.1)  # past the server's 1 s stats flush, so its counters keep up
            readings.append(src.poll().panels["database"])
        own = [r["monitor_commits_per_s"] for r in readings[1:]]
        commits = [r["commits_per_s"] for r in readings[2:]]
        assert all(v and v > 3 for v in own), own
        # the median: another session's leftover commits (an earlier test's) can land in one interval
        assert sorted(commits)[len(commits) // 2] < 1.0, (commits, own)
    finally:
        src.close()


def test_without_a_screen_tables_and_indexes_are_read_every_ten_seconds(
    pg_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A headless run's source (per_process=False) reads the per-table and per-index statistics once in
    RELATIONS_EVERY_S (they cost the server O(relations) and no verdict reads them); the polls between carry
    the newest reading.  With a screen they are read at every poll."""
    from benchtop.sources import postgres

    def relation_reads(log: StatementLog) -> int:
        texts = log.statements(user=pg_server.user)
        return sum(("pg_stat_user_tables" in q) + ("pg_stat_user_indexes" in q) for q in texts)

    headless = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0, per_process=False)
    shown = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0)
    headless.connect()
    shown.connect()
    try:
        with pg_server.statement_log() as log:
            first = headless.poll().panels
            second = headless.poll().panels
            assert relation_reads(log) == 2  # one of each, at the first poll
            assert isinstance(first["tables"], list) and second["tables"] is first["tables"]
            assert second["indexes"] is first["indexes"]
            monkeypatch.setattr(postgres, "RELATIONS_EVERY_S", 0.0)  # ten seconds on
            headless.poll()
            assert relation_reads(log) == 4
            monkeypatch.setattr(postgres, "RELATIONS_EVERY_S", 10.0)
            shown.poll()
            shown.poll()
            assert relation_reads(log) == 8
    finally:
        headless.close()
        shown.close()
