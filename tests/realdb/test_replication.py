"""Replication seen from both servers of a real pair: the test starts a
replica on loopback from the harness's primary (a MariaDB replica reading
its binlog, a PostgreSQL standby from pg_basebackup) and reads both sides
through the sources and the views."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchtop.panels.views import VIEWS, rows_for
from benchtop.sources.fields import ReplicaRow, StandbyPanel
from benchtop.sources.mysql import MySQLSource
from benchtop.sources.postgres import PostgresSource
from benchtop.target import parse_dsn
from tests.fixtures.local import HOST, MYSQL_ADMIN, PG_ADMIN, LocalMariaDB, LocalPostgres, _run, free_port
from tests.fixtures.servers import Server, mysql_admin_exec, mysql_connect, pg_admin_exec, pg_connect, retry

pytestmark = pytest.mark.realdb


def _view(kind: str, key: str):
    return next(v for v in VIEWS[kind] if v.key == key)


def _summary(kind: str, snap) -> str:
    view = _view(kind, "repl")
    return "\n".join(t.plain for t in view.summary(snap, 200)) if view.summary else ""


# ---------------------------------------------------------------- MariaDB


class LocalMariaDBReplica(LocalMariaDB):
    name = "mariadb-replica"

    def _init(self) -> None:
        super()._init()
        self.cnf.write_text(self.cnf.read_text().replace("server_id=1", "server_id=2"))


@pytest.fixture
def mysql_replica(mysql_server: Server, tmp_path: Path) -> Iterator[tuple[Server, int]]:
    if mysql_server.process is None:
        pytest.skip("an external server: the test cannot start a replica of it")
    replica = LocalMariaDBReplica(tmp_path, free_port())
    replica.start()
    try:
        file, pos = mysql_admin_exec(mysql_server, "SHOW MASTER STATUS")[0][:2]
        root, root_pw = MYSQL_ADMIN
        admin = Server("mysql", HOST, replica.port, root, root_pw, mysql_server.database, root, root_pw,
                       process=replica)
        mysql_admin_exec(admin, f"CHANGE MASTER TO MASTER_HOST='{HOST}', MASTER_PORT={mysql_server.port}, "
                                f"MASTER_USER='{root}', MASTER_PASSWORD='{root_pw}', MASTER_LOG_FILE='{file}', "
                                f"MASTER_LOG_POS={pos}, MASTER_USE_GTID=no")
        mysql_admin_exec(admin, "START SLAVE")
        yield admin, replica.port
    finally:
        replica.stop()


def test_mariadb_replica_and_primary_sides(mysql_server: Server, mysql_replica: tuple[Server, int]) -> None:
    admin, port = mysql_replica
    with mysql_connect(mysql_server) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS repl_t (id INT PRIMARY KEY) ENGINE=InnoDB")
        cur.execute("REPLACE INTO repl_t VALUES (1), (2), (3)")
    on_replica = MySQLSource("replica", parse_dsn(admin.dsn()), timeout_s=2.0)
    on_primary = MySQLSource("primary", mysql_server.target(), timeout_s=2.0)
    on_replica.connect()
    on_primary.connect()
    try:
        def running() -> Any:
            snap = on_replica.poll()
            rows = snap.panels["replica"]
            ok = isinstance(rows, list) and rows and ReplicaRow.of(rows[0]).sql_running == "Yes" \
                and ReplicaRow.of(rows[0]).io_running == "Yes" and ReplicaRow.of(rows[0]).lag_s is not None
            return snap if ok else False

        snap = retry(running, timeout=20, interval=0.3)
        row = ReplicaRow.of(snap.panels["replica"][0])
        assert row.primary == f"{HOST}:{mysql_server.port}" and row.lag_s is not None and row.lag_s < 30
        assert row.read_pos and row.exec_pos and row.last_error is None
        assert "channels 1" in _summary("mysql", snap) and "stopped 0" in _summary("mysql", snap)
        # the primary sees its replica's Binlog Dump session
        primary_snap = retry(lambda: (s := on_primary.poll()) and "1 replica(s) reading the binlog"
                             in _summary("mysql", s) and s, timeout=10, interval=0.3)
        # and says it replicates from nobody, or which grant would tell (the harness user has none)
        replica = primary_snap.panels["replica"]
        assert "not a replica" in replica.what or "GRANT SLAVE MONITOR" in replica.hint, replica
        # a stopped SQL thread is red, with the state the server reports
        mysql_admin_exec(admin, "STOP SLAVE SQL_THREAD")
        snap = retry(lambda: (s := on_replica.poll()) and ReplicaRow.of(s.panels["replica"][0]).sql_running == "No"
                     and s, timeout=10, interval=0.3)
        spec = _view("mysql", "repl").tables[0]
        rows = rows_for(spec, snap)
        assert isinstance(rows, list) and spec.alert is not None and spec.alert(rows[0]) == "red"
        assert "stopped 1" in _summary("mysql", snap)
        # with the SQL thread stopped, what the IO thread reads piles up unapplied, counted in bytes
        with mysql_connect(mysql_server) as conn, conn.cursor() as cur:
            cur.execute("REPLACE INTO repl_t VALUES (4), (5), (6)")
        behind = retry(lambda: (s := on_replica.poll()) and (ReplicaRow.of(s.panels["replica"][0]).unapplied_bytes
                                                              or 0) > 0 and s, timeout=10, interval=0.3)
        assert ReplicaRow.of(behind.panels["replica"][0]).relay_bytes
    finally:
        on_replica.close()
        on_primary.close()


# ---------------------------------------------------------------- PostgreSQL


class LocalPgStandby(LocalPostgres):
    name = "postgresql-standby"

    def __init__(self, root: Path, port: int, primary_port: int) -> None:
        super().__init__(root, port)
        self.primary_port = primary_port

    def _init(self) -> None:
        admin, admin_pw = PG_ADMIN
        _run([str(self.bin / "pg_basebackup"), "-D", str(self.datadir), "-R", "-X", "stream", "-c", "fast",
              "-d", f"host={HOST} port={self.primary_port} user={admin} password={admin_pw}"],
             self.dir / "basebackup.log", "pg_basebackup", as_postgres=True, cwd=self.dir)
        with open(self.datadir / "postgresql.conf", "a") as conf:
            conf.write(f"\nunix_socket_directories = '{self.socket_dir}'\n")

    def _after_first_start(self) -> None:
        pass  # roles and databases come from the primary


@pytest.fixture
def pg_standby(pg_server: Server) -> Iterator[Server]:
    if pg_server.process is None:
        pytest.skip("an external server: the test cannot start a standby of it")
    root = Path(tempfile.mkdtemp(prefix="benchtop-standby-"))  # pytest's tmp_path is closed to the postgres user
    root.chmod(0o755)
    standby = LocalPgStandby(root, free_port(), pg_server.port)
    try:
        standby.start()
        yield Server("postgresql", HOST, standby.port, pg_server.user, pg_server.password, pg_server.database,
                     pg_server.admin_user, pg_server.admin_password, process=standby)
    finally:
        standby.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_postgres_standby_and_primary_sides(pg_server: Server, pg_standby: Server) -> None:
    on_primary = PostgresSource("primary", pg_server.target(), timeout_s=2.0)
    on_standby = PostgresSource("standby", pg_standby.target(), timeout_s=2.0)
    on_primary.connect()
    on_standby.connect()
    try:
        with pg_connect(pg_server) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS repl_t (id int PRIMARY KEY)")
            conn.execute("INSERT INTO repl_t SELECT g FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING")

        def streaming() -> Any:
            snap = on_primary.poll()
            rows = snap.panels["replication"]
            return snap if isinstance(rows, list) and any(r["state"] == "streaming" and r["replay_lag_bytes"] is not None
                                                          for r in rows) else False

        snap = retry(streaming, timeout=20, interval=0.3)
        spec = _view("postgresql", "repl").tables[0]
        rows = rows_for(spec, snap)
        assert isinstance(rows, list) and rows[0]["replay_lag_bytes"] is not None
        assert "a primary" in _summary("postgresql", snap)

        def caught_up() -> Any:
            s = on_standby.poll()
            sb = StandbyPanel.of(s.panels)
            return s if sb and sb.in_recovery and sb.receiver_status == "streaming" and sb.replay_gap_bytes == 0 else False

        snap = retry(caught_up, timeout=20, interval=0.3)
        sb = StandbyPanel.of(snap.panels)
        assert sb is not None and sb.sender == f"{HOST}:{pg_server.port}"
        text = _summary("postgresql", snap)
        assert f"a standby of {HOST}:{pg_server.port}" in text and "receiver streaming" in text
        assert "not yet replayed 0 B" in text and "paused" not in text
        # a standby has no standbys of its own: it says what it is, not how to "fix" it
        replicas = snap.panels["replication"]
        assert "itself a standby" in replicas.what and not replicas.hint
        pg_admin_exec(pg_standby, "SELECT pg_wal_replay_pause()")
        try:
            paused = retry(lambda: (s := on_standby.poll()) and "replay is paused" in _summary("postgresql", s),
                           timeout=10, interval=0.3)
            assert paused
        finally:
            pg_admin_exec(pg_standby, "SELECT pg_wal_replay_resume()")
        # the primary's lag figures come back once the standby has replayed the inserts
        lag = retry(lambda: (r := on_primary.poll().panels["replication"]) and r[0]["replay_lag_bytes"] == 0 and r,
                    timeout=20, interval=0.3)
        assert lag[0]["client_addr"] == HOST
    finally:
        on_primary.close()
        on_standby.close()
