"""Instrumentation presets applied live and restored exactly."""

from __future__ import annotations

import pytest

from benchtop.target.instrumentation import (
    MYSQL_PRESET_NAMES,
    InstrumentationControl,
    InstrumentationError,
)
from benchtop.target import Target
from tests.fixtures.servers import (
    Server,
    mysql_admin_exec,
    pg_admin_exec,
    pg_connect,
    retry,
)

pytestmark = pytest.mark.realdb


def _admin_target(server: Server) -> Target:
    return Target(
        kind=server.kind,
        host=server.host,
        port=server.port,
        user=server.admin_user,
        password=server.admin_password,
        database=server.database,
    )


def _perf_schema_state(server: Server) -> tuple[list, list]:
    return (
        mysql_admin_exec(server, "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments ORDER BY NAME"),
        mysql_admin_exec(server, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME"),
    )


def _enabled(server: Server, like: str) -> set[str]:
    rows = mysql_admin_exec(
        server,
        "SELECT DISTINCT CONCAT(ENABLED, '/', TIMED) FROM performance_schema.setup_instruments WHERE NAME LIKE %s",
        (like,),
    )
    return {r[0] for r in rows}


def test_mysql_presets_apply_and_restore_exactly(mysql_server: Server) -> None:
    before = _perf_schema_state(mysql_server)
    with InstrumentationControl(_admin_target(mysql_server)) as ctl:
        ctl.apply("waits_only")
        assert _enabled(mysql_server, "wait/%") == {"YES/YES"}
        assert _enabled(mysql_server, "statement/%") == {"NO/NO"}
        ctl.apply("stages_and_statements")
        assert _enabled(mysql_server, "stage/%") == {"YES/YES"} == _enabled(mysql_server, "statement/%")
        consumers = dict(mysql_admin_exec(mysql_server, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers"))
        assert consumers["events_statements_current"] == "YES" and consumers["events_waits_current"] == "NO"
        ctl.apply("all_disabled")
        # memory/performance_schema/* always stays on: the server refuses to turn it off
        for cls in ("wait/%", "stage/%", "statement/%", "idle", "memory/sql/%"):
            assert _enabled(mysql_server, cls) == {"NO/NO"}, cls
        ctl.apply("default")
        assert _perf_schema_state(mysql_server) == before
        for preset in MYSQL_PRESET_NAMES:
            ctl.apply(preset)
        assert [e.preset for e in ctl.events][-len(MYSQL_PRESET_NAMES) :] == list(MYSQL_PRESET_NAMES)
    assert ctl.events[-1].preset == "restored"
    assert _perf_schema_state(mysql_server) == before


def test_restore_after_the_connection_was_lost(mysql_server: Server) -> None:
    before = _perf_schema_state(mysql_server)
    ctl = InstrumentationControl(_admin_target(mysql_server))
    ctl.apply("all_enabled")
    assert ctl._my is not None
    mysql_admin_exec(mysql_server, f"KILL {ctl._my.thread_id()}")
    assert ctl.restore() is True
    ctl.close()
    assert _perf_schema_state(mysql_server) == before


def test_monitor_user_without_update_gets_a_grant_hint(mysql_server: Server) -> None:
    ctl = InstrumentationControl(mysql_server.target())
    with pytest.raises(InstrumentationError, match="needs UPDATE ON performance_schema.setup_instruments"):
        ctl.apply("all_enabled")
    ctl.close()


def _setting(server: Server, name: str) -> str:
    # a fresh session as the load's user: ALTER SYSTEM + reload must reach it
    with pg_connect(server) as conn:
        return conn.execute(f"SHOW {name}").fetchone()[0]


def test_pg_settings_reach_other_sessions_and_are_restored(pg_server: Server) -> None:
    before = {n: _setting(pg_server, n) for n in ("track_io_timing", "track_wal_io_timing", "pg_stat_statements.track")}
    with InstrumentationControl(_admin_target(pg_server)) as ctl:
        ctl.apply("all_enabled")
        retry(lambda: _setting(pg_server, "track_io_timing") == "on", timeout=10)
        assert _setting(pg_server, "pg_stat_statements.track") == "all"
        ctl.apply("all_disabled")
        retry(lambda: _setting(pg_server, "track_io_timing") == "off", timeout=10)
        assert _setting(pg_server, "pg_stat_statements.track") == "none"
    retry(lambda: {n: _setting(pg_server, n) for n in before} == before, timeout=10)
    auto = pg_admin_exec(
        pg_server,
        "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND name LIKE 'track%'",
    )
    assert auto == [(0,)]
