"""The monitor as a user without the rights its panels read with: a
PostgreSQL user lacking pg_monitor, a PgBouncer user not in stats_users.  The
panels they cannot read degrade with the grant that would show them; the
others go on, and the monitor does not end."""

from __future__ import annotations

import io
import json
import threading

import pytest

from benchtop.commands.monitor import main
from tests.fixtures.dbhelpers import pg_admin_exec, pg_connect
from tests.fixtures.servers import Server, _dsn

pytestmark = pytest.mark.realdb
NOMON = "nomonitor"


def monitor_lines(*args: str, count: int = 4) -> list[dict]:
    out = io.StringIO()
    rc = main([*args, "--headless", "--json", "--count", str(count), "--interval", "0.3"], out=out)
    assert rc == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_postgres_user_without_pg_monitor_degrades_panels(pg_server: Server) -> None:
    pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {NOMON}")
    pg_admin_exec(pg_server, f"CREATE ROLE {NOMON} LOGIN PASSWORD '{NOMON}'")
    busy, read = threading.Event(), threading.Event()

    def others() -> None:  # another user's sessions and statements, which it may not see
        with pg_connect(pg_server) as conn:
            busy.set()
            for _ in range(30):  # until the monitor has read (3 s at most)
                conn.execute("SELECT count(*) FROM pg_class")
                conn.execute("SELECT pg_sleep(0.1)")
                if read.is_set():
                    break

    th = threading.Thread(target=others)
    th.start()
    try:
        busy.wait(10)
        lines = monitor_lines("--pgsql", _dsn("postgresql", NOMON, NOMON, pg_server.host, pg_server.port,
                                               pg_server.database))
    finally:
        read.set()
        th.join()
        pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {NOMON}")
    hint = f"GRANT pg_monitor TO {NOMON};"
    for line in lines:
        pg = line["sources"]["postgresql"]
        assert pg["ok"], pg.get("error")  # was DOWN: TypeError every other poll
        for panel in ("sessions", "wait_events", "activity", "top_statements"):
            assert hint in pg[panel]["hint"], (panel, pg[panel])
        # what this user may read goes on
        assert isinstance(pg["tables"], list) and pg["database"]["name"] == pg_server.database
        assert "missing" not in pg["checkpoints"] and "missing" not in pg["settings"]


def test_pgbouncer_user_without_stats_rights_degrades_the_pgbouncer_panels(pg_server: Server,
                                                                            pgbouncer_server: Server) -> None:
    userlist = pgbouncer_server.process.dir / "userlist.txt"
    before = userlist.read_text()
    pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {NOMON}")
    pg_admin_exec(pg_server, f"CREATE ROLE {NOMON} LOGIN PASSWORD '{NOMON}'")
    userlist.write_text(before + f'"{NOMON}" "{NOMON}"\n')
    pg_admin_exec(pgbouncer_server, "RELOAD")
    try:
        lines = monitor_lines("--pgsql", pg_server.dsn(), "--pgbouncer",
                              _dsn("pgbouncer", NOMON, NOMON, pgbouncer_server.host, pgbouncer_server.port, "pgbouncer"))
    finally:
        userlist.write_text(before)
        pg_admin_exec(pgbouncer_server, "RELOAD")
        pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {NOMON}")
    assert len(lines) == 4
    for line in lines:
        bouncer, pg = line["sources"]["pgbouncer"], line["sources"]["postgresql"]
        for panel in ("pools", "stats", "clients", "servers", "lists"):
            assert bouncer[panel]["missing"] == "not permitted", (panel, bouncer)
            assert f"add {NOMON} to stats_users in pgbouncer.ini" in bouncer[panel]["hint"]
        assert pg["ok"] and isinstance(pg["sessions"]["total"], int)  # the other panels go on
