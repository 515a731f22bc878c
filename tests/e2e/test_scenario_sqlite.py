"""`benchtop scenario` end to end on the embedded SQLite engine: a 3-step
thread sweep on one engine, a guard that ends a scenario, and the results
folder the report reads."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import ROOT, run_benchtop


def _intervals(folder: Path) -> list[dict]:
    return [json.loads(ln) for ln in (folder / "intervals.jsonl").read_text().splitlines() if ln.strip()]


def test_three_step_sweep_writes_steps(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    res = run_benchtop("scenario", str(ROOT / "scenarios" / "sqlite_sweep.toml"), "--headless", "--out", str(out),
                       timeout=60)
    assert res.returncode == 0, res.stderr
    assert "Steps:" in res.stdout and "validity: NOT CRASH-DURABLE" in res.stdout
    summary = json.loads((out / "summary.json").read_text())
    steps = summary["steps"]
    assert [s["threads"] for s in steps] == [1, 2, 4]
    for s in steps:
        assert s["tps"] > 0 and s["transactions"] > 0
        assert 1.9 <= s["time_s"] <= 2.3  # warm-up excluded
        assert s["t_measure"] - s["t_start"] >= 0.45
        assert {"p50", "p95", "p99", "max"} <= set(s["latency_ms"])
        assert s["steady_state"]["samples"] >= 1
    assert summary["transactions"] == sum(s["transactions"] for s in steps)
    assert summary["validity"]["status"] == "not crash-durable"
    # intervals carry their step; the measured ones of a step lie inside it
    ivs = _intervals(out)
    assert {iv["step"] for iv in ivs} == {0, 1, 2}
    for s in steps:
        measured = [iv for iv in ivs if iv["step"] == s["index"] and not iv.get("warmup")]
        # 0.1 s: an interval's t and dt come from the engine's clock and the step bounds from the
        # controller's, read a moment apart; on a loaded machine that moment reaches tens of ms
        assert measured and all(s["t_measure"] - 0.1 <= iv["t"] - iv["dt"] and iv["t"] <= s["t_end"] + 0.1
                                for iv in measured)
    hist = json.loads((out / "histogram.json").read_text())
    assert len(hist["steps"]) == 3
    assert sum(c for _, c in hist["latency"]) == summary["transactions"]
    timeline = (out / "timeline.jsonl").read_text()
    assert '"threads 2"' in timeline and '"threads 4"' in timeline


def test_stop_if_in_a_step_ends_the_scenario(tmp_path: Path) -> None:
    sc = tmp_path / "guarded.toml"
    sc.write_text('workload = "oltp_point_select"\ntables = 1\ntable_size = 200\n'
                  '[[step]]\nduration = 0.5\n'
                  '[[step]]\nduration = 30\nrate = 50\nstop_if = ["tps<1000"]\n'
                  '[[step]]\nduration = 30\n')
    res = run_benchtop("scenario", str(sc), "--headless", "--json", "--out", str(tmp_path / "r"), timeout=60)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout.splitlines()[-1])
    assert summary["stopped_by"].startswith("stop-if: tps<1000")
    assert [s["index"] for s in summary["steps"]] == [0, 1]
    assert summary["steps"][1]["stopped_by"].startswith("stop-if")
    assert summary["steps"][1]["time_s"] < 5


def test_fileio_scenario_sweeps_modes(tmp_path: Path) -> None:
    """engine = "fileio" in a scenario: threads x test modes x IO modes, one step each."""
    files = tmp_path / "files"
    common = ["--engine", "fileio", "--dir", str(files), "--file-num", "4", "--file-total-size", "8M"]
    assert run_benchtop("prepare", *common).returncode == 0
    sc = tmp_path / "fio.toml"
    sc.write_text(f'engine = "fileio"\ndir = "{files}"\nfile_num = 4\nfile_total_size = "8M"\n'
                  '[[step]]\nthreads = [1, 2]\nfile_test_mode = ["rndrd", "rndwr"]\nfile_io_mode = ["sync", "mmap"]\n'
                  'duration = "0.5s"\n')
    out = tmp_path / "res"
    res = run_benchtop("scenario", str(sc), "--headless", "--out", str(out), timeout=90)
    assert res.returncode == 0, res.stderr
    steps = json.loads((out / "summary.json").read_text())["steps"]
    assert [s["threads"] for s in steps] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert [s["workload"] for s in steps[:4]] == ["fileio:rndrd/sync", "fileio:rndrd/mmap", "fileio:rndwr/sync",
                                                  "fileio:rndwr/mmap"]
    assert all(s["tps"] > 0 for s in steps)
