"""The monitor never joins a lock queue: with a table held (or awaited) in
ACCESS EXCLUSIVE mode on PostgreSQL, or its metadata lock held or awaited
on MariaDB, every poll answers within its interval, no monitor session is
ever seen waiting on a lock, and the PostgreSQL panel names what it skipped.

Before: PostgreSQL's relation-size query queued behind the lock; three or
four benchtop-monitor backends joined the blocked list and the monitor showed
"no answer within 2.5s" for most of the incident."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

import pytest

from benchtop.panels.views.postgres import database_summary
from benchtop.run.target_readings import TargetReader
from benchtop.sources import sql
from benchtop.sources.base import Missing, PanelFailed
from benchtop.sources.fields import SIZES_SKIPPED
from benchtop.sources.mysql import MySQLSource
from benchtop.sources.poller import SourcePoller
from benchtop.sources.postgres import PostgresSource
from tests.fixtures.servers import Server, mysql_connect, pg_connect, retry

pytestmark = pytest.mark.realdb

INTERVAL_S = 1.0

# a monitor backend waiting on a heavyweight lock, as pg_activity would list it
_PG_MONITOR_WAITING = """
SELECT count(*) FROM pg_stat_activity a
WHERE a.application_name LIKE 'benchtop%%'
  AND (a.wait_event_type = 'Lock' OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted))
"""
_MY_MONITOR_WAITING = """
SELECT count(*) FROM information_schema.PROCESSLIST
WHERE INFO LIKE '%%benchtop-monitor%%' AND STATE LIKE 'Waiting for%%lock%%'
"""


@contextmanager
def watching(sample: Callable[[], int]) -> Iterator[list[int]]:
    """Sample `sample()` every 20 ms while the block runs; the samples."""
    seen: list[int] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            seen.append(sample())
            stop.wait(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(5)


def _polls_on_time(poller: SourcePoller, count: int) -> list:
    snaps = []
    for _ in range(count):
        t0 = time.monotonic()
        snap = poller.poll()
        took = time.monotonic() - t0
        assert snap.ok, snap.error
        assert took < INTERVAL_S, f"a poll took {took:.2f}s with a lock held"
        snaps.append(snap)
    return snaps


def test_postgres_skips_locked_relations_and_never_queues(pg_server: Server) -> None:
    with pg_connect(pg_server) as setup:
        for name in ("lockq_held", "lockq_awaited"):
            setup.execute(f"CREATE TABLE IF NOT EXISTS {name} (id int PRIMARY KEY, pad text)")
            setup.execute(f"INSERT INTO {name} VALUES (1, repeat('x', 3000)) ON CONFLICT DO NOTHING")
    with pg_connect(pg_server) as holder, pg_connect(pg_server) as reader, pg_connect(pg_server) as ddl, \
            pg_connect(pg_server, admin=True) as watcher:
        holder.autocommit = reader.autocommit = ddl.autocommit = False
        holder.execute("LOCK TABLE lockq_held IN ACCESS EXCLUSIVE MODE")
        # an ACCESS EXCLUSIVE request queued behind a reader: every later
        # ACCESS SHARE request queues behind it in turn
        reader.execute("SELECT count(*) FROM lockq_awaited")
        queued = threading.Thread(target=lambda: ddl.execute("LOCK TABLE lockq_awaited IN ACCESS EXCLUSIVE MODE"),
                                  daemon=True)
        queued.start()
        holder_pid, ddl_pid = holder.info.backend_pid, ddl.info.backend_pid
        retry(lambda: watcher.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted",
                                      (ddl_pid,)).fetchone()[0] == 1)
        poller = SourcePoller(PostgresSource("postgresql", pg_server.target(), timeout_s=2.0),
                              interval=INTERVAL_S, deadline_s=2.0)
        try:
            poller.connect()
            with watching(lambda: int(watcher.execute(_PG_MONITOR_WAITING).fetchone()[0])) as waiting:
                snaps = _polls_on_time(poller, 4)
                # the cost meter's reads of the target at a run's start and end
                t0 = time.monotonic()
                reading, settings = TargetReader(pg_server.target()).read(with_settings=True)
                assert time.monotonic() - t0 < INTERVAL_S and reading is not None and settings
                assert isinstance(reading.panels[SIZES_SKIPPED], Missing)
            assert waiting and max(waiting) == 0, f"monitor sessions waiting on a lock: {max(waiting)}"
        finally:
            poller.close()
            holder.rollback()
            reader.rollback()
            queued.join(10)
            ddl.rollback()
    snap = snaps[-1]
    tables = {r["table_name"]: r for r in snap.panels["tables"]}
    assert tables["lockq_held"]["size_bytes"] is None and tables["lockq_held"]["locked_by"] == holder_pid
    assert tables["lockq_awaited"]["size_bytes"] is None and tables["lockq_awaited"]["locked_by"] == ddl_pid
    # the other panels go on
    for name in ("database", "sessions", "activity", "checkpoints", "indexes"):
        assert not isinstance(snap.panels[name], Missing), (name, snap.panels[name])
    skipped = snap.panels[SIZES_SKIPPED]
    assert isinstance(skipped, Missing)
    pids = sorted([holder_pid, ddl_pid])
    assert skipped.what == f"sizes of 2 relations skipped: locked by pids {pids[0]}, {pids[1]}"
    assert "lockq_held" in skipped.hint and "lockq_awaited" in skipped.hint
    shown = "\n".join(line.plain for line in database_summary(snap, 200))
    assert f"sizes: ✗ {skipped.what}" in shown, shown


def test_postgres_lock_timeout_bounds_what_the_look_ahead_misses(pg_server: Server,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock taken after the look at pg_locks (or on a catalog) costs a
    panel lock_timeout, not the poll: the statement gives up at once."""
    from benchtop.sources import sql as sql_files

    with pg_connect(pg_server) as holder:
        holder.execute("CREATE TABLE IF NOT EXISTS lockq_race (id int)")
        holder.autocommit = False
        holder.execute("LOCK TABLE lockq_race IN ACCESS EXCLUSIVE MODE")
        src = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0)
        src.connect()
        try:
            monkeypatch.setattr(sql_files, "get", lambda *a, **k: "SELECT pg_relation_size('lockq_race'::regclass)")
            t0 = time.monotonic()
            with pytest.raises(PanelFailed) as failed:
                src._query("tables")
            assert time.monotonic() - t0 < 0.5
            assert failed.value.missing.what.startswith("skipped: a session holds a lock")
        finally:
            src.close()
            holder.rollback()


