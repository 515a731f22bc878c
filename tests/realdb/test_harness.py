"""The real-server harness itself: the servers it starts are usable as the
other tests assume, kill/restart works, the statement log attributes
statements to users, and the env-DSN path builds the right Server."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pymysql
import pytest

from benchtop.target import TargetError, parse_dsn
from tests.fixtures import local
from tests.fixtures.servers import (
    SERVER_POOL,
    Server,
    ServerPool,
    pooled_server,
    mysql_admin_exec,
    mysql_connect,
    pg_admin_exec,
    pg_connect,
    retry,
    server_from_env,
)

realdb = pytest.mark.realdb


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _refuses(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# ---------------------------------------------------------------- servers are usable


@realdb
def test_mysql_accepts_sbtest_with_monitor_grants(mysql_server: Server) -> None:
    assert parse_dsn(mysql_server.dsn()) == mysql_server.target()
    with mysql_connect(mysql_server) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT CURRENT_USER(), DATABASE(), @@performance_schema, @@max_connections, @@skip_name_resolve"
        )
        user, db, pfs, max_conn, skip_resolve = cur.fetchone()
        assert (user, db, pfs, skip_resolve) == ("sbtest@%", "sbtest", 1, 1)
        assert max_conn >= 1100
        cur.execute(
            "SELECT COUNT(*) FROM performance_schema.events_waits_summary_global_by_event_name"
        )
        assert cur.fetchone()[0] > 0
        cur.execute("SHOW ENGINE INNODB STATUS")  # needs PROCESS
        assert "LOG" in cur.fetchone()[2]
    # The socket path the Server gives works too.
    assert mysql_server.socket is not None
    with pymysql.connect(
        unix_socket=mysql_server.socket,
        user="sbtest",
        password="sbtest",
        database="sbtest",
    ) as conn:
        assert conn.open
    assert mysql_admin_exec(mysql_server, "SELECT CURRENT_USER()") == [
        ("root@127.0.0.1",)
    ]


@realdb
def test_pg_accepts_sbtest_with_pg_monitor(pg_server: Server) -> None:
    assert parse_dsn(pg_server.dsn()) == pg_server.target()
    with pg_connect(pg_server) as conn:
        row = conn.execute(
            "SELECT current_user, current_database(), pg_has_role('pg_monitor', 'member'),"
            " current_setting('max_connections')::int, current_setting('shared_buffers')"
        ).fetchone()
    assert row is not None
    assert row[:3] == ("sbtest", "sbtest", True)
    assert row[3] >= 1100 and row[4] == "128MB"
    with pytest.raises(
        psycopg.OperationalError, match="password authentication failed"
    ):
        psycopg.connect(
            host=pg_server.host,
            port=pg_server.port,
            user="sbtest",
            password="wrong",
            dbname="sbtest",
        )
    assert pg_admin_exec(
        pg_server, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
    ) == [(True,)]


@realdb
def test_pgbouncer_pools_into_pg(pgbouncer_server: Server, pg_server: Server) -> None:
    assert pgbouncer_server.dsn().startswith("pgbouncer://sbtest:sbtest@127.0.0.1:")
    assert pgbouncer_server.admin_dsn().endswith("/pgbouncer")
    with pg_connect(pgbouncer_server) as conn:
        # Transaction pooling: the backend is PostgreSQL's, reached through the pooler.
        assert conn.execute("SELECT current_setting('port')::int").fetchone() == (
            pg_server.port,
        )
        pools = pg_admin_exec(pgbouncer_server, "SHOW POOLS", as_dict=True)
    mine = [p for p in pools if (p["database"], p["user"]) == ("sbtest", "sbtest")]
    assert len(mine) == 1 and mine[0]["pool_mode"] == "transaction"
    assert mine[0]["sv_idle"] + mine[0]["sv_used"] + mine[0]["sv_active"] >= 1
    # sbtest is a stats user: it may read the console too.
    with (
        pg_connect(pgbouncer_server, dbname="pgbouncer") as console,
        psycopg.ClientCursor(console) as cur,
    ):
        cur.execute("SHOW STATS")
        assert "sbtest" in [r[0] for r in cur.fetchall()]


# ---------------------------------------------------------------- fault control


@realdb
def test_mysql_kill9_then_restart_keeps_port_and_data(mysql_server: Server) -> None:
    mysql_admin_exec(
        mysql_server,
        "CREATE TABLE IF NOT EXISTS sbtest.harness_kill (id INT PRIMARY KEY)",
    )
    mysql_admin_exec(mysql_server, "REPLACE INTO sbtest.harness_kill VALUES (42)")
    old_pid = mysql_server.pid
    assert old_pid is not None
    try:
        mysql_server.kill(signal.SIGKILL)
        assert not _pid_alive(old_pid)
        assert _refuses(mysql_server.port)
    finally:
        mysql_server.restart()
    assert mysql_server.pid not in (None, old_pid)
    assert mysql_admin_exec(mysql_server, "SELECT id FROM sbtest.harness_kill") == [
        (42,)
    ]
    mysql_admin_exec(mysql_server, "DROP TABLE sbtest.harness_kill")


@realdb
def test_pg_kill9_then_restart_recovers(pg_server: Server) -> None:
    with pg_connect(pg_server) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS harness_kill (id int PRIMARY KEY)")
        conn.execute("INSERT INTO harness_kill VALUES (7) ON CONFLICT DO NOTHING")
        old_pid = pg_server.pid
        assert old_pid is not None
        try:
            pg_server.kill(signal.SIGKILL)
            assert not _pid_alive(old_pid)
            with pytest.raises(psycopg.OperationalError):
                conn.execute("SELECT 1")
        finally:
            pg_server.restart()
    assert pg_server.pid not in (None, old_pid)
    with pg_connect(pg_server) as conn:
        assert conn.execute("SELECT id FROM harness_kill").fetchall() == [(7,)]
        conn.execute("DROP TABLE harness_kill")


@realdb
def test_pgbouncer_restart_after_kill(pgbouncer_server: Server) -> None:
    pgbouncer_server.kill(signal.SIGKILL)
    assert _refuses(pgbouncer_server.port)
    pgbouncer_server.restart()
    with pg_connect(pgbouncer_server) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


@realdb
def test_sigstop_hangs_mysql_until_sigcont(mysql_server: Server) -> None:
    mysql_server.kill(signal.SIGSTOP)
    try:
        with pytest.raises(pymysql.err.OperationalError):
            mysql_connect(mysql_server, connect_timeout=1, read_timeout=1)
    finally:
        mysql_server.kill(signal.SIGCONT)
    retry(lambda: mysql_connect(mysql_server).close(), timeout=10)


def test_a_start_failure_reports_the_log_tail(tmp_path: Path) -> None:
    class Broken(local.LocalProcess):
        name = "broken"

        def _init(self) -> None:
            pass

        def _argv(self) -> list[str]:
            return ["sh", "-c", "echo 'FATAL: bad setting frobnicate'; exit 3"]

        def _ping(self) -> None:
            raise OSError("not up")

    with pytest.raises(
        local.HarnessError,
        match=r"(?s)exited with code 3.*FATAL: bad setting frobnicate",
    ):
        Broken(tmp_path, local.free_port()).start()


def test_free_port_is_bindable_and_below_ephemeral_range() -> None:
    port = local.free_port()
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert 20000 <= port < low
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


# ---------------------------------------------------------------- statement log


@realdb
def test_mysql_statement_log_attributes_statements_to_users(
    mysql_server: Server,
) -> None:
    with mysql_server.statement_log() as log:
        with mysql_connect(mysql_server) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1 AS harness_first")
            middle = log.mark()
            cur.execute("SELECT %s AS harness_second", ("x",))
        mysql_admin_exec(mysql_server, "SELECT 'admin ran this'")
        mine = log.statements(user="sbtest")
        assert "SELECT 1 AS harness_first" in mine
        assert "SELECT 'x' AS harness_second" in mine
        assert not any("admin ran this" in s for s in mine)
        assert any("admin ran this" in s for s in log.statements(user="root"))
        assert (
            log.statements(user="sbtest", until=middle)[-1]
            == "SELECT 1 AS harness_first"
        )
        assert "SELECT 1 AS harness_first" not in log.statements(
            user="sbtest", since=middle
        )
    assert mysql_admin_exec(mysql_server, "SELECT @@general_log") == [(0,)]


@realdb
def test_pg_statement_log_sees_simple_and_extended_protocol(pg_server: Server) -> None:
    with pg_server.statement_log() as log:
        with pg_connect(pg_server) as conn:
            conn.execute("SELECT 1 AS harness_simple")
            conn.execute("SELECT %s::int AS harness_extended", (5,))
        mine = log.statements(user="sbtest")
        assert "SELECT 1 AS harness_simple" in mine
        assert "SELECT $1::int AS harness_extended" in mine
        assert all("harness" not in s for s in log.statements(user="postgres"))
    assert pg_admin_exec(pg_server, "SHOW log_statement") == [("none",)]


# ---------------------------------------------------------------- env-DSN path (no servers)


def test_env_dsn_builds_external_servers() -> None:
    env = {
        "BENCHTOP_TEST_MYSQL_DSN": "mysql://sbtest:sbtest@127.0.0.1:23306/sbtest",
        "BENCHTOP_TEST_MYSQL_ADMIN_DSN": "mysql://root:r%40ot@127.0.0.1:23306",
        "BENCHTOP_TEST_PGSQL_DSN": "postgresql://sbtest:sbtest@127.0.0.1:25432/sbtest",
        "BENCHTOP_TEST_PGBOUNCER_DSN": "postgresql://sbtest:sbtest@127.0.0.1:26432/sbtest",
        "BENCHTOP_TEST_PGBOUNCER_ADMIN_DSN": "pgbouncer://postgres:pw@127.0.0.1:26432/pgbouncer",
    }
    my = server_from_env("mysql", env)
    assert my == Server(
        kind="mysql",
        host="127.0.0.1",
        port=23306,
        user="sbtest",
        password="sbtest",
        database="sbtest",
        admin_user="root",
        admin_password="r@ot",
    )
    assert my.pid is None and my.datadir is None
    assert my.dsn() == env["BENCHTOP_TEST_MYSQL_DSN"]
    assert my.admin_dsn() == "mysql://root:r%40ot@127.0.0.1:23306/sbtest"
    pg = server_from_env("postgresql", env)
    assert pg is not None and (pg.kind, pg.port, pg.admin_user, pg.admin_password) == (
        "postgresql",
        25432,
        "sbtest",
        "sbtest",
    )
    bouncer = server_from_env("pgbouncer", env)
    assert (
        bouncer is not None
        and bouncer.kind == "pgbouncer"
        and bouncer.target().kind == "pgbouncer"
    )
    assert bouncer.admin_dsn() == "pgbouncer://postgres:pw@127.0.0.1:26432/pgbouncer"
    assert server_from_env("mysql", {}) is None


def test_env_dsn_defaults_and_errors() -> None:
    s = server_from_env("mysql", {"BENCHTOP_TEST_MYSQL_DSN": "mysql://db.example"})
    assert s is not None and (s.port, s.user, s.password, s.database) == (
        3306,
        "sbtest",
        None,
        "sbtest",
    )
    with pytest.raises(
        TargetError,
        match="^BENCHTOP_TEST_PGSQL_DSN must be a postgresql:// DSN, not mysql://$",
    ):
        server_from_env("postgresql", {"BENCHTOP_TEST_PGSQL_DSN": "mysql://u@h/db"})
    with pytest.raises(TargetError, match="^BENCHTOP_TEST_MYSQL_DSN: bad port"):
        server_from_env("mysql", {"BENCHTOP_TEST_MYSQL_DSN": "mysql://u@h:notaport/db"})


def test_env_dsn_server_has_no_process_control() -> None:
    pool = ServerPool(
        {"BENCHTOP_TEST_MYSQL_DSN": "mysql://sbtest:sbtest@127.0.0.1:1/sbtest"}
    )
    try:
        server = pool.get("mysql")
        assert (
            server.process is None and pool.root is None
        )  # nothing started, no folder made
        for action in (lambda: server.kill(), server.restart, server.statement_log):
            with pytest.raises(
                pytest.skip.Exception,
                match="started by the test harness, not .*BENCHTOP_TEST_",
            ):
                action()
    finally:
        pool.close()


def _fixture_with_missing_mariadb(
    monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    monkeypatch.setattr(local, "_which", lambda *names: None)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pool = ServerPool({})
    try:
        pooled_server(SimpleNamespace(config=SimpleNamespace(stash={SERVER_POOL: pool})), "mysql")  # type: ignore[arg-type]
    finally:
        pool.close()


def test_missing_server_fails_loudly_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        pytest.fail.Exception, match="apt-get install mariadb-server.*CI is set"
    ):
        _fixture_with_missing_mariadb(monkeypatch, "true")


def test_missing_server_skips_with_install_hint_outside_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(
        pytest.skip.Exception,
        match="apt-get install mariadb-server postgresql pgbouncer",
    ):
        _fixture_with_missing_mariadb(monkeypatch, None)


# ---------------------------------------------------------------- docker-compose.yml and its doc

REPO = Path(__file__).resolve().parents[2]


def test_docker_compose_matches_the_documented_env_dsns() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["mysql"]["image"] == "mysql:8.4"
    assert services["postgres"]["image"] == "postgres:17"
    assert services["proxysql"]["image"].startswith("proxysql/proxysql:2.7")
    assert "pgbouncer" in services["pgbouncer"]["image"]
    published = {
        int(p.split(":")[1]): name for name, s in services.items() for p in s["ports"]
    }
    assert all(
        p.startswith("127.0.0.1:") for s in services.values() for p in s["ports"]
    )

    doc = (REPO / "docs" / "testing-with-docker.md").read_text()
    env = dict(
        line.removeprefix("export ").split("=", 1)
        for line in doc.splitlines()
        if line.startswith("export BENCHTOP_TEST_")
    )
    assert set(env) == {
        f"BENCHTOP_TEST_{k}_{s}DSN"
        for k in ("MYSQL", "PGSQL", "PGBOUNCER")
        for s in ("", "ADMIN_")
    } | {"BENCHTOP_TEST_PROXYSQL_DSN"}
    expected_service = {
        "mysql": "mysql",
        "postgresql": "postgres",
        "pgbouncer": "pgbouncer",
        "proxysql": "proxysql",
    }
    for kind, service in expected_service.items():
        server = server_from_env(kind, env)
        assert server is not None and published[server.port] == service
    my, pg = server_from_env("mysql", env), server_from_env("postgresql", env)
    assert my is not None and pg is not None
    assert services["mysql"]["environment"]["MYSQL_ROOT_PASSWORD"] == my.admin_password
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == pg.admin_password
