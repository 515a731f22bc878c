"""Nothing lost, nothing misreported: a results folder is written by one run
only, hostile numbers and files end in one line, a killed run's folder and a
damaged intervals.jsonl can still be reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchtop.record.folder import ResultsError, ResultsWriter
from tests.e2e.conftest import ROOT, run_benchtop


def test_a_folder_that_holds_files_is_never_written_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_benchtop("--headless", "--engine", "sqlite", "--events", "500", "--time", "30", "--out", str(out)).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = run_benchtop("--headless", "--engine", "sqlite", "--time", "1", "--out", str(out))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"results folder {out} already holds" in r.stderr and "choose a new --out" in r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_second_writer_of_one_folder_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    first = ResultsWriter(tmp_path / "run")
    try:
        with pytest.raises(ResultsError, match=rf"being written by another benchtop \(pid {os.getpid()}\)"):
            ResultsWriter(tmp_path / "run")
    finally:
        first.close()
    # the lock file goes with the writer, and the folder it made for nothing
    assert not (tmp_path / "run").exists()
    (tmp_path / "run").mkdir()
    ResultsWriter(tmp_path / "run").close()  # an empty folder may be used
    assert (tmp_path / "run").is_dir() and not any((tmp_path / "run").iterdir())


@pytest.mark.parametrize("args, needle", [
    (["--time", "inf", "--events", "50"], "--time takes seconds; 0 = no limit, from 0 to 31536000, not inf"),
    (["--events", "1000000000000000000000"], "--events takes transactions; 0 = no limit, from 0 to"),
    (["--warmup", "nan"], "--warmup takes seconds, from 0 to 31536000, not nan"),
    (["--monitor-interval", "0"], "--monitor-interval takes seconds, from 0.05 to 3600, not 0"),
    (["--tables", "0"], "--tables takes tables, from 1 to 1000000, not 0"),
])
def test_numbers_out_of_range_are_one_line(args: list[str], needle: str) -> None:
    r = run_benchtop("--headless", "--engine", "null", *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_binary_workload_file_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "w.toml"
    f.write_bytes(b"name = 'x'\n\x00\xff\xfe binary")
    r = run_benchtop("--headless", "--engine", "null", "--workload", str(f), "--time", "1")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"{f}:2: not a workload file (not UTF-8 text" in r.stderr


def test_ask_password_without_a_terminal_is_one_line() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "benchtop", "--headless", "--engine", "mysql", "--dsn",
                        "mysql://sbtest@127.0.0.1:1/sbtest", "--ask-password", "--time", "1"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, cwd=str(ROOT),
                       start_new_session=True, timeout=60)  # no controlling terminal, as under cron
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--ask-password needs a terminal" in r.stderr


def test_a_killed_runs_folder_is_reported_as_unfinished(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", "--engine", "sqlite", "--time", "60",
                             "--out", str(out)], env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            f = out / "intervals.jsonl"
            if f.exists() and len(f.read_text().splitlines()) >= 1:  # a TPS for the report to show
                break
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not (out / "summary.json").exists()
    r = run_benchtop("report", str(out))
    assert r.returncode == 0, r.stderr
    assert "killed (unfinished)" in r.stdout and "unfinished: no summary.json" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("killed (unfinished)"))
    assert float(row.split()[4]) > 0  # its TPS, from the interval lines


def test_a_damaged_intervals_file_names_file_and_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_benchtop("--headless", "--engine", "sqlite", "--events", "500", "--time", "30", "--out", str(out)).returncode == 0
    lines = (out / "intervals.jsonl").read_text().splitlines()
    (out / "intervals.jsonl").write_text("\n".join([lines[0], "null", "[1, 2]", *lines[1:]]) + "\n")
    r = run_benchtop("report", str(out))
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert f"{out / 'intervals.jsonl'}:2: not a JSON object (null), left out" in r.stderr
    assert f"{out / 'intervals.jsonl'}:3: not a JSON object ([1, 2]), left out" in r.stderr
    assert json.loads(lines[0])["tps"] > 0


def test_sigterm_while_the_embedded_database_loads_removes_its_folder(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", "--engine", "sqlite", "--tables", "4",
                             "--table-size", "1000000", "--time", "5"], env=env, cwd=str(ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("benchtop-*/benchtop.db")):
            time.sleep(0.1)
        time.sleep(1)  # loading
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == "benchtop: interrupted (SIGTERM)"
    assert not list(tmp_path.glob("benchtop-*")), "the temporary database's folder is removed"


def test_a_short_table_is_refused_by_a_run_and_loaded_again_by_prepare(tmp_path: Path) -> None:
    import sqlite3

    db = str(tmp_path / "b.db")
    size = ["--engine", "sqlite", "--db", db, "--tables", "2", "--table-size", "3000"]
    assert run_benchtop("prepare", *size).returncode == 0
    with sqlite3.connect(db) as conn:  # as a prepare interrupted in its second table leaves it
        conn.execute("DELETE FROM sbtest2 WHERE id > 1000")
    r = run_benchtop("--headless", *size, "--time", "1")
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("benchtop: error: sbtest2 holds 1000 rows, not the 3000 this run asks for")
    r = run_benchtop("prepare", *size)
    assert r.returncode == 0, r.stderr
    assert "Resuming: 1 table set(s) already complete, kept; loading again: sbtest2 with 1000 of 3000 rows" in r.stderr
    assert run_benchtop("--headless", *size, "--events", "200", "--time", "30").returncode == 0
    r = run_benchtop("prepare", "--engine", "sqlite", "--db", db, "--tables", "2", "--table-size", "10")
    assert r.returncode == 1 and "sbtest1 already holds 3000 rows, more than the 10 asked" in r.stderr


def test_damaged_results_and_recording_files_are_named_with_their_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_benchtop("--headless", "--engine", "sqlite", "--events", "500", "--time", "30", "--out", str(out)).returncode == 0
    summary = (out / "summary.json").read_bytes()
    (out / "config.json").write_text("[3]")
    for damaged, needle in ((b'{"tps": \n', "summary.json:2: not JSON"), (b"[1, 2]", "summary.json:1: not a JSON object"),
                            (b"\xff\xfe", "summary.json:1: not UTF-8 text")):
        (out / "summary.json").write_bytes(damaged)
        r = run_benchtop("report", str(out))  # a full disk tears summary.json: the interval lines still tell
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert f"{out / needle}" in r.stderr and "unfinished" in r.stdout
        assert f"{out / 'config.json'}:1: not a JSON object" in r.stderr
    (out / "summary.json").write_bytes(summary)
    with (out / "intervals.jsonl").open("a") as f:
        f.write('{"t": "x", "tps": 1}\nnull\n{"t": 9, "tps": 1}\n')
    r = run_benchtop("replay", str(out), "--no-wait")
    assert r.returncode == 0 and "Traceback" not in r.stderr
    n = len((out / "intervals.jsonl").read_text().splitlines())
    assert f"{out / 'intervals.jsonl'}:{n - 2}: no time (t is \"x\"), left out" in r.stderr
    assert f"{out / 'intervals.jsonl'}:{n - 1}: not a JSON object (null), left out" in r.stderr


def test_binary_pgbench_scripts_and_scenarios_name_file_and_line(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_bytes(b"SELECT 1;\n\xff\xfe binary\n")
    r = run_benchtop("--headless", "--engine", "null", "--pgbench-script", str(script), "--time", "1")
    assert r.returncode == 1 and f"{script}:2: not a pgbench script (not UTF-8 text)" in r.stderr
    scenario = tmp_path / "sc.toml"
    scenario.write_bytes(b'engine = "null"\n\xff\xfe\n')
    r = run_benchtop("scenario", str(scenario), "--headless")
    assert r.returncode != 0 and f"{scenario}:2: not a text file" in r.stderr and "Traceback" not in r.stderr


def test_a_refused_run_leaves_no_empty_folder_nor_database_file(tmp_path: Path) -> None:
    db, out = tmp_path / "none.sqlite", tmp_path / "runs" / "refused"
    r = run_benchtop("--headless", "--engine", "sqlite", "--db", str(db), "--time", "1", "--out", str(out))
    assert r.returncode != 0 and r.stderr.strip() == (
        f"benchtop: error: no database file {db}: run `benchtop prepare` with the same options first")
    assert not db.exists() and not out.exists()
