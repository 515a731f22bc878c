"""`benchtop knee` end to end on the embedded SQLite: probes as JSON Lines,
summary.json's knee, the answer, a scenario file's [search] table, the
report's plots and paragraph, and one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, run_benchtop
from tests.fixtures.dbhelpers import retry

pytestmark = pytest.mark.slow

# short probes: the search's plumbing is under test here, not how well it finds the knee
FAST = ["--probe-min", "0.5", "--probe-max", "1", "--probe-interval", "0.125", "--settle", "0.125"]


def test_knee_search_on_sqlite(tmp_path: Path) -> None:
    out = tmp_path / "knee"
    res = run_benchtop("knee", "--headless", "--json", "--workload", "oltp_point_select", "--table-size", "1000",
                       "--min-threads", "1", "--max-threads", "4", "--p99-limit", "50", *FAST, "--out", str(out),
                       timeout=180)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    probes = [d for d in lines if d["type"] == "probe"]
    assert probes and lines[-1]["type"] == "knee"
    assert [p["threads"] for p in probes][:2] == [1, 2]  # bracketing starts at the bottom and doubles
    # at most the longest probe and a reading that came late on a busy host
    assert all(1 <= p["threads"] <= 4 and p["time_s"] <= 1.0 + 1.0 for p in probes)
    knee = json.loads((out / "summary.json").read_text())["knee"]
    best = knee["best"]
    latest = {p["threads"]: p for p in knee["probes"]}.values()  # a setting measured again: its later result
    ok = [p for p in latest if p["feasible"]]
    held = {h["threads"] for h in knee.get("held", []) if h["kept"]}
    # the answer is the setting that kept the limits when held; before one did, the best steady setting (the best
    # of all only when none steadied)
    assert best["p99_ms"] <= 50
    candidates = [p for p in ok if p["threads"] in held] or [p for p in ok if p["steady"]] or ok
    assert best["tps"] == max(p["tps"] for p in candidates)
    assert knee["complete"] is True
    assert len(knee["probes"]) == len(probes) <= 24
    assert knee["answer"].startswith(f"best: {best['threads']} thread")
    if len({p["threads"] for p in probes}) >= 3:
        assert {"sigma", "sigma_err", "kappa", "kappa_err", "peak_threads"} <= set(knee["usl"])
    # one engine for the whole search: the threads changed on the timeline, the workers never restarted
    timeline = [json.loads(line) for line in (out / "timeline.jsonl").read_text().splitlines()]
    settings = [p["threads"] for p in probes]
    changes = sum(1 for a, b in zip(settings, settings[1:]) if a != b)  # a setting measured again changes nothing
    assert sum(1 for ev in timeline if ev.get("kind") == "threads") >= changes

    report = run_benchtop("report", str(out))
    assert report.returncode == 0, report.stderr
    assert f"best: {best['threads']} thread" in report.stdout
    png = run_benchtop("report", str(out), "--png", str(tmp_path / "png"))
    assert png.returncode == 0, png.stderr
    assert (tmp_path / "png" / "knee_tps.png").stat().st_size > 0
    assert (tmp_path / "png" / "knee_p99.png").stat().st_size > 0


def test_knee_from_a_scenario_search_table(tmp_path: Path) -> None:
    sc = tmp_path / "knee.toml"
    sc.write_text('workload = "oltp_point_select"\ntable_size = 500\n\n[search]\nmin_threads = 1\nmax_threads = 2\n'
                  'p99_limit = "100ms"\nprobe_min = "0.5s"\nprobe_max = "0.5s"\nprobe_interval = 0.125\nsettle = 0.125\nconfirm = "1s"\n')
    out = tmp_path / "out"
    res = run_benchtop("knee", str(sc), "--headless", "--out", str(out), timeout=120)
    assert res.returncode == 0, res.stderr
    assert "probe  1:" in res.stdout and "best: " in res.stdout and "(limit 100 ms)" in res.stdout
    assert json.loads((out / "summary.json").read_text())["knee"]["range"] == [1, 2]
    # `benchtop scenario` hands a [search] file to the knee search
    res = run_benchtop("scenario", str(sc), "--headless", "--out", str(tmp_path / "out2"), timeout=120)
    assert res.returncode == 0, res.stderr
    assert "best: " in res.stdout


@pytest.mark.parametrize("args,message", [
    (["--min-threads", "8", "--max-threads", "2"], "threads range"),
    (["--p99-limit", "fast"], "--p99-limit takes a number of milliseconds"),
    (["--tolerance", "150%"], "share from 0 to 100%"),
    (["--min-rate", "100"], "needs both --min-rate and --max-rate"),
    (["--probe-min", "5", "--probe-max", "1"], "shorter than the shortest"),
    (["--confirm", "-1"], "--confirm takes a number of seconds"),
])
def test_bad_search_options_are_one_line(args: list[str], message: str) -> None:
    res = run_benchtop("knee", "--headless", *args, timeout=60)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert message in res.stderr


def test_knee_help_names_the_search_options() -> None:
    res = run_benchtop("knee", "--help", timeout=60)
    assert res.returncode == 0
    for option in ("--min-threads", "--max-threads", "--p99-limit", "--error-limit", "--tolerance", "--min-rate",
                   "--confirm", "--workload", "--dsn"):
        assert option in res.stdout


def test_rate_search_and_time_budget_on_sqlite(tmp_path: Path) -> None:
    out = tmp_path / "rate"
    res = run_benchtop("knee", "--headless", "--json", "--workload", "oltp_point_select", "--table-size", "1000",
                       "--threads", "2", "--min-rate", "500", "--max-rate", "64000", "--p99-limit", "50", *FAST,
                       "--time", "3", "--out", str(out), timeout=120)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    probes = [d for d in lines if d["type"] == "probe"]
    assert probes and probes[0]["rate"] == 500 and "threads" not in probes[0]
    knee = lines[-1]
    assert knee["setting"] == "rate" and knee["usl"] is None
    # a search the budget cut short says so; one that ended by its own rules is complete
    assert knee["complete"] is (knee["reason"] != "the time budget is spent")
    if not knee["complete"]:
        assert "cut short (the time budget is spent): the search did not finish." in knee["answer"]
    assert knee["best"] is None or knee["best"]["tps"] >= 0.9 * knee["best"]["rate"]
    assert knee["answer"].startswith("best: " if knee["complete"] else "best so far: ")


def test_a_knee_stopped_by_sigterm_says_it_did_not_finish(tmp_path: Path) -> None:
    out = tmp_path / "knee"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "knee", "--headless", "--json", "--workload",
                             "oltp_point_select", "--table-size", "1000", "--min-threads", "1", "--max-threads", "64",
                             "--probe-min", "2", "--probe-max", "2", "--settle", "0.125", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        retry(lambda: "knee probe 2" in (out / "timeline.jsonl").read_text(), timeout=60)  # one probe done
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("benchtop knee: interrupted (SIGTERM)")
    answer = json.loads(stdout.splitlines()[-1])
    assert answer["type"] == "knee" and answer["complete"] is False and answer["reason"] == "signal SIGTERM"
    assert answer["answer"].startswith("best so far: ") and "cut short (signal SIGTERM)" in answer["answer"]
    assert json.loads((out / "summary.json").read_text())["knee"]["complete"] is False