@contextmanager
def _mariadb_metadata_lock(server: Server, how: str) -> Iterator[None]:
    """lockq_mdl's metadata lock held by LOCK TABLES ... WRITE, or awaited by
    an ALTER queued behind an open transaction that read the table (every
    statement wanting that metadata lock then queues behind the ALTER)."""
    with mysql_connect(server) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS lockq_mdl (id INT PRIMARY KEY, pad VARCHAR(100)) ENGINE=InnoDB")
        cur.execute("INSERT IGNORE INTO lockq_mdl VALUES (1, 'x')")
    holder = mysql_connect(server, admin=True)
    ddl = mysql_connect(server, admin=True)
    alter = threading.Thread(target=lambda: ddl.cursor().execute(
        "ALTER TABLE lockq_mdl COMMENT = 'lock queue test'"), daemon=True)
    with holder.cursor() as cur:
        if how == "lock tables":
            cur.execute("LOCK TABLES lockq_mdl WRITE")
        else:
            cur.execute("BEGIN")
            cur.execute("SELECT * FROM lockq_mdl")
            alter.start()
    try:
        if how != "lock tables":
            with mysql_connect(server, admin=True) as watcher, watcher.cursor() as cur:
                retry(lambda: cur.execute("SELECT count(*) FROM information_schema.PROCESSLIST "
                                          "WHERE STATE LIKE 'Waiting for table metadata lock%%'") is not None
                      and cur.fetchone()[0] >= 1)
        yield
    finally:
        with holder.cursor() as cur:
            cur.execute("UNLOCK TABLES" if how == "lock tables" else "ROLLBACK")
        holder.close()
        if alter.is_alive() or how != "lock tables":
            alter.join(30)
        ddl.close()


@pytest.mark.parametrize("how", ["lock tables", "pending alter"])
def test_mariadb_never_queues_behind_a_metadata_lock(mysql_server: Server, how: str) -> None:
    """The monitor reads no user table but information_schema.TABLES (the
    database size's fallback), under a metadata lock that neither LOCK
    TABLES WRITE nor a pending ALTER blocks; a held exclusive one would
    fail it at once (lock_wait_timeout 0)."""
    with _mariadb_metadata_lock(mysql_server, how), mysql_connect(mysql_server, admin=True) as watcher:
        cur = watcher.cursor()

        def monitor_waiting() -> int:
            cur.execute(_MY_MONITOR_WAITING)
            return int(cur.fetchone()[0])

        source = MySQLSource("mysql", mysql_server.target(), timeout_s=2.0)
        poller = SourcePoller(source, interval=INTERVAL_S, deadline_s=2.0)
        try:
            poller.connect()
            with watching(monitor_waiting) as waiting:
                snaps = _polls_on_time(poller, 3)
                assert source.version is not None
                t0 = time.monotonic()
                sizes = source._rows(sql.get(source.version.backend, "tables_size", source.version.number))
                assert time.monotonic() - t0 < INTERVAL_S and sizes[0][1] >= 1
            assert waiting and max(waiting) == 0, f"monitor sessions waiting on a metadata lock: {max(waiting)}"
        finally:
            poller.close()
    snap = snaps[-1]
    for name in ("settings", "database", "processlist", "transactions", "locks"):
        assert not isinstance(snap.panels[name], Missing), (name, snap.panels[name])


def test_mysql_session_refuses_every_lock_wait(mysql_server: Server) -> None:
    """A lock a user holds fails the monitor's statement at once: its panel
    says it was skipped, the poll goes on."""
    with mysql_connect(mysql_server) as setup, setup.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS lockq_row (id INT PRIMARY KEY) ENGINE=InnoDB")
    src = MySQLSource("mysql", mysql_server.target(), timeout_s=2.0)
    src.connect()
    try:
        assert src._conn is not None
        with src._conn.cursor() as cur:
            cur.execute("SELECT @@session.lock_wait_timeout, @@session.innodb_lock_wait_timeout")
            mdl, row = cur.fetchone()
        assert int(mdl) == 0 and int(row) == 0  # MariaDB 10.3+: no wait at all
        with mysql_connect(mysql_server) as holder, holder.cursor() as cur:
            cur.execute("LOCK TABLES lockq_row WRITE")
            t0 = time.monotonic()
            with pytest.raises(PanelFailed) as failed:
                src._rows("SELECT * FROM lockq_row")  # a metadata lock LOCK TABLES WRITE conflicts with
            assert time.monotonic() - t0 < 0.5
            assert failed.value.missing.what.startswith("skipped: a session holds a lock")
            cur.execute("UNLOCK TABLES")
        assert src.poll().ok  # the same session goes on
    finally:
        src.close()
