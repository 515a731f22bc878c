"""Settings a run killed with SIGKILL left changed: recorded before the
change, named by the next run and monitor, put back by `benchtop restore`.
(Before: MariaDB kept 995/995 instruments and 15 consumers on, PostgreSQL's
postgresql.auto.conf kept track_io_timing, track_wal_io_timing and
pg_stat_statements.track, and the next run said nothing.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchtop.target.leftovers import ChangeRecord
from tests.e2e.conftest import ROOT, run_benchtop
from tests.fixtures.servers import Server, mysql_admin_exec, pg_admin_exec, retry

pytestmark = pytest.mark.realdb
TABLES = ["--tables", "1", "--table-size", "1000", "--workload", "oltp_point_select"]


def _target_args(server: Server) -> list[str]:
    engine = "postgres" if server.kind == "postgresql" else "mysql"
    return ["--engine", engine, "--dsn", server.dsn(), "--admin-dsn", server.admin_dsn()]


def _killed_while_instrumented(server: Server, changed) -> None:
    """A run with --instrumentation all_enabled, killed with SIGKILL once the server shows the change."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", *_target_args(server), *TABLES,
                             "--instrumentation", "all_enabled", "--time", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env=env, cwd=str(ROOT))
    try:
        retry(changed, timeout=60, interval=0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)


def _pg_state(server: Server) -> list[tuple]:
    return pg_admin_exec(server, "SELECT name, setting, coalesce(sourcefile, '') LIKE '%postgresql.auto.conf' "
                                 "FROM pg_settings WHERE name IN ('track_io_timing', 'track_wal_io_timing', "
                                 "'pg_stat_statements.track') ORDER BY name")


def _perf_schema(server: Server) -> tuple[list, list]:
    return (mysql_admin_exec(server, "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments ORDER BY NAME"),
            mysql_admin_exec(server, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME"))


def _prepared(server: Server) -> None:
    engine = _target_args(server)[:4]
    run_benchtop("cleanup", *engine, *TABLES)
    res = run_benchtop("prepare", *engine, *TABLES)
    assert res.returncode == 0, res.stderr


def test_postgres_settings_left_by_a_killed_run_are_named_and_restored(pg_server: Server) -> None:
    pg_admin_exec(pg_server, "ALTER SYSTEM RESET track_io_timing")
    pg_admin_exec(pg_server, "SELECT pg_reload_conf()")
    before = _pg_state(pg_server)
    assert ("track_io_timing", "off", False) in before
    _prepared(pg_server)
    record = ChangeRecord(pg_server.target())
    _killed_while_instrumented(pg_server, lambda: ("track_io_timing", "on", True) in _pg_state(pg_server))
    assert ("track_io_timing", "on", True) in _pg_state(pg_server) and record.path.exists()

    engine = _target_args(pg_server)[:4]
    run = run_benchtop("--headless", *engine, *TABLES, "--time", "1")
    assert run.returncode == 0, run.stderr
    named = [line for line in run.stderr.splitlines() if "never put back" in line]
    assert len(named) == 1, run.stderr
    for part in ("track_io_timing (was off)", "track_wal_io_timing (was off)", "pg_stat_statements.track (was",
                 "benchtop restore --engine postgres"):
        assert part in named[0], named[0]
    monitor = run_benchtop("monitor", "--headless", "--count", "1", "--pgsql", pg_server.dsn())
    assert monitor.returncode == 0 and "track_io_timing (was off)" in monitor.stderr, monitor.stderr

    res = run_benchtop("restore", *_target_args(pg_server))
    assert res.returncode == 0, res.stderr
    assert "restored on" in res.stdout and "track_io_timing (was off)" in res.stdout, res.stdout
    assert _pg_state(pg_server) == before  # the values, and postgresql.auto.conf without them
    assert not record.path.exists()
    again = run_benchtop("restore", *_target_args(pg_server))
    assert again.returncode == 0 and "nothing to restore" in again.stdout, again.stdout + again.stderr
    quiet = run_benchtop("--headless", *engine, *TABLES, "--time", "1")
    assert quiet.returncode == 0 and "never put back" not in quiet.stderr, quiet.stderr


def test_mysql_instruments_left_by_a_killed_run_are_named_and_restored(mysql_server: Server) -> None:
    before = _perf_schema(mysql_server)
    _prepared(mysql_server)

    def all_on() -> bool:
        return {r[1] for r in _perf_schema(mysql_server)[1]} == {"YES"}

    assert not all_on()
    _killed_while_instrumented(mysql_server, all_on)
    run = run_benchtop("--headless", *_target_args(mysql_server)[:4], *TABLES, "--time", "1")
    assert run.returncode == 0, run.stderr
    on = sum(1 for r in before[0] if r[1] == "YES")
    consumers = sum(1 for r in before[1] if r[1] == "YES")
    assert (f"performance_schema: {on} of {len(before[0])} instruments and {consumers} of {len(before[1])} "
            "consumers were on") in run.stderr, run.stderr
    res = run_benchtop("restore", *_target_args(mysql_server))
    assert res.returncode == 0, res.stderr
    assert _perf_schema(mysql_server) == before


def test_a_run_that_restores_removes_its_record_and_one_after_a_kill_restores_the_first_values(
        pg_server: Server) -> None:
    pg_admin_exec(pg_server, "ALTER SYSTEM RESET track_io_timing")
    pg_admin_exec(pg_server, "SELECT pg_reload_conf()")
    before = _pg_state(pg_server)
    _prepared(pg_server)
    record = ChangeRecord(pg_server.target())
    _killed_while_instrumented(pg_server, lambda: ("track_io_timing", "on", True) in _pg_state(pg_server))
    # a second run changes them again: what it puts back is what the first run found, not what it left
    res = run_benchtop("--headless", *_target_args(pg_server), *TABLES, "--instrumentation", "io_timing",
                       "--time", "1")
    assert res.returncode == 0, res.stderr
    assert _pg_state(pg_server) == before
    assert not record.path.exists() and not any(Path(record.path.parent).glob("*.json"))
