"""The blocking view (pg_activity's: who waits for a lock, who holds it up)
against the harness's real servers: an UPDATE blocked behind an open
transaction shows as one row with the lock's mode, the relation, the
blocker's id and its last statement, in the view and in the headless
monitor's text."""

from __future__ import annotations

from typing import Any

import pytest

from benchtop.panels.headless import format_text
from benchtop.panels.views import rows_for, views_for
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.mysql import MySQLSource
from benchtop.sources.postgres import PostgresSource
from tests.fixtures.servers import Server, mysql_connect, pg_connect, retry
from tests.realdb.test_monitor_top import in_thread

pytestmark = pytest.mark.realdb


def _blocking_rows(snap: SourceSnapshot) -> list[dict[str, Any]]:
    view = next(v for v in views_for(snap.kind) if v.key == "blocking")
    rows = rows_for(view.tables[0], snap)
    assert isinstance(rows, list), rows
    return rows


def _blocked(src: PostgresSource | MySQLSource) -> SourceSnapshot | bool:
    snap = src.poll()
    return snap if _blocking_rows(snap) else False


@pytest.mark.parametrize("per_process", [True, False], ids=["screen", "headless"])
def test_postgres_blocked_update_behind_an_open_transaction(pg_server: Server, per_process: bool) -> None:
    """Headless (no session rows read), a Lock among the wait events is what sends the source to pg_locks."""
    with pg_connect(pg_server) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS block_view (id int PRIMARY KEY, v int)")
        setup.execute("INSERT INTO block_view VALUES (1, 0) ON CONFLICT DO NOTHING")
    src = PostgresSource("pg", pg_server.target(), timeout_s=2.0, per_process=per_process)
    src.connect()
    holder, waiter = pg_connect(pg_server), pg_connect(pg_server)
    try:
        holder.execute("BEGIN")
        holder.execute("UPDATE block_view SET v = v + 1 WHERE id = 1 /* holder_marker */")
        with in_thread(lambda: waiter.execute("UPDATE block_view SET v = v + 2 WHERE id = 1 /* waiter_marker */")) as errors:
            snap = retry(lambda: _blocked(src), timeout=10, interval=0.2)
            text = format_text([snap])
            holder.execute("ROLLBACK")
        assert not errors, errors
        [row] = _blocking_rows(snap)
        assert row["pid"] == waiter.info.backend_pid and row["blocking_pid"] == holder.info.backend_pid
        # a row lock: the waiter wants the holder's transaction id, on the table its tuple lock names
        assert row["mode"] == "ShareLock" and row["lock_type"] == "transactionid"
        assert row["relation"] == "public.block_view"
        assert "holder_marker" in row["blocking_query"] and row["blocking_state"] == "idle in transaction"
        assert "waiter_marker" in row["query"]
        line = next(ln for ln in text.splitlines() if "who holds it up" in ln)
        assert f"{waiter.info.backend_pid}" in line and f"{holder.info.backend_pid}" in line
        assert "ShareLock" in line and "public.block_view" in line and "holder_marker" in line
        quiet = src.poll()  # nobody waits: the view says so, the text has no such line
        assert quiet.panels["blocking"] == [] and "who holds it up" not in format_text([quiet])
    finally:
        holder.close()
        waiter.close()
        src.close()


def test_mysql_blocked_update_behind_an_open_transaction(mysql_server: Server) -> None:
    with mysql_connect(mysql_server) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS block_view (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cur.execute("REPLACE INTO block_view VALUES (1, 0)")
    src = MySQLSource("mysql", mysql_server.target(), timeout_s=2.0)
    src.connect()
    holder, waiter = mysql_connect(mysql_server), mysql_connect(mysql_server)
    try:
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("UPDATE block_view SET v = v + 1 WHERE id = 1 /* holder_marker */")

        def blocked() -> None:
            with waiter.cursor() as cur:
                cur.execute("SET SESSION innodb_lock_wait_timeout = 20")
                cur.execute("UPDATE block_view SET v = v + 2 WHERE id = 1 /* waiter_marker */")

        with in_thread(blocked) as errors:
            snap = retry(lambda: _blocked(src), timeout=10, interval=0.2)
            text = format_text([snap])
            holder.rollback()
        assert not errors, errors
        [row] = _blocking_rows(snap)
        assert row["pid"] == waiter.thread_id() and row["blocking_pid"] == holder.thread_id()
        assert row["mode"] == "X" and "block_view" in row["relation"]
        assert row["blocking_state"] == "Sleep" and "waiter_marker" in row["query"]
        # an idle blocker runs nothing: its last statement comes from performance_schema's history, when on
        trx = {t["id"]: t for t in snap.panels["transactions"]}
        last = trx[holder.thread_id()]["last_statement"]
        # its last statement, or why there is none (the consumer that keeps it is off)
        assert row["blocking_query"] == last and "holder_marker" in last if last else \
            row["blocking_query"].startswith("(idle; last statement unknown")
        line = next(ln for ln in text.splitlines() if "who holds it up" in ln)
        assert f"{waiter.thread_id()}" in line and f"{holder.thread_id()}" in line and "block_view" in line
    finally:
        holder.close()
        waiter.close()
        src.close()
