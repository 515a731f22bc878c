"""The monitor as a user without the rights its panels read with: a
PostgreSQL user lacking pg_monitor, a PgBouncer user not in stats_users.  The
panels they cannot read degrade with the grant that would show them; the
others go on, and the monitor does not end."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest

from benchtop.commands.monitor import main
from benchtop.sources.postgres import PostgresSource
from benchtop.sources.poller import SourcePoller
from benchtop.target import parse_dsn
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


@pytest.fixture
def nomon(pg_server: Server):
    """A role that may log in and read the tables, and nothing more (no pg_monitor): its DSN."""
    pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {NOMON}")
    pg_admin_exec(pg_server, f"CREATE ROLE {NOMON} LOGIN PASSWORD '{NOMON}'")
    pg_admin_exec(pg_server, f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {NOMON}")
    try:
        yield _dsn("postgresql", NOMON, NOMON, pg_server.host, pg_server.port, pg_server.database)
    finally:
        pg_admin_exec(pg_server, f"REASSIGN OWNED BY {NOMON} TO CURRENT_USER")
        pg_admin_exec(pg_server, f"DROP OWNED BY {NOMON}")
        pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {NOMON}")


def test_the_text_monitor_without_pg_monitor_names_the_grant_on_every_hidden_panel(nomon: str) -> None:
    out = io.StringIO()
    # was: TypeError: 'Missing' object is not iterable (the summary iterated the hidden activity panel)
    rc = main(["--pgsql", nomon, "--headless", "--count", "2", "--interval", "0.3"], out=out)
    assert rc == 0
    text = out.getvalue()
    assert "DOWN" not in text, text
    grant = f"GRANT pg_monitor TO {NOMON};"
    for label in ("sessions: ✗", "sessions now (active first; i shows idle; red = blocked): ✗",
                  "top statements in the interval (pg_stat_statements, by total time): ✗"):
        hidden = [line for line in text.splitlines() if label in line]
        assert len(hidden) == 2 and all(grant in line for line in hidden), (label, text)
    assert "db size" in text and "checkpoints timed/req" in text  # what this user may read goes on


async def test_the_run_dashboard_without_pg_monitor_goes_on_and_names_the_grant(nomon: str) -> None:
    from benchtop.screens.app import BenchtopApp
    from benchtop.screens.target_line import TargetTopLine
    from benchtop.screens.widgets.source_pane import SourcePane
    from tests.tui.fakes import FakeRunController

    poller = SourcePoller(PostgresSource("postgresql", parse_dsn(nomon)), interval=0.2)
    polls: list[float] = []
    app = BenchtopApp(FakeRunController(sample_delay=0.05), [poller])
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.screen.query_one(SourcePane)
            deadline = time.monotonic() + 20
            # was: the first poll's summary raised, the app ended, and the run was recorded as quit
            while len(polls) < 4:
                assert app.is_running and app.return_code is None, "the dashboard ended"
                assert time.monotonic() < deadline, f"{len(polls)} polls drawn in 20 s"
                if pane.last is not None and (not polls or pane.last.t != polls[-1]):
                    polls.append(pane.last.t)
                await pilot.pause(0.05)
            await pilot.pause()
            grant = f"GRANT pg_monitor TO {NOMON};"
            assert grant in str(app.screen.query_one(TargetTopLine).render())
            summary = str(pane.query_one(".summary").render())  # cut at the pane's width
            assert "sessions: ✗ other users' sessions and statements are hidden — GRANT pg_monitor" in summary
            for block in ("activity", "top_statements"):
                shown = str(pane.query_one(f"#block-{block} .missing").render())
                assert grant in shown, (block, shown)
            assert app.is_running and app.return_code is None
    finally:
        poller.close()
