"""The verdict end to end on the embedded SQLite engine: every JSON interval
line of a scenario carries one, and summary.json names each step's limit."""

from __future__ import annotations

import json
from pathlib import Path

from benchtop.verdict import LIMITS
from tests.e2e.conftest import ROOT, run_benchtop


def test_a_scenario_names_the_limit_of_each_step(tmp_path: Path) -> None:
    # scenarios/sqlite_sweep.toml, two steps of 1.5 s (its run end to end is test_scenario_sqlite's):
    # each step still has whole measured intervals and a steady state to judge
    sweep = (ROOT / "scenarios" / "sqlite_sweep.toml").read_text()
    assert "threads = [1, 2, 4]\nduration = 2\n" in sweep
    scenario = tmp_path / "sweep.toml"
    scenario.write_text(sweep.replace("threads = [1, 2, 4]\nduration = 2\n", "threads = [1, 2]\nduration = 1.5\n"))
    res = run_benchtop("scenario", str(scenario), "--json", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    intervals = [d for d in lines if d.get("type") == "interval"]
    assert intervals and all(d["verdict"]["limit"] in LIMITS and "step" in d for d in intervals)
    assert {d["step"] for d in intervals} == {0, 1}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["steps"]) == 2
    assert all(st["steady_state"]["verdict"]["limit"] in LIMITS for st in summary["steps"])


def test_a_text_run_prints_the_verdict_under_its_intervals_and_in_its_summary(tmp_path: Path) -> None:
    res = run_benchtop("--time", "2", "--out", str(tmp_path / "run"))
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    first = next(i for i, line in enumerate(out) if line.startswith("[ 1s ]"))
    assert out[first + 1].startswith("     bound by ") or out[first + 1].startswith("     limit unclear")
    assert any(line.startswith("what limits it: ") for line in out)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["steady_state"]["verdict"]["limit"] in LIMITS
