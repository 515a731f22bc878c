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


AB_TESTS = '''
def test_two_threads_against_one(benchtop_ab):
    ab = benchtop_ab(a="", b="--threads 2", rounds=6, round_time=1, warmup=0.1, table_size=500, tables=1)
    assert ab.complete and len(ab.rounds) == 6
    tps = ab.tps
    assert tps.ci_low is not None and tps.ci_high is not None and tps.ci_low <= tps.ratio <= tps.ci_high
    assert tps.no_regression_beyond(0.05) == (tps.ci_low >= 0.95)
    assert ab.p99.higher_is_faster is False and ab.metric("p95_ms").rounds == 6
    print("AB", tps.ratio, tps.ci_low, tps.ci_high, ab.verdict.value, "|", ab.text())

def test_a_bad_side_fails_in_one_line(benchtop_ab):
    benchtop_ab(a="--frobnicate 3", rounds=6, round_time=1)
'''


def test_ab_fixture_returns_the_comparison_ab_json_holds(tmp_path: Path) -> None:
    """benchtop_ab on the embedded SQLite: 6 rounds of 1 s (the fewest with a
    95% interval), one thread against two; the typed comparison is the one
    ab.json says."""
    (tmp_path / "test_ab.py").write_text(AB_TESTS)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("BENCHTOP_DSN", None)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "benchtop.pytest_plugin", "-p", "no:cacheprovider", "-q", "-rA", "-s",
         "--benchtop-out", str(tmp_path / "out"), "test_ab.py"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
    )
    out = res.stdout
    assert "1 failed, 1 passed" in out, out + res.stderr
    assert "benchtop_ab: --a: unknown option --frobnicate" in out and "Traceback" not in out
    said = next(line for line in out.splitlines() if line.startswith("AB ")).split("|")[0].split()
    ratio, low, high, verdict = float(said[1]), float(said[2]), float(said[3]), said[4]
    ab = json.loads((tmp_path / "out" / "test_two_threads_against_one" / "ab.json").read_text())["ab"]
    tps = ab["metrics"]["tps"]
    assert (tps["ratio"], tps["ci_low"], tps["ci_high"]) == (round(ratio, 4), round(low, 4), round(high, 4))
    assert ab["verdict"] == verdict and len(ab["rounds"]) == 6
    assert "round 1" not in out and "results:" not in out  # silent: no banner, round lines or folder
