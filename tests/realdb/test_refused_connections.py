"""More workers than the server accepts: each interval says how many hold a
connection and how many attempts were refused, the summary warns that fewer
workers ran than asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.dbhelpers import mysql_admin_exec, retry
from tests.realdb.test_faults import prepared_mysql, start_run  # noqa: F401 (fixture)

pytestmark = pytest.mark.realdb


def test_max_connections_below_threads_is_counted_and_warned(prepared_mysql, tmp_path: Path) -> None:
    (before,) = mysql_admin_exec(prepared_mysql, "SELECT @@GLOBAL.max_connections")
    # the monitor's and the cost meter's connections come first: leave room for four workers
    mysql_admin_exec(prepared_mysql, "SET GLOBAL max_connections = 6")
    try:
        proc = start_run(prepared_mysql, tmp_path / "res", 2, "--threads", "12", "--no-monitor")
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        mysql_admin_exec(prepared_mysql, f"SET GLOBAL max_connections = {int(before[0])}")
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    intervals = [d for d in lines if d.get("type") == "interval"]
    summary = [d for d in lines if d.get("type") == "summary"][-1]
    assert intervals and all(0 < d["connected"] < 12 for d in intervals)
    assert sum(d.get("connect_failures", 0) for d in intervals) > 0
    assert 0 < summary["connected"] < 12 and summary["connect_failures"] > 0
    assert any("of 12 workers were connected" in w and "the server said: Too many connections" in w
               for w in summary["warnings"]), summary["warnings"]
    assert "Too many connections" in summary["connect_error"]
    saved = json.loads((tmp_path / "res" / "summary.json").read_text())
    assert saved["connected"] == summary["connected"]


def test_workers_refused_midway_are_warned_in_the_summary(prepared_mysql, tmp_path: Path) -> None:
    """All connected at first, then refused: the issue's server restarted
    with another password (here the password changed and the sessions
    killed). The intervals say how many were connected, the summary warns."""
    from tests.realdb.test_faults import intervals_of, stop_once, wait_intervals

    if prepared_mysql.process is None:
        pytest.skip("changes the test user's password: only on a server the harness started")
    user = f"'{prepared_mysql.user}'@'%'"
    out = tmp_path / "res"
    proc = start_run(prepared_mysql, out, 60, "--threads", "4", "--no-monitor")
    try:
        wait_intervals(out, 1)
        mysql_admin_exec(prepared_mysql, f"ALTER USER {user} IDENTIFIED BY 'another-password'")
        for (pid,) in mysql_admin_exec(prepared_mysql, "SELECT id FROM information_schema.processlist "
                                                       f"WHERE user = '{prepared_mysql.user}'"):
            try:
                mysql_admin_exec(prepared_mysql, f"KILL {int(pid)}")
            except Exception:  # gone already
                pass

        def refused() -> bool:  # an interval ran short of workers, with failed connects
            assert proc.poll() is None, "the run ended before an interval showed the refused workers"
            return any(iv.get("connected", 4) < 4 and iv.get("connect_failures", 0) > 0 for iv in intervals_of(out))
        retry(refused, timeout=30, interval=0.1)
    finally:
        mysql_admin_exec(prepared_mysql, f"ALTER USER {user} IDENTIFIED BY '{prepared_mysql.password}'")

    def all_back() -> bool:  # fewer than 4 connected, then all 4 again
        connected = [iv.get("connected", -1) for iv in intervals_of(out)]
        fewest = min(range(len(connected)), key=connected.__getitem__, default=None)
        return fewest is not None and connected[fewest] < 4 and 4 in connected[fewest + 1:]
    try:
        stdout, stderr = stop_once(proc, all_back, timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    intervals = [d for d in lines if d.get("type") == "interval"]
    summary = [d for d in lines if d.get("type") == "summary"][-1]
    assert intervals[0]["connected"] == 4 and min(d["connected"] for d in intervals) < 4
    assert sum(d.get("connect_failures", 0) for d in intervals) > 0
    assert summary["connect_failures"] > 0 and summary["connected_min"] < 4 and summary["connected"] == 4
    assert any("some intervals ran with as few as" in w and "Access denied" in w for w in summary["warnings"]), \
        summary.get("warnings")
    assert "Access denied" in summary["connect_error"]
