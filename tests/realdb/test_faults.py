"""Faults during a run against the harness's real servers: the server killed
and restarted, hung (SIGSTOP), PgBouncer paused; the run goes on, counts what
happened and finishes with a complete summary (each run is ended by a
SIGTERM once its intervals show the recovery, rather than by a --time long
enough for it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
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


def whole_lines(f: Path) -> list[str]:
    """f's lines so far, the one being appended left out: a read while a run
    writes can end inside a line (one of six runs of
    test_query_timeout_rides_out_a_hung_server beside noisy-neighbour.sh read
    a line's first 1,024 characters)."""
    text = f.read_text() if f.exists() else ""
    return [x for x in text[:text.rfind("\n") + 1].splitlines() if x.strip()]


def wait_intervals(out: Path, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(whole_lines(out / "intervals.jsonl")) >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} intervals in {out}")


def intervals_of(out: Path) -> list[dict]:
    return [json.loads(x) for x in whole_lines(out / "intervals.jsonl")]


def recovered(intervals: list[dict], threads: int = 2) -> bool:
    """An interval without transactions (the fault), then one after it with
    transactions and every worker connected (the recovery). Not asked of the
    last line: stop_once signals the run as soon as a line shows the
    recovery, so the last is a sliver of the next interval that may hold no
    transaction yet (a CI run's did)."""
    zero = next((i for i, iv in enumerate(intervals) if iv["tps"] == 0), None)
    return zero is not None and any(iv["tps"] > 0 and iv.get("connected", threads) == threads
                                    for iv in intervals[zero + 1:])


def stop_once(proc: subprocess.Popen[str], done: Callable[[], bool], timeout: float = 60) -> tuple[str, str]:
    """SIGTERMs the run as soon as `done()` holds (polled; at most `timeout`
    s) instead of waiting out its --time, and returns its output. A headless
    run ends on SIGTERM with its whole intervals and a summary, exit 0."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline and not done():
        time.sleep(0.1)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=60)


@pytest.fixture(scope="module")
def prepared_mysql(mysql_server):
    # once per module: its tests (and test_stop_path's) keep the table, a killed server's too
    assert bt(mysql_server, "prepare", *SIZE).returncode in (0, 1)
    return mysql_server


def test_server_killed_and_restarted_during_a_run(prepared_mysql, tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = start_run(prepared_mysql, out, 60)

    def restored() -> bool:
        timeline = out / "timeline.jsonl"
        return recovered(intervals_of(out)) and timeline.exists() and "restored" in timeline.read_text()
    try:
        wait_intervals(out, 1)
        prepared_mysql.kill(signal.SIGKILL)
        time.sleep(2)
        prepared_mysql.restart()
        stdout, stderr = stop_once(proc, restored)
    finally:
        if proc.poll() is None:
            proc.kill()
        prepared_mysql.wait_ready()
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["reconnects"] >= 2 and summary["errors_by_kind"]["lost_connection"] >= 1
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    assert recovered(intervals), intervals
    events = [json.loads(x) for x in (out / "timeline.jsonl").read_text().splitlines()]
    outage = [e for e in events if e["kind"] == "outage"]
    assert len(outage) >= 2 and "restored" in outage[-1]["text"]
    assert (out / "summary.json").exists()


def test_hung_server_sigstop_then_sigcont(prepared_mysql, tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = start_run(prepared_mysql, out, 60)
    try:
        wait_intervals(out, 1)
        prepared_mysql.kill(signal.SIGSTOP)
        time.sleep(3)
        lines_during = len(whole_lines(out / "intervals.jsonl"))
        prepared_mysql.kill(signal.SIGCONT)
        stdout, stderr = stop_once(proc, lambda: recovered(intervals_of(out)))
    finally:
        prepared_mysql.kill(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    # the report kept its pace while the server hung: zero-tps lines, then recovery
    assert lines_during >= 3  # the one before the hang and two during its 3 s
    assert recovered(intervals), intervals


def test_pgbouncer_pause_and_resume(pg_server, pgbouncer_server, tmp_path: Path) -> None:
    assert bt(pg_server, "prepare", *SIZE).returncode in (0, 1)
    out = tmp_path / "res"
    proc = start_run(pgbouncer_server, out, 60, "--no-monitor")
    try:
        wait_intervals(out, 1)
        pg_admin_exec(pgbouncer_server, "PAUSE sbtest")
        time.sleep(2)
        pg_admin_exec(pgbouncer_server, "RESUME sbtest")
        stdout, stderr = stop_once(proc, lambda: recovered(intervals_of(out)))
    finally:
        if proc.poll() is None:
            pg_admin_exec(pgbouncer_server, "RESUME sbtest")
            proc.kill()
    assert proc.returncode == 0, stderr
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    assert recovered(intervals), intervals
