"""The insert benchmark and a scenario with hooks on the embedded SQLite, as
a user runs them: per-group results in JSON lines, text, summary.json and
the tagged latency log."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import run_benchtop


def _prepared(tmp_path: Path, workload: str, *size: str) -> str:
    """An embedded database prepared for `workload`, as `benchtop prepare` leaves it."""
    db = str(tmp_path / f"{workload}.db")
    prep = run_benchtop("prepare", "--engine", "sqlite", "--db", db, "--workload", workload, *size)
    assert prep.returncode == 0, prep.stderr
    return db


def test_insert_benchmark_i1_q10_on_sqlite(tmp_path: Path) -> None:
    db = _prepared(tmp_path, "insert_benchmark", "--rows", "2000")
    # the rows it was prepared with: a run refuses tables holding fewer than it asks for
    res = run_benchtop("--headless", "--json", "--engine", "sqlite", "--db", db, "--workload", "insert_benchmark",
                       "--rows", "2000", "--preset", "i1.q10", "--group", "queriers.threads=2", "--time", "2", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    intervals = [d for d in lines if d["type"] == "interval"]
    summary = lines[-1]
    assert intervals and all(set(d["groups"]) == {"inserters", "queriers"} for d in intervals)
    g = summary["groups"]
    assert g["inserters"]["rate"] == 1000 and g["inserters"]["threads"] == 1 and g["queriers"]["threads"] == 2
    assert g["inserters"]["tps"] > 0 and g["queriers"]["tps"] > 0
    assert set(g["inserters"]["tps_over_intervals"]) == {"avg", "p5", "p95"}
    assert summary["txn_types"]["insert"] > 0 and summary["txn_types"]["market_query"] > 0
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert set(saved["groups"]) == {"inserters", "queriers"}
    hlog = (tmp_path / "out" / "latency.hlog").read_text()
    assert "\nTag=inserters," in hlog and "\nTag=queriers," in hlog
    text = run_benchtop("--headless", "--engine", "sqlite", "--db", db, "--workload", "insert_benchmark",
                        "--rows", "2000", "--preset", "i10.q1", "--group", "inserters.threads=2", "--time", "1")
    assert text.returncode == 0, text.stderr
    assert "  inserters: thds: 2 tps:" in text.stdout and "thread groups (ms)" in text.stdout


def test_scenario_hooks_on_sqlite_run_and_are_recorded(tmp_path: Path) -> None:
    db = _prepared(tmp_path, "oltp_point_select", "--table-size", "100")
    sc = tmp_path / "hooks.toml"
    sc.write_text(f'engine = "sqlite"\ndb = "{db}"\nworkload = "oltp_point_select"\ntable_size = 100\n'
                  '[[step]]\nduration = 1\nbefore = ["CREATE TABLE IF NOT EXISTS marks (a int)", '
                  f'{{ shell = "touch {tmp_path}/before-ran", timeout = "5s" }}]\n'
                  'after = "INSERT INTO marks VALUES (1)"\n')
    dry = run_benchtop("scenario", str(sc), "--dry-run")
    assert dry.returncode == 0 and f"before: shell: touch {tmp_path}/before-ran" in dry.stdout
    res = run_benchtop("scenario", str(sc), "--headless", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert "runs 3 hook(s)" in res.stderr and (tmp_path / "before-ran").exists()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [(h["when"], h["kind"], h["ok"]) for h in summary["hooks"]] == [
        ("before", "sql", True), ("before", "shell", True), ("after", "sql", True)]
    timeline = (tmp_path / "out" / "timeline.jsonl").read_text()
    assert timeline.count('"kind":"hook"') == 3


def test_settings_sweep_needs_a_server(tmp_path: Path) -> None:
    sc = tmp_path / "s.toml"
    sc.write_text('engine = "sqlite"\n[[step]]\nduration = 1\nsettings = { sync_binlog = [0, 1] }\n')
    res = run_benchtop("scenario", str(sc), "--headless")
    assert res.returncode != 0 and "settings sweeps need" in res.stderr and "Traceback" not in res.stderr


def test_scenario_sweeps_a_group_beside_a_paced_one(tmp_path: Path) -> None:
    db = _prepared(tmp_path, "insert_benchmark", "--rows", "500")
    sc = tmp_path / "qc.toml"
    sc.write_text(f'engine = "sqlite"\ndb = "{db}"\nworkload = "insert_benchmark"\nrows = 500\n'
                  'preset = "i1.q10"\n[[step]]\nduration = 1\ngroup = ["inserters.rate=200", "queriers.threads=1..2"]\n')
    res = run_benchtop("scenario", str(sc), "--headless", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    steps = json.loads((tmp_path / "out" / "summary.json").read_text())["steps"]
    assert [s["groups"]["queriers"]["threads"] for s in steps] == [1, 2]
    assert all(s["groups"]["inserters"]["rate"] == 200 for s in steps)
