"""innotop's views on a real MariaDB/MySQL: open transactions (a lock
holder sleeping inside its transaction shows, with its last statement and
the rows it locked), the latest deadlock with both statements, and
metadata locks (an ALTER queued behind an open transaction)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchtop.panels.views import VIEWS, rows_for
from benchtop.panels.views.mysql import MYSQL_PROCESSLIST
from benchtop.panels.views.spec import filtered
from benchtop.sources.fields import DeadlockPanel, TrxRow
from benchtop.sources.mysql import MySQLSource
from tests.fixtures.servers import Server, mysql_admin_exec, mysql_connect, retry
from tests.realdb.test_monitor_top import in_thread

pytestmark = pytest.mark.realdb


def _source(server: Server) -> MySQLSource:
    src = MySQLSource("mysql", server.target(), timeout_s=2.0)
    src.connect()
    return src


def _table(server: Server, name: str) -> None:
    with mysql_connect(server) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE IF NOT EXISTS {name} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cur.execute(f"REPLACE INTO {name} VALUES (1, 0), (2, 0)")


def test_a_sleeping_lock_holder_shows_with_its_last_statement(mysql_server: Server) -> None:
    _table(mysql_server, "trx_hold")
    # the last statement of a finished statement lives in this consumer (off by default on MariaDB)
    mysql_admin_exec(mysql_server, "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
                                   "WHERE NAME = 'events_statements_current'")
    src = _source(mysql_server)
    holder, waiter = mysql_connect(mysql_server), mysql_connect(mysql_server)
    try:
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("UPDATE trx_hold SET v = v + 1 WHERE id = 1 /* trx_hold_marker */")

        def blocked() -> None:
            with waiter.cursor() as cur:
                cur.execute("SET SESSION innodb_lock_wait_timeout = 20")
                cur.execute("UPDATE trx_hold SET v = 5 WHERE id = 1")

        with in_thread(blocked):
            def seen() -> Any:
                snap = src.poll()
                trx = {r["id"]: TrxRow.of(r) for r in snap.panels["transactions"]}
                ok = holder.thread_id() in trx and trx.get(waiter.thread_id(), TrxRow()).state == "LOCK WAIT"
                return snap if ok else False

            snap = retry(seen, timeout=10, interval=0.2)
            holder.rollback()
        trx = {r["id"]: TrxRow.of(r) for r in snap.panels["transactions"]}
        held = trx[holder.thread_id()]
        assert held.command == "Sleep" and held.query is None and held.state == "RUNNING"
        assert "trx_hold_marker" in (held.last_statement or ""), held
        assert (held.rows_locked or 0) >= 1 and (held.undo_entries or 0) >= 1 and (held.age_s or 0) >= 0
        # the session list shows the sleeper as idle in trx, even with idle sessions hidden
        shown = filtered(rows_for(MYSQL_PROCESSLIST, snap), MYSQL_PROCESSLIST, "", False)
        row = next(r for r in shown if r["id"] == holder.thread_id())
        assert str(row["state"]).startswith("idle in trx")
        # and the trx view says what it does
        trx_view = next(v for v in VIEWS["mysql"] if v.key == "trx")
        rows = rows_for(trx_view.tables[0], snap)
        assert isinstance(rows, list)
        assert next(r for r in rows if r["id"] == holder.thread_id())["doing"].startswith("idle in trx")
    finally:
        holder.close()
        waiter.close()
        src.close()


def test_latest_deadlock_names_both_statements(mysql_server: Server) -> None:
    _table(mysql_server, "trx_dead")
    src = _source(mysql_server)
    a, b = mysql_connect(mysql_server), mysql_connect(mysql_server)
    try:
        src.poll()
        for conn, row in ((a, 1), (b, 2)):
            with conn.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute(f"UPDATE trx_dead SET v = v + 1 WHERE id = {row}")

        def a_second() -> None:
            with a.cursor() as cur:
                cur.execute("UPDATE trx_dead SET v = v + 1 WHERE id = 2 /* dead_a */")

        with in_thread(a_second):
            time.sleep(0.5)
            with pytest.raises(Exception, match="Deadlock"):
                with b.cursor() as cur:
                    cur.execute("UPDATE trx_dead SET v = v + 1 WHERE id = 1 /* dead_b */")
        a.rollback()

        def seen() -> DeadlockPanel | bool:
            dl = DeadlockPanel.of(src.poll().panels)
            return dl if dl and any("dead_b" in (t.query or "") for t in dl.transactions) else False

        dl = retry(seen, timeout=25, interval=0.5)  # MySQL reads the status every tenth poll
        queries = {t.thread_id: t.query or "" for t in dl.transactions}
        assert "dead_a" in queries[a.thread_id()] and "dead_b" in queries[b.thread_id()]
        victim = next(t for t in dl.transactions if t.n == dl.victim)
        assert victim.thread_id == b.thread_id()  # the one whose statement failed
        assert all(t.table and "trx_dead" in t.table for t in dl.transactions)
    finally:
        a.close()
        b.close()
        src.close()


def test_metadata_locks_show_an_alter_behind_an_open_transaction(mysql_server: Server) -> None:
    _table(mysql_server, "trx_mdl")
    mysql_admin_exec(mysql_server, "UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' "
                                   "WHERE NAME = 'wait/lock/metadata/sql/mdl'")
    src = _source(mysql_server)
    holder, alter = mysql_connect(mysql_server), mysql_connect(mysql_server, admin=True)
    try:
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("SELECT v FROM trx_mdl WHERE id = 1")

        def altering() -> None:
            with alter.cursor() as cur:
                cur.execute("SET SESSION lock_wait_timeout = 20")
                cur.execute(f"ALTER TABLE {mysql_server.database}.trx_mdl ADD COLUMN w INT /* mdl_marker */")

        with in_thread(altering):
            def seen() -> Any:
                rows = src.poll().panels["metadata_locks"]
                return rows if isinstance(rows, list) and any(r["status"] == "PENDING" for r in rows) else False

            rows = retry(seen, timeout=10, interval=0.2)
            holder.rollback()
        pending = next(r for r in rows if r["status"] == "PENDING")
        assert pending["id"] == alter.thread_id() and "mdl_marker" in pending["query"]
        assert "trx_mdl" in pending["object"]
        assert any(r["id"] == holder.thread_id() and r["status"] == "GRANTED" for r in rows)
    finally:
        holder.close()
        alter.close()
        src.close()
