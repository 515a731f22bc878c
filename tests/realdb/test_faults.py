"""Faults during a run against the harness's real servers: the server killed
and restarted, hung (SIGSTOP), PgBouncer paused; the run goes on, counts what
happened and finishes with a complete summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT
from tests.fixtures.servers import pg_admin_exec
from tests.realdb.test_run_servers import bt

pytestmark = pytest.mark.realdb
SIZE = ["--tables", "1", "--table-size", "1000"]


def start_run(server, out: Path, seconds: int, *extra: str) -> subprocess.Popen[str]:
    scheme = "mysql" if server.kind == "mysql" else "postgresql"
    dsn = f"{scheme}://{server.user}@{server.host}:{server.port}/{server.database}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MYSQL_PWD=server.password, PGPASSWORD=server.password)
    return subprocess.Popen(
        [sys.executable, "-m", "benchtop", "--headless", "--json", "--engine",
         "mysql" if server.kind == "mysql" else "postgres", "--dsn", dsn, "--workload", "oltp_point_select",
         "--threads", "2", "--time", str(seconds), "--out", str(out), *SIZE, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))


def wait_intervals(out: Path, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        f = out / "intervals.jsonl"
        if f.exists() and len(f.read_text().splitlines()) >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} intervals in {out}")


@pytest.fixture
def prepared_mysql(mysql_server):
    assert bt(mysql_server, "prepare", *SIZE).returncode in (0, 1)
    return mysql_server


def test_server_killed_and_restarted_during_a_run(prepared_mysql, tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = start_run(prepared_mysql, out, 12)
    try:
        wait_intervals(out, 2)
        prepared_mysql.kill(signal.SIGKILL)
        time.sleep(2)
        prepared_mysql.restart()
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        prepared_mysql.wait_ready()
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["reconnects"] >= 2 and summary["errors_by_kind"]["lost_connection"] >= 1
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    assert any(i["tps"] == 0 for i in intervals) and intervals[-1]["tps"] > 0
    events = [json.loads(x) for x in (out / "timeline.jsonl").read_text().splitlines()]
    outage = [e for e in events if e["kind"] == "outage"]
    assert len(outage) >= 2 and "restored" in outage[-1]["text"]
    assert (out / "summary.json").exists()


def test_hung_server_sigstop_then_sigcont(prepared_mysql, tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = start_run(prepared_mysql, out, 9)
    try:
        wait_intervals(out, 2)
        prepared_mysql.kill(signal.SIGSTOP)
        time.sleep(3)
        lines_during = len((out / "intervals.jsonl").read_text().splitlines())
        prepared_mysql.kill(signal.SIGCONT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        prepared_mysql.kill(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    # the report kept its pace while the server hung: zero-tps lines, then recovery
    assert lines_during >= 4
    assert any(i["tps"] == 0 for i in intervals) and intervals[-1]["tps"] > 0


def test_pgbouncer_pause_and_resume(pg_server, pgbouncer_server, tmp_path: Path) -> None:
    assert bt(pg_server, "prepare", *SIZE).returncode in (0, 1)
    out = tmp_path / "res"
    proc = start_run(pgbouncer_server, out, 8, "--no-monitor")
    try:
        wait_intervals(out, 2)
        pg_admin_exec(pgbouncer_server, "PAUSE sbtest")
        time.sleep(2)
        pg_admin_exec(pgbouncer_server, "RESUME sbtest")
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            pg_admin_exec(pgbouncer_server, "RESUME sbtest")
            proc.kill()
    assert proc.returncode == 0, stderr
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    assert any(i["tps"] == 0 for i in intervals) and intervals[-1]["tps"] > 0
