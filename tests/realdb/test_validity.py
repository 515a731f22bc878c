"""Validity flags against real servers: durability settings are read from
the server and crash-unsafe ones are marked in summary.json, the text summary
and the report.  The session's servers are shared, so instead of restarting
them with unsafe settings the tests flip a dynamic global and always put it
back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchtop.record.analysis import target_validity
from tests.e2e.conftest import run_benchtop
from tests.fixtures.servers import mysql_admin_exec, pg_admin_exec, retry

pytestmark = pytest.mark.realdb


def _mysql_settings(server) -> dict:
    [(flush, sync_binlog, log_bin, doublewrite)] = mysql_admin_exec(
        server, "SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@log_bin, @@innodb_doublewrite")
    return {"flush": int(flush), "sync_binlog": int(sync_binlog), "log_bin": int(log_bin), "doublewrite": int(doublewrite)}


@pytest.fixture
def mysql_flush(mysql_server):
    """Lets a test set innodb_flush_log_at_trx_commit; restores it (and sync_binlog) afterwards."""
    before = _mysql_settings(mysql_server)
    try:
        yield lambda value: mysql_admin_exec(mysql_server, f"SET GLOBAL innodb_flush_log_at_trx_commit = {int(value)}")
    finally:
        mysql_admin_exec(mysql_server, f"SET GLOBAL innodb_flush_log_at_trx_commit = {before['flush']}")
        mysql_admin_exec(mysql_server, f"SET GLOBAL sync_binlog = {before['sync_binlog']}")
    assert _mysql_settings(mysql_server) == before


def test_mysql_settings_decide_validity(mysql_server, mysql_flush):
    settings = _mysql_settings(mysql_server)
    mysql_flush(1)
    mysql_admin_exec(mysql_server, "SET GLOBAL sync_binlog = 1")
    v = target_validity("mysql", mysql_server.target())
    assert v.settings["innodb_flush_log_at_trx_commit"] == 1
    if settings["doublewrite"]:
        assert v.status == "durable" and v.reasons == ()
    else:  # a test server started without the doublewrite buffer stays unsafe for that reason alone
        assert v.reasons == ("innodb_doublewrite=OFF",)
    mysql_flush(2)
    v = target_validity("mysql", mysql_server.target())
    assert v.status == "crash-unsafe" and "innodb_flush_log_at_trx_commit=2" in v.reasons
    if settings["log_bin"]:
        mysql_admin_exec(mysql_server, "SET GLOBAL sync_binlog = 0")
        assert "sync_binlog=0 with the binary log on" in target_validity("mysql", mysql_server.target()).reasons


def test_pg_synchronous_commit_off_is_unsafe(pg_server):
    [(value, source)] = pg_admin_exec(pg_server, "SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'")
    try:
        pg_admin_exec(pg_server, "ALTER SYSTEM SET synchronous_commit = off")
        pg_admin_exec(pg_server, "SELECT pg_reload_conf()")
        v = retry(lambda: (lambda v: v.status == "crash-unsafe" and v)(target_validity("postgresql", pg_server.target())))
        assert "synchronous_commit=off" in v.reasons and v.settings["synchronous_commit"] == "off"
    finally:
        if source == "configuration file" and value != "off":
            pg_admin_exec(pg_server, f"ALTER SYSTEM SET synchronous_commit = '{value}'")
        else:
            pg_admin_exec(pg_server, "ALTER SYSTEM RESET synchronous_commit")
        pg_admin_exec(pg_server, "SELECT pg_reload_conf()")
    retry(lambda: pg_admin_exec(pg_server, "SHOW synchronous_commit")[0][0] == value)


def test_unsafe_scenario_is_marked_everywhere(mysql_server, mysql_flush, tmp_path: Path):
    """A scenario on the admin account (which may change performance_schema)
    with crash-unsafe settings: summary.json, the text summary and the report
    all say so, and the instrumentation preset is applied and restored."""
    env = {"MYSQL_PWD": mysql_server.admin_password or ""}
    dsn = f"mysql://{mysql_server.admin_user}@{mysql_server.host}:{mysql_server.port}/{mysql_server.database}"
    size = ["--tables", "1", "--table-size", "300"]
    run_benchtop("cleanup", "--engine", "mysql", "--dsn", dsn, *size, env=env)
    prep = run_benchtop("prepare", "--engine", "mysql", "--dsn", dsn, *size, env=env)
    assert prep.returncode == 0, prep.stderr
    [(enabled_before,)] = mysql_admin_exec(
        mysql_server, "SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE ENABLED = 'YES'")
    try:
        mysql_flush(2)
        sc = tmp_path / "unsafe.toml"
        sc.write_text(f'engine = "mysql"\ndsn = "{dsn}"\nworkload = "oltp_point_select"\ntables = 1\n'
                      'table_size = 300\n[[step]]\nduration = 1\nthreads = 2\n'
                      'instrumentation = ["all_disabled", "default"]\n')
        out = tmp_path / "results"
        res = run_benchtop("scenario", str(sc), "--headless", "--out", str(out), env=env, timeout=60)
        assert res.returncode == 0, res.stderr
        assert "validity: CRASH-UNSAFE settings (innodb_flush_log_at_trx_commit=2" in res.stdout
        summary = json.loads((out / "summary.json").read_text())
        assert summary["validity"]["status"] == "crash-unsafe"
        assert [s["instrumentation"] for s in summary["steps"]] == ["all_disabled", "default"]
        assert all(s["tps"] > 0 for s in summary["steps"])
        timeline = (out / "timeline.jsonl").read_text()
        assert "instrumentation all_disabled" in timeline and "instrumentation default" in timeline
        assert (out / "monitor.jsonl").is_file()  # the target was monitored beside the load
        replayed = run_benchtop("replay", str(out), "--no-wait")
        assert replayed.returncode == 0 and "mysql" in replayed.stdout and "thds: 2" in replayed.stdout
        report = run_benchtop("report", str(out))
        assert report.returncode == 0 and "UNSAFE" in report.stdout and "CRASH-UNSAFE" in report.stdout
    finally:
        run_benchtop("cleanup", "--engine", "mysql", "--dsn", dsn, *size, env=env)
    [(enabled_after,)] = mysql_admin_exec(
        mysql_server, "SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE ENABLED = 'YES'")
    assert enabled_after == enabled_before
