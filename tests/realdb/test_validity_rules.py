"""Each validity rule flagged on a private server started with the offending
settings (the session's servers are shared and keep their durable ones):
one PostgreSQL and one MariaDB, each started once with every setting that
breaks a rule, then a run's validity read from them names every rule."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from benchtop.record.analysis import target_validity
from benchtop.target import Target
from tests.fixtures.local import HOST, LocalMariaDB, LocalPostgres, free_port
from tests.fixtures.servers import mysql_admin_exec

pytestmark = [pytest.mark.realdb, pytest.mark.slow]

PG_OFFENDING = """
fsync = off
full_page_writes = off
synchronous_commit = off
wal_level = minimal
max_wal_senders = 0
archive_mode = off
autovacuum = off
"""

MARIADB_OFFENDING = """
[mariadbd]
innodb_flush_log_at_trx_commit = 0
innodb_doublewrite = 0
skip-log-bin
performance_schema = OFF
"""


class OffendingPostgres(LocalPostgres):
    def _init(self) -> None:
        super()._init()
        with open(self.datadir / "postgresql.conf", "a") as conf:
            conf.write(PG_OFFENDING)


class OffendingMariaDB(LocalMariaDB):
    def _init(self) -> None:
        super()._init()
        with open(self.cnf, "a") as cnf:
            cnf.write(MARIADB_OFFENDING)


@pytest.fixture(scope="module")
def root():
    path = Path(tempfile.mkdtemp(prefix="benchtop-offending-", dir="/tmp"))
    path.chmod(0o755)  # PostgreSQL runs as the postgres user: it must traverse this
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _started(proc):
    try:
        proc.start()
    except BaseException:
        proc.stop()
        raise
    return proc


def test_each_postgresql_rule_is_flagged(root):
    proc = _started(OffendingPostgres(root, free_port()))
    try:
        v = target_validity("postgresql", Target("postgresql", HOST, proc.port, "sbtest", "sbtest", "sbtest"))
    finally:
        proc.stop()
    assert v.status == "crash-unsafe"
    assert set(v.flags) == {
        "ACID durability: fsync=off",
        "ACID durability: synchronous_commit=off",
        "crash recovery: fsync=off",
        "crash recovery: full_page_writes=off",
        "point-in-time recovery: wal_level=minimal",
        "point-in-time recovery: archive_mode=off (no WAL archive)",
        "replica-usable WAL: wal_level=minimal",
        "replica-usable WAL: max_wal_senders=0",
        "autovacuum on: autovacuum=off",
    }


def test_each_mariadb_rule_is_flagged(root):
    proc = _started(OffendingMariaDB(root, free_port()))
    try:
        v = target_validity("mysql", Target("mysql", HOST, proc.port, "sbtest", "sbtest", "sbtest"))
    finally:
        proc.stop()
    assert v.status == "crash-unsafe"
    # MariaDB >= 10.6 has no innodb_checksum_algorithm=none: that rule is checked in record/analysis.py's doctest
    assert set(v.flags) == {
        "ACID durability: innodb_flush_log_at_trx_commit=0",
        "crash recovery: innodb_doublewrite=OFF (torn pages cannot be repaired)",
        "point-in-time recovery: log_bin=OFF (no binary log to replay)",
        "replica-usable WAL: log_bin=OFF (replicas read the binary log)",
        "recommended settings: performance_schema=OFF",
    }


def test_sync_binlog_is_flagged_with_the_binary_log_on(mysql_server):
    """sync_binlog only matters with the binary log on: the session's server has it."""
    [(before,)] = mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")
    try:
        mysql_admin_exec(mysql_server, "SET GLOBAL sync_binlog = 0")
        flags = target_validity("mysql", mysql_server.target()).flags
    finally:
        mysql_admin_exec(mysql_server, f"SET GLOBAL sync_binlog = {int(before)}")
    assert "ACID durability: sync_binlog=0 with the binary log on" in flags
    assert not any(f.startswith("point-in-time recovery") for f in flags)

