"""The pytest plugin used the way a user's suite would: a separate pytest
run of a small test file that calls the `benchtop_run` fixture on SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import ROOT

USER_TESTS = '''
def test_point_selects_are_fast(benchtop_run):
    result = benchtop_run(workload="oltp_point_select", threads=2, time=1, table_size=500, tables=1)
    assert result.transactions > 0 and result.tps > 0
    assert result.latency_ms.p99 < 1000 and result.latency_ms["p99"] == result.latency_ms.p99
    assert result.errors == 0 and result.stopped_by == "time"
    print("RESULT", result.tps, result.latency_ms.p99)

def test_a_budget_that_fails(benchtop_run):
    result = benchtop_run(engine="sqlite", workload="oltp_point_select", time=0.5, table_size=200, tables=1)
    assert result.latency_ms.p99 < 0.0000001, "too slow"

def test_bad_options_fail_in_one_line(benchtop_run):
    benchtop_run(workload="no_such_workload", time=0.5)
'''


def test_fixture_in_a_users_suite(tmp_path: Path) -> None:
    (tmp_path / "test_perf.py").write_text(USER_TESTS)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("BENCHTOP_DSN", None)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # an installed benchtop would register the plugin twice
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "benchtop.pytest_plugin", "-p", "no:cacheprovider", "-q", "-rA",
         "--benchtop-out", str(tmp_path / "out"), "test_perf.py"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
    )
    out = res.stdout
    assert "2 failed, 1 passed" in out, out + res.stderr
    assert "PASSED test_perf.py::test_point_selects_are_fast" in out
    assert "AssertionError: too slow" in out
    # a benchtop problem is one line, not a traceback into benchtop
    assert "benchtop_run: " in out and "no_such_workload" in out
    assert "benchtop/run.py" not in out and "another exception" not in out
    # the run itself printed nothing (no interval lines, no summary)
    assert "SQL statistics" not in out and "thds:" not in out
    summary = json.loads((tmp_path / "out" / "test_point_selects_are_fast" / "summary.json").read_text())
    assert summary["transactions"] > 0 and summary["threads"] == 2


def test_plugin_registers_its_options(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "benchtop.pytest_plugin", "--help"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert "--benchtop-dsn=DSN" in res.stdout and "--benchtop-out=DIR" in res.stdout
