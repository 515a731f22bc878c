"""The experiments of issue 14 against the harness's servers: the insert
benchmark's groups (an inserter held at its rate beside closed-loop
queriers), settings sweeps applied per step, visible in each step's validity
and restored at the end, and hooks."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import run_benchtop
from tests.fixtures.servers import mysql_admin_exec, pg_admin_exec

pytestmark = pytest.mark.realdb

IB = ["--workload", "insert_benchmark", "--rows", "2000"]


def _dsn(server) -> str:
    return f"{server.kind}://{server.user}@{server.host}:{server.port}/{server.database}"


def bt(server, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    engine = "mysql" if server.kind == "mysql" else "postgres"
    env = {"MYSQL_PWD": server.password or ""} if server.kind == "mysql" else {"PGPASSWORD": server.password or ""}
    return run_benchtop(*args, "--engine", engine, "--dsn", _dsn(server), env=env, timeout=timeout)


def _summary(res: subprocess.CompletedProcess[str]) -> dict:
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines() if '"summary"' in line][-1]


def _fast_commits(server):
    """The harness's servers flush every commit to a slow shared disk (a
    single inserter could not reach 1,000/s there): commits are made cheap
    for the test and put back."""
    if server.kind == "mysql":
        [(flush, sync)] = mysql_admin_exec(server, "SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog")
        mysql_admin_exec(server, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        mysql_admin_exec(server, "SET GLOBAL sync_binlog = 0")
        return lambda: (mysql_admin_exec(server, f"SET GLOBAL innodb_flush_log_at_trx_commit = {flush}"),
                        mysql_admin_exec(server, f"SET GLOBAL sync_binlog = {sync}"))
    [(source,)] = pg_admin_exec(server, "SELECT source FROM pg_settings WHERE name = 'synchronous_commit'")
    assert source != "configuration file", "the test would lose the file's setting"
    pg_admin_exec(server, "ALTER SYSTEM SET synchronous_commit = off")
    pg_admin_exec(server, "SELECT pg_reload_conf()")
    return lambda: (pg_admin_exec(server, "ALTER SYSTEM RESET synchronous_commit"),
                    pg_admin_exec(server, "SELECT pg_reload_conf()"))


# ten closed-loop queriers leave the harness's MariaDB on two shared cores no CPU for 1,000
# inserts/s (its inserts then take 1.2 ms at the median): there the queriers are two
@pytest.mark.parametrize("kind, queriers", [("mysql", 2), ("postgresql", 10)])
def test_insert_benchmark_i1_q10_holds_the_inserter_rate(kind, queriers, request) -> None:
    server = request.getfixturevalue("mysql_server" if kind == "mysql" else "pg_server")
    bt(server, "cleanup", *IB)
    assert bt(server, "prepare", *IB).returncode == 0
    put_back = _fast_commits(server)
    try:
        s = _summary(bt(server, "--headless", "--json", *IB, "--preset", "i1.q10",
                        "--group", f"queriers.threads={queriers}", "--time", "3"))
        g = s["groups"]
        assert set(g) == {"inserters", "queriers"}
        assert g["inserters"]["threads"] == 1 and g["queriers"]["threads"] == queriers
        # the inserter's schedule is held: every ticket of the 3 s taken (1%, and the one due at t = 0)
        assert abs(g["inserters"]["tps"] - 1000) <= 1000 * 0.01 + 1 / 3, g["inserters"]
        assert g["inserters"]["rate"] == 1000
        assert g["queriers"]["rate"] == 0 and g["queriers"]["tps"] > 0
        assert s["txn_types"]["insert"] == pytest.approx(g["inserters"]["tps"] * s["time_s"], rel=0.02)
    finally:
        put_back()
        bt(server, "cleanup", *IB)


def _scenario(tmp_path: Path, server, body: str) -> Path:
    engine = "mysql" if server.kind == "mysql" else "postgres"
    p = tmp_path / "sweep.toml"
    p.write_text(f'engine = "{engine}"\ndsn = "{_dsn(server)}"\nworkload = "oltp_point_select"\n'
                 f'tables = 1\ntable_size = 1000\n\n{body}')
    return p


def _scenario_run(server, path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"MYSQL_PWD": server.password or ""} if server.kind == "mysql" else {"PGPASSWORD": server.password or ""}
    return run_benchtop("scenario", str(path), "--headless", "--out", str(out), *extra, env=env, timeout=120)


@pytest.fixture(scope="module")  # the module's tests only read them (a server restart keeps them)
def point_select_tables(mysql_server):
    T = ["--workload", "oltp_point_select", "--tables", "1", "--table-size", "1000"]
    mysql_admin_exec(mysql_server, f"GRANT SUPER ON *.* TO '{mysql_server.user}'@'%'")
    mysql_admin_exec(mysql_server, f"GRANT SUPER ON *.* TO '{mysql_server.user}'@'localhost'")
    bt(mysql_server, "cleanup", *T)
    assert bt(mysql_server, "prepare", *T).returncode == 0
    yield
    bt(mysql_server, "cleanup", *T)


def test_mysql_settings_sweep_applies_shows_validity_and_restores(mysql_server, point_select_tables, tmp_path) -> None:
    [(orig,)] = mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")
    path = _scenario(tmp_path, mysql_server, '[[step]]\nduration = "1s"\nthreads = 1\n'
                                            'settings = { sync_binlog = [0, 1] }\nafter = ["SELECT 1"]\n')
    dry = _scenario_run(mysql_server, path, tmp_path / "dry", "--dry-run")
    assert "change: SET GLOBAL sync_binlog = 0" in dry.stdout and "restored" in dry.stdout
    res = _scenario_run(mysql_server, path, tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert "changes server settings sync_binlog" in res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    steps = summary["steps"]
    assert [s["settings"] for s in steps] == [{"sync_binlog": 0}, {"sync_binlog": 1}]
    assert [s["validity"]["settings"]["sync_binlog"] for s in steps] == [0, 1]
    assert [h["when"] for h in summary["hooks"]] == ["after", "after"]
    assert summary["settings_restored"] == [f"sync_binlog = {orig}"]
    [(after,)] = mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")
    assert after == orig
    timeline = (tmp_path / "out" / "timeline.jsonl").read_text()
    assert "settings sync_binlog = 1" in timeline and "settings restored" in timeline
    report = run_benchtop("report", str(tmp_path / "out"))
    assert report.returncode == 0, report.stderr
    assert "#1 [sync_binlog=0]" in report.stdout and "#2 [sync_binlog=1]" in report.stdout, report.stdout


def test_pg_settings_sweep_restores_synchronous_commit(pg_server, tmp_path) -> None:
    T = ["--workload", "oltp_point_select", "--tables", "1", "--table-size", "1000"]
    [(orig, source)] = pg_admin_exec(pg_server, "SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'")
    bt(pg_server, "cleanup", *T)
    assert bt(pg_server, "prepare", *T).returncode == 0
    grants = [f"ALTER SYSTEM ON PARAMETER synchronous_commit TO {pg_server.user}",
              f"EXECUTE ON FUNCTION pg_reload_conf() TO {pg_server.user}", f"pg_checkpoint TO {pg_server.user}"]
    for grant in grants:
        pg_admin_exec(pg_server, f"GRANT {grant}")
    try:
        path = _scenario(tmp_path, pg_server, '[[step]]\nduration = "1s"\nthreads = 1\n'
                                              'settings = { synchronous_commit = ["off", "on"] }\n'
                                              'before = ["CHECKPOINT"]\n')
        res = _scenario_run(pg_server, path, tmp_path / "out")
        assert res.returncode == 0, res.stderr
        steps = json.loads((tmp_path / "out" / "summary.json").read_text())["steps"]
        assert [s["validity"]["settings"]["synchronous_commit"] for s in steps] == ["off", "on"]
        assert pg_admin_exec(pg_server, "SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'") \
            == [(orig, source)]
    finally:
        for grant in grants:
            pg_admin_exec(pg_server, "REVOKE " + grant.replace(" TO ", " FROM "))
        bt(pg_server, "cleanup", *T)


def test_failed_shell_hook_ends_the_scenario_and_still_restores(mysql_server, point_select_tables, tmp_path) -> None:
    [(orig,)] = mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")
    new = 0 if int(orig) else 1
    path = _scenario(tmp_path, mysql_server,
                     f'[[step]]\nduration = "1s"\nsettings = {{ sync_binlog = {new} }}\n'
                     '[[step]]\nduration = "1s"\nbefore = { shell = "exit 3", timeout = "5s" }\n')
    res = _scenario_run(mysql_server, path, tmp_path / "out")
    assert res.returncode != 0 and "exit status 3" in res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["hooks"][0]["ok"] is False
    [(after,)] = mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")
    assert after == orig


@pytest.mark.parametrize("kind", ["mysql", "postgresql"])
def test_query_timeout_rides_out_a_hung_server(kind, request, tmp_path: Path) -> None:
    import signal

    from tests.realdb.test_faults import SIZE, intervals_of, recovered, start_run, stop_once, wait_intervals

    server = request.getfixturevalue("mysql_server" if kind == "mysql" else "pg_server")
    assert bt(server, "prepare", "--workload", "oltp_point_select", *SIZE).returncode in (0, 1)
    out = tmp_path / "res"
    proc = start_run(server, out, 60, "--query-timeout", "0.5")

    def signal_server(sig: int) -> None:
        """The server and, for PostgreSQL, its backends (separate processes)."""
        server.kill(sig)
        for child in subprocess.run(["ps", "-o", "pid=", "--ppid", str(server.pid)], capture_output=True,
                                    text=True).stdout.split():
            try:
                os.kill(int(child), sig)
            except ProcessLookupError:  # a backend that just ended
                pass

    try:
        wait_intervals(out, 1)
        signal_server(signal.SIGSTOP)
        time.sleep(2)
        signal_server(signal.SIGCONT)
        stdout, stderr = stop_once(proc, lambda: recovered(intervals_of(out)))
    finally:
        signal_server(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["errors_by_kind"].get("query_timeout", 0) >= 1, summary["errors_by_kind"]
    assert summary["reconnects"] >= 1
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    assert recovered(intervals), intervals


def test_settings_restored_after_sigterm(mysql_server, point_select_tables, tmp_path) -> None:
    import signal

    from tests.e2e.conftest import ROOT

    [(orig,)] = mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")
    new = 0 if int(orig) else 1
    path = _scenario(tmp_path, mysql_server, f'[[step]]\nduration = "30s"\nsettings = {{ sync_binlog = {new} }}\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT), MYSQL_PWD=mysql_server.password or "")
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "scenario", str(path), "--headless", "--out",
                             str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(ROOT))
    try:
        deadline = time.monotonic() + 30
        while mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")[0][0] != new:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        time.sleep(0.2)  # the step runs under the changed setting
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert mysql_admin_exec(mysql_server, "SELECT @@sync_binlog")[0][0] == orig
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped_by"].startswith("signal") and summary["settings_restored"] == [f"sync_binlog = {orig}"]


def test_shell_hook_that_restarts_the_server_is_survived(mysql_server, point_select_tables, tmp_path) -> None:
    """The hook kills the harness's MariaDB; the harness brings it back (as a
    service manager would); benchtop waits for it and runs the next step."""
    import threading

    pid = mysql_server.pid
    path = _scenario(tmp_path, mysql_server, '[[step]]\nduration = "1s"\n'
                                            f'[[step]]\nduration = "2s"\nbefore = {{ shell = "kill -9 {pid}", timeout = "5s" }}\n')

    def gone() -> bool:  # exited: no process, or a zombie the harness has not reaped yet
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            return True

    def bring_back() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if gone():
                mysql_server.restart()
                return
            time.sleep(0.05)

    helper = threading.Thread(target=bring_back, daemon=True)
    helper.start()
    try:
        res = _scenario_run(mysql_server, path, tmp_path / "out")
    finally:
        helper.join(60)
        mysql_server.wait_ready()
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    [hook] = summary["hooks"]
    assert hook["ok"] and hook["kind"] == "shell"
    steps = summary["steps"]
    assert len(steps) == 2 and steps[1]["tps"] > 0


def test_pgbouncer_pool_size_sweep_is_restored(pg_server, pgbouncer_server, tmp_path) -> None:
    T = ["--workload", "oltp_point_select", "--tables", "1", "--table-size", "1000"]
    assert bt(pg_server, "prepare", *T).returncode in (0, 1)

    def pool_size() -> str:
        rows = pg_admin_exec(pgbouncer_server, "SHOW CONFIG")
        return next(str(r[1]) for r in rows if r[0] == "default_pool_size")

    orig = pool_size()
    path = _scenario(tmp_path, pg_server, f'pgbouncer = ["{pgbouncer_server.admin_dsn()}"]\n'
                                          '[[step]]\nduration = "1s"\nthreads = 1\n'
                                          'settings = { "pgbouncer.default_pool_size" = [3, 4] }\n')
    res = _scenario_run(pg_server, path, tmp_path / "out")
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [s["settings"] for s in summary["steps"]] == [{"pgbouncer.default_pool_size": 3},
                                                         {"pgbouncer.default_pool_size": 4}]
    assert summary["settings_restored"] == [f"pgbouncer.default_pool_size = {orig}"]
    assert pool_size() == orig
    assert pgbouncer_server.admin_password not in (tmp_path / "out" / "config.json").read_text()
