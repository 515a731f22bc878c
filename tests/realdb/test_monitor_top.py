"""The top lists against the harness's real servers: what runs now (a long
statement first, a blocked session as blocked, by whom), what costs most
(digest / pg_stat_statements deltas under load), tables; the monitor's own
sessions and statements never in them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from benchtop.sources.mysql import MySQLSource
from benchtop.sources.postgres import PostgresSource
from tests.fixtures.servers import Server, mysql_connect, pg_connect, retry

pytestmark = pytest.mark.realdb


@contextmanager
def in_thread(fn: Callable[[], Any]) -> Iterator[list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - the test looks at them
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield errors
    finally:
        thread.join(30)


@contextmanager
def looping(fn: Callable[[], Any]) -> Iterator[None]:
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            fn()

    with in_thread(run) as errors:
        try:
            yield
        finally:
            stop.set()
    assert not errors, errors


def _own_text(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    return [r for r in rows if any("benchtop-monitor" in str(r.get(k) or "") for k in keys)]


# ---------------------------------------------------------------- MySQL / MariaDB


def test_mysql_long_statement_first_and_blocked_session_with_its_blocker(mysql_server: Server) -> None:
    with mysql_connect(mysql_server) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS top_locks (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cur.execute("REPLACE INTO top_locks VALUES (1, 0)")
    src = MySQLSource("mysql", mysql_server.target(), timeout_s=2.0)
    src.connect()
    holder = mysql_connect(mysql_server)
    try:
        long_conn = mysql_connect(mysql_server)
        waiter = mysql_connect(mysql_server)
        with long_conn, waiter, in_thread(lambda: long_conn.cursor().execute("SELECT SLEEP(4) AS top_long_marker")):
            time.sleep(0.5)  # the long statement starts first: it is the oldest
            with holder.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute("SELECT v FROM top_locks WHERE id = 1 FOR UPDATE")

            def blocked() -> None:
                with waiter.cursor() as cur:
                    cur.execute("SET SESSION innodb_lock_wait_timeout = 20")
                    cur.execute("UPDATE top_locks SET v = v + 1 WHERE id = 1 /* top_blocked_marker */")

            with in_thread(blocked) as errors:

                def seen() -> Any:
                    snap = src.poll()
                    locks = snap.panels["locks"]
                    return snap if locks and locks[0]["waiting_id"] == waiter.thread_id() else None

                snap = retry(seen, timeout=10, interval=0.2)
                holder.rollback()
            assert not errors, errors
            with holder.cursor() as cur:  # seen: the rest of its 4 s adds nothing
                cur.execute(f"KILL QUERY {long_conn.thread_id()}")
        procs = snap.panels["processlist"]
        assert "top_long_marker" in procs[0]["query"] and procs[0]["time_s"] >= 0.5
        assert procs == sorted(procs, key=lambda r: -r["time_s"])
        blocked_row = next(r for r in procs if r["id"] == waiter.thread_id())
        assert "top_blocked_marker" in blocked_row["query"] and "\n" not in blocked_row["query"]
        assert src._conn is not None and all(r["id"] != src._conn.thread_id() for r in procs)
        assert not _own_text(procs, "query")
        lock = snap.panels["locks"][0]
        assert lock["blocking_id"] == holder.thread_id()
        assert "top_blocked_marker" in lock["waiting_query"]
        assert lock["blocking_command"] == "Sleep" and "top_locks" in lock["lock_table"]
    finally:
        holder.close()
        src.close()


def test_mysql_top_statements_are_interval_deltas(mysql_server: Server) -> None:
    with mysql_connect(mysql_server) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS top_load (id INT PRIMARY KEY, v INT)")
        cur.execute("REPLACE INTO top_load VALUES (1, 0)")
    src = MySQLSource("mysql", mysql_server.target(), timeout_s=2.0)
    src.connect()
    conn = mysql_connect(mysql_server)
    cur = conn.cursor()
    try:
        with looping(lambda: cur.execute("SELECT v FROM top_load WHERE id = 1")):
            first = src.poll()
            time.sleep(1.0)
            snap = src.poll()
        assert first.panels["top_statements"] == []  # the first read is only the baseline
        top = snap.panels["top_statements"]
        row = next(r for r in top if "top_load" in r["query"])
        assert row["calls_per_s"] > 20 and row["total_ms_per_s"] > 0 and row["avg_ms"] > 0
        assert row["rows_examined_per_s"] >= row["calls_per_s"] * 0.5
        assert top == sorted(top, key=lambda r: -r["total_ms_per_s"])
        assert not [r for r in top if "performance_schema" in r["query"] or r["query"].startswith("SHOW")]
    finally:
        conn.close()
        src.close()


# ---------------------------------------------------------------- PostgreSQL


def test_postgres_activity_blocked_by_and_the_long_statement(pg_server: Server) -> None:
    with pg_connect(pg_server) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS top_locks (id int PRIMARY KEY, v int)")
        setup.execute("INSERT INTO top_locks VALUES (1, 0) ON CONFLICT DO NOTHING")
    src = PostgresSource("pg", pg_server.target(), timeout_s=2.0)
    src.connect()
    holder = pg_connect(pg_server)
    long_conn = pg_connect(pg_server)
    waiter = pg_connect(pg_server)
    try:
        with in_thread(lambda: long_conn.execute("SELECT pg_sleep(4) /* top_long_marker */")):
            time.sleep(0.5)
            holder.execute("BEGIN")
            holder.execute("UPDATE top_locks SET v = v + 1 WHERE id = 1")
            with in_thread(
                lambda: waiter.execute("UPDATE top_locks SET v = v + 1 WHERE id = 1 /* top_blocked_marker */")
            ) as errors:

                def seen() -> Any:
                    snap = src.poll()
                    rows = {r["pid"]: r for r in snap.panels["activity"]}
                    row = rows.get(waiter.info.backend_pid)
                    return snap if row is not None and row["blocked_by"] else None

                snap = retry(seen, timeout=10, interval=0.2)
                holder.execute("ROLLBACK")
            assert not errors, errors
            # seen: the rest of its 4 s adds nothing
            holder.execute("SELECT pg_cancel_backend(%s)", (long_conn.info.backend_pid,))
        rows = {r["pid"]: r for r in snap.panels["activity"]}
        blocked = rows[waiter.info.backend_pid]
        assert blocked["blocked_by"] == [holder.info.backend_pid]
        assert blocked["wait_event_type"] == "Lock" and "top_blocked_marker" in blocked["query"]
        assert rows[holder.info.backend_pid]["state"] == "idle in transaction"
        active = [r for r in snap.panels["activity"] if r["state"] == "active"]
        oldest = max(active, key=lambda r: r["query_age_s"])
        assert "top_long_marker" in oldest["query"]
        assert not [r for r in snap.panels["activity"] if r["application"] == "benchtop-monitor"]
    finally:
        for conn in (holder, long_conn, waiter):
            conn.close()
        src.close()


def test_postgres_top_statements_and_tables_under_load(pg_server: Server) -> None:
    with pg_connect(pg_server) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS top_load (id int PRIMARY KEY, v int)")
        setup.execute("INSERT INTO top_load SELECT g, 0 FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING")
    src = PostgresSource("pg", pg_server.target(), timeout_s=2.0)
    src.connect()
    conn = pg_connect(pg_server)
    try:
        with looping(lambda: conn.execute("SELECT v FROM top_load WHERE id = 7")):
            src.poll()
            time.sleep(1.0)
            snap = src.poll()
        top = snap.panels["top_statements"]
        assert isinstance(top, list), top
        row = next(r for r in top if "top_load" in r["query"])
        assert row["calls_per_s"] > 20 and row["mean_ms"] > 0 and row["rows_per_s"] > 0
        assert row["shared_blks_hit_per_s"] > 0
        assert top == sorted(top, key=lambda r: -r["total_ms_per_s"])
        assert not _own_text(top, "query")
        assert not [r for r in top if "pg_stat_" in r["query"] or "pg_settings" in r["query"]]
        tables = {t["table_name"]: t for t in snap.panels["tables"]}
        assert tables["top_load"]["blks_hit_per_s"] > 0 and tables["top_load"]["size_bytes"] > 0
        assert any(i["table_name"] == "top_load" for i in snap.panels["indexes"])
        assert isinstance(snap.panels["vacuum"], list)
        assert snap.panels["database"]["size_bytes"] > 0
    finally:
        conn.close()
        src.close()
