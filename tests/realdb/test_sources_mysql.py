"""The MySQL/MariaDB source against the harness's MariaDB, with write load
from a background thread so the rates move."""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pymysql
import pytest

from benchtop.sources.base import Missing
from benchtop.sources.mysql import MySQLSource
from benchtop.sources.poller import SourcePoller
from benchtop.target import Target
from tests.fixtures.servers import Server, mysql_admin_exec, mysql_connect, retry

pytestmark = pytest.mark.realdb


@contextmanager
def write_load(server: Server) -> Iterator[None]:
    """Autocommit inserts and explicit commits until the block ends."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with mysql_connect(server) as conn, conn.cursor() as cur:
                cur.execute("CREATE TABLE IF NOT EXISTS src_load (id INT AUTO_INCREMENT PRIMARY KEY, pad CHAR(200))")
                while not stop.is_set():
                    cur.execute("BEGIN")
                    cur.execute("INSERT INTO src_load (pad) VALUES (REPEAT('x', 200))")
                    cur.execute("COMMIT")
                    cur.execute("SELECT COUNT(*) FROM src_load WHERE id < 10")
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
    assert not errors, errors


def _source(server: Server, **kw) -> MySQLSource:
    src = MySQLSource("mysql", server.target(), timeout_s=2.0, **kw)
    src.connect()
    return src


def test_rates_move_under_load(mysql_server: Server) -> None:
    src = _source(mysql_server)
    try:
        with write_load(mysql_server):
            src.poll()
            time.sleep(1.0)
            snap = src.poll()
        assert snap.ok and snap.interval_s == pytest.approx(1.0, abs=0.5)
        rates = snap.panels["status_rates"]
        assert rates["questions_per_s"] > 10 and rates["commits_per_s"] > 5
        inn = snap.panels["innodb"]
        assert inn["lsn"] >= inn["checkpoint_lsn"] > 0
        assert 0 <= inn["checkpoint_age_bytes"] <= inn["lsn"]
        assert inn["redo_bytes_per_s"] > 0
        assert 0 <= inn["checkpoint_age_pct"] < 100 and inn["redo_capacity_bytes"] > 0
        assert inn["history_list_length"] is not None
        waits = snap.panels["waits"]
        assert waits and {"event", "ms_per_s", "count_per_s"} <= set(waits[0])
        assert all(w["event"] != "idle" for w in waits)
        assert waits == sorted(waits, key=lambda w: -w["ms_per_s"])
        binlog = snap.panels["binlog"]  # the harness runs MariaDB with log-bin
        assert binlog["enabled"] and binlog["bytes_per_s"] > 0 and binlog["total_bytes"] > 0
        assert snap.panels["threads"]["connected"] >= 2
        settings = snap.panels["settings"]
        assert settings["log_bin"] == "ON" and settings["innodb_flush_log_at_trx_commit"] in (0, 1, 2)
        assert "MariaDB" in settings["version"]
        assert snap.poll_ms < 500
    finally:
        src.close()


def test_binlog_rotation_is_counted(mysql_server: Server) -> None:
    src = _source(mysql_server)
    try:
        src.poll()
        mysql_admin_exec(mysql_server, "FLUSH BINARY LOGS")
        snap = src.poll()
        assert snap.panels["binlog"]["rotations"] == 1
    finally:
        src.close()


def test_panels_degrade_without_privileges(mysql_server: Server) -> None:
    for stmt in (
        "DROP USER IF EXISTS 'bare'@'%'",
        "CREATE USER 'bare'@'%' IDENTIFIED BY 'bare'",
        "GRANT SELECT ON sbtest.* TO 'bare'@'%'",
    ):
        mysql_admin_exec(mysql_server, stmt)
    target = Target(
        kind="mysql", host=mysql_server.host, port=mysql_server.port, user="bare", password="bare", database="sbtest"
    )
    src = MySQLSource("bare", target, timeout_s=2.0)
    src.connect()
    try:
        snap = src.poll()
        assert snap.ok
        waits = snap.panels["waits"]
        assert isinstance(waits, Missing) and "GRANT SELECT ON performance_schema.*" in waits.hint
        binlog = snap.panels["binlog"]
        assert isinstance(binlog, Missing) and "BINLOG MONITOR" in binlog.hint
        assert snap.panels["innodb"]["lsn"] > 0  # status variables need no privilege
    finally:
        src.close()
        mysql_admin_exec(mysql_server, "DROP USER IF EXISTS 'bare'@'%'")


def test_session_is_read_only_with_statement_timeout(mysql_server: Server) -> None:
    src = _source(mysql_server)
    try:
        assert src._conn is not None
        with src._conn.cursor() as cur:
            cur.execute("SELECT @@session.tx_read_only, @@session.max_statement_time")
            read_only, max_time = cur.fetchone()
            assert read_only == 1 and float(max_time) == 2.0
            with pytest.raises(pymysql.err.OperationalError):
                cur.execute("CREATE TABLE IF NOT EXISTS must_not_exist (a INT)")  # 1792: read-only transaction
    finally:
        src.close()


def test_hung_server_costs_one_deadline_then_recovers(mysql_server: Server) -> None:
    poller = SourcePoller(_source_unconnected(mysql_server), interval=0.5, deadline_s=1.0, backoff_initial_s=0.2)
    poller.connect()
    try:
        assert poller.poll().ok
        mysql_server.kill(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            snap = poller.poll()
            assert not snap.ok and time.monotonic() - t0 < 3.0
        finally:
            mysql_server.kill(signal.SIGCONT)
        assert retry(lambda: poller.poll().ok, timeout=20, interval=0.3)
        assert poller.stats.reconnects >= 1
    finally:
        poller.close()


def _source_unconnected(server: Server) -> MySQLSource:
    return MySQLSource("mysql", server.target(), timeout_s=1.0)


def test_queries_leave_out_the_monitors_own(mysql_server: Server) -> None:
    """Questions counts the monitor's own statements (about fifteen a poll):
    on an idle server queries/s reads about 0, the monitor's kept apart."""
    src = _source(mysql_server)
    try:
        rates = []
        for i in range(4):
            if i:
                time.sleep(0.5)
            rates.append(src.poll().panels["status_rates"])
        own = [r["monitor_questions_per_s"] for r in rates[1:]]
        queries = [r["questions_per_s"] for r in rates[1:]]
        assert all(v and v > 5 for v in own), own
        assert sum(queries) / len(queries) < 2.0, (queries, own)
    finally:
        src.close()
