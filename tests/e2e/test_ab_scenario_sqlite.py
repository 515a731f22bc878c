"""`benchtop ab FILE.toml`: a comparison from a scenario file's [ab] table
on the embedded SQLite, the file's top level shared by both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import run_benchtop

# alone: each turn's time is asserted to a quarter second
pytestmark = pytest.mark.alone

FILE = """\
engine = "sqlite"
workload = "oltp_point_select"
table_size = 500
tables = 1
warmup = 0.1

[ab]
a = ""
b = "--threads 2"
rounds = 2
round_time = 1
turn = "250ms"
seed = 3
out = "{out}"
"""


def test_a_comparison_from_a_scenario_file(tmp_path: Path) -> None:
    out = tmp_path / "ab"
    path = tmp_path / "threads.toml"
    path.write_text(FILE.format(out=out))
    res = run_benchtop("ab", str(path))
    assert res.returncode == 0, res.stderr
    assert "A = the shared options; B = --threads 2" in res.stdout
    assert ("2 rounds of A and B taking turns of 0.25 s, the first drawn at random, 1 s each after a 0.1 s warm-up"
            in res.stdout)
    assert len([line for line in res.stdout.splitlines() if line.startswith("round ")]) == 2, res.stdout
    ab = json.loads((out / "ab.json").read_text())["ab"]
    assert ab["complete"] and ab["seed"] == 3 and ab["round_time_s"] == 1 and len(ab["rounds"]) == 2
    assert ab["sides"]["b"]["options"] == "--threads 2"
    for r in ab["rounds"]:
        for side, threads in (("a", 1), ("b", 2)):
            summary = json.loads((out / r[side]["folder"] / "summary.json").read_text())
            assert summary["threads"] == threads and summary["transactions"] > 0
            # both runs of a round open at once, each paused half its 2 s: the round's second counted from the
            # 0.1 s warm-up's end (it was the 0.1 s after the reading at 1 s)
            assert abs(summary["time_s"] - 2) <= 0.25, summary["time_s"]
            assert abs(r[side]["ran_s"] - 1) <= 0.25, r[side]
    # a round ends at its time with transactions in flight (summary.json's `unfinished`): finished all the same
    folders = [str(out / r[side]["folder"]) for r in ab["rounds"] for side in ("a", "b")]
    report = run_benchtop("report", *folders)
    assert report.returncode == 0 and "round-01-a" in report.stdout, report.stderr
    assert "(unfinished)" not in report.stdout, report.stdout
    # `benchtop scenario` hands such a file to benchtop ab
    dry = run_benchtop("scenario", str(path), "--dry-run")
    assert dry.returncode == 0 and "a comparison (benchtop ab)" in dry.stdout, dry.stdout + dry.stderr
