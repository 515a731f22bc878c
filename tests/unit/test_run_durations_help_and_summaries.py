"""Issue 17, outside the TUI: a run's duration and results folder, help
per subcommand, one line without a built engine, summaries that say what
happened (per stretch, pauses, boundaries, digits, prepare phases)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchtop.commands import SUBCOMMANDS, subcommands_epilog
from benchtop.options.run_options import ENGINE_ALIASES, ENGINES, HEADLESS_TIME_S, build_parser, options_from_argv
from benchtop.record.analysis import analyse, analysis_text, enrich_results
from benchtop.record.controller import Notice, Sample
from benchtop.record.folder import default_results_folder, default_results_root
from benchtop.record.formats import interval_line, lat_ms, summary_text
from benchtop.run.headless import LinePrinter, run_headless
from benchtop.session import RunSession
from tests.tui.fakes import make_interval

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- how long a run lasts


def test_interactive_runs_until_q_and_headless_keeps_a_default():
    assert options_from_argv("run", [], terminal=True).time_s == 0  # the TUI: until q
    assert options_from_argv("run", ["--headless"], terminal=True).time_s == HEADLESS_TIME_S
    assert options_from_argv("run", [], terminal=False).time_s == HEADLESS_TIME_S  # stdout not a terminal
    assert options_from_argv("run", ["--time", "30"], terminal=True).time_s == 30
    assert "until q in the TUI" in " ".join(build_parser("run").format_help().split())


# ---------------------------------------------------------------- the results folder


def test_default_results_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHTOP_RESULTS", str(tmp_path / "runs"))
    assert default_results_root() == tmp_path / "runs"
    now = time.mktime((2026, 11, 23, 10, 15, 0, 0, 0, -1))
    a = default_results_folder("workloads/my load.toml", now)
    assert a.parent == tmp_path / "runs" and a.name == "20261123-101500-my_load"
    a.mkdir(parents=True)
    assert default_results_folder("my load", now).name == "20261123-101500-my_load-2"  # never reused
    monkeypatch.delenv("BENCHTOP_RESULTS")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_results_root() == tmp_path / "xdg" / "benchtop" / "runs"


def test_a_run_without_out_saves_and_says_where(tmp_path):
    env = dict(os.environ, BENCHTOP_RESULTS=str(tmp_path / "runs"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "benchtop", "--headless", "--engine", "null", "--time", "1",
                        "--rate", "100"], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    said = re.search(r"^results: (.+)$", r.stdout, re.M)
    assert said, r.stdout
    folder = Path(said.group(1))
    assert folder.parent == tmp_path / "runs" and (folder / "summary.json").is_file()
    assert (folder / "intervals.jsonl").is_file() and oct(folder.stat().st_mode & 0o777) == "0o700"
    assert list(tmp_path.iterdir()) == [tmp_path / "runs"]  # nothing written into the current folder


# ---------------------------------------------------------------- help


@pytest.mark.parametrize("cmd", ["prepare", "cleanup", "check"])
def test_subcommand_help_is_its_own(cmd):
    text = build_parser(cmd, subcommands_epilog()).format_help()
    run_only = ["--rate", "--stop-if", "--time", "--headless", "--out", "--proxysql", "--rand-type", "--warmup"]
    assert not [o for o in run_only if o in text], text
    assert build_parser("run").description not in text
    assert "--workload" in text and "--engine" in text
    if cmd == "check":
        assert "--file-total-size" not in text  # fileio has no consistency conditions
    # one option string still serves every verb, as sysbench's does: the others' options are accepted
    opts = options_from_argv(cmd, ["--threads", "16", "--time", "60", "--rate", "100", "--rand-type", "uniform"])
    assert opts.workload == "oltp_read_write"


def test_run_help_lists_every_subcommand_and_engine():
    text = build_parser("run", subcommands_epilog()).format_help()
    for name in SUBCOMMANDS:
        assert re.search(rf"^  {name} +\S", text, re.M), name
    engine_help = " ".join(text.split())
    for engine in (*ENGINES, *ENGINE_ALIASES):
        assert engine in engine_help, engine


@pytest.mark.parametrize("name", ["monitor", "scenario", "report", "replay", "capture", "workload"])
def test_every_subcommand_help_ends_with_the_list(name):
    import importlib

    text = importlib.import_module(f"benchtop.commands.{name}").build_parser().format_help()
    assert text.rstrip().endswith(subcommands_epilog().splitlines()[-1])


def test_without_a_built_engine_one_line(tmp_path):
    """A source tree never built (no _native module): one line, exit 1."""
    tree = tmp_path / "src"
    shutil.copytree(ROOT / "benchtop", tree / "benchtop", ignore=shutil.ignore_patterns("_native*.so", "__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-m", "benchtop", "--headless", "--time", "1"], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("benchtop: error: benchtop's native engine is not built: `pip install .`")


def test_an_engine_built_before_native_changed_one_line(tmp_path):
    """A source tree whose native/ changed after its engine was built (a pull
    without a rebuild): one line naming the rebuild, not a missing name."""
    tree = tmp_path / "src"
    shutil.copytree(ROOT / "benchtop", tree / "benchtop", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "native", tree / "native")
    shutil.copy(ROOT / "setup.py", tree / "setup.py")
    env = dict(os.environ, PYTHONPATH=str(tree))
    ok = subprocess.run([sys.executable, "-c", "import benchtop.engine"], capture_output=True, text=True, env=env,
                        cwd=tmp_path, timeout=60)
    assert ok.returncode == 0, ok.stderr  # the same sources: the build is current
    (tree / "native" / "worker.c").write_text((tree / "native" / "worker.c").read_text() + "\n/* changed */\n")
    r = subprocess.run([sys.executable, "-m", "benchtop", "--headless", "--time", "1"], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "native engine was built from older sources than native/ holds" in r.stderr


# ---------------------------------------------------------------- summaries


def _ivs(values, start=1.0, **extra):
    return [{"t": start + i, "dt": 1.0, "tps": v, "threads": 8, **extra} for i, v in enumerate(values)]


def test_steady_state_is_per_stretch_between_knob_changes():
    # 10 s at ~100 tps, threads x4 at t=10.5, then 10 s at ~400 tps: across both the CV would be ~60%
    data = _ivs([100, 102, 98, 100, 101, 99, 100, 100, 102, 98] + [250] + [400, 404, 396, 400, 402, 398, 400, 400, 400])
    events = [{"t": 10.5, "kind": "threads", "text": "threads 32"}]
    out = analyse(data, events=events)
    segs = out["segments"]
    assert [(s["t_start"], s["t_end"], s["samples"]) for s in segs] == [(0.0, 10.0, 10), (11.0, 20.0, 9)]
    assert [s["median"] for s in segs] == [100.0, 400.0]
    assert all(s["cv"] < 0.02 for s in segs)
    assert out["steady_state"]["median"] == 100.0  # the longest stretch
    assert out["stalls"] == []  # the 100-tps stretch is not a stall of the 400-tps one
    text = analysis_text(out)
    assert "steady state per stretch between knob changes:" in text
    assert "0:00-0:10 (threads 8): median 100.00 tps" in text


def test_a_pause_is_not_a_stall():
    data = _ivs([100.0] * 5 + [40.0, 0.0, 0.0, 0.0, 30.0] + [100.0] * 5)
    # paused at 5.4 s, resumed at 9.2 s; the intervals around carry no paused flag
    events = [{"t": 5.4, "kind": "pause"}, {"t": 9.2, "kind": "resume"}]
    out = analyse(data, events=events)
    assert out["stalls"] == []
    assert [s["samples"] for s in out["segments"]] == [5, 5]
    assert all(s["median"] == 100.0 for s in out["segments"])
    # without the timeline the same numbers are a stall: the timeline is what tells them apart
    assert analyse(data)["stalls"]


def test_enrich_results_reads_the_timeline(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"tps": 1}))
    (tmp_path / "config.json").write_text(json.dumps({"warmup_s": 2.0}))
    (tmp_path / "intervals.jsonl").write_text("".join(json.dumps(iv) + "\n" for iv in
                                                      _ivs([100.0] * 4 + [0.0, 0.0] + [100.0] * 4)))
    # the timeline is on the run's clock: warm-up included
    (tmp_path / "timeline.jsonl").write_text(json.dumps({"t": 6.0, "kind": "pause"}) + "\n"
                                             + json.dumps({"t": 8.0, "kind": "resume"}) + "\n")
    summary = enrich_results(tmp_path)
    assert summary["stalls"] == [] and len(summary["segments"]) == 2


def test_scenario_steps_print_their_own_steady_state():
    steps = [{"index": 0, "threads": 1, "rate": 0, "steady_state": {"samples": 5, "median": 100.0, "mean": 100.0,
                                                                     "stddev": 1.0, "cv": 0.01}},
             {"index": 1, "threads": 8, "rate": 0, "steady_state": {"samples": 5, "median": 700.0, "mean": 700.0,
                                                                     "stddev": 7.0, "cv": 0.01}}]
    text = analysis_text({"steps": steps, "stalls": []})
    assert text.splitlines() == [
        "steady state per step:",
        "  step 1 (threads 1): median 100.00 tps, mean 100.00, stddev 1.00 (1.0%) over 5 intervals",
        "  step 2 (threads 8): median 700.00 tps, mean 700.00, stddev 7.00 (1.0%) over 5 intervals",
    ]


def test_microsecond_latencies_keep_their_digits():
    iv = make_interval(0)
    fast = type(iv).__new__(type(iv))
    for f in iv.__slots__:
        object.__setattr__(fast, f, getattr(iv, f))
    object.__setattr__(fast, "latency_ms", {**iv.latency_ms, "p95": 0.0432})
    assert "lat (ms,95%): 0.0432 " in interval_line(fast, 95.0)
    assert lat_ms(12.345) == "12.35"  # sysbench's two decimals from 1 ms up


class _BoundaryController:
    """A controller whose step boundary falls just after a report tick."""

    report_interval = 0.2

    def __init__(self) -> None:
        self.t0 = 0.0
        self.readings: list[float] = []
        self.boundary = 0.0

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.boundary = self.t0 + 0.43  # ticks at 0.2 and 0.4: a sliver of 0.03 s would follow

    def notices(self) -> list[Notice]:
        return []

    def ends_at(self) -> float:
        return self.t0 + 0.95

    def deadline(self) -> float | None:
        # as a scenario's: the boundary until a reading at or after it
        passed = self.readings and self.t0 + self.readings[-1] >= self.boundary - 0.02
        return None if passed else self.boundary

    def load_ended(self) -> bool:
        return False

    def sample(self) -> Sample:
        now = time.monotonic() - self.t0
        dt = now - (self.readings[-1] if self.readings else 0.0)
        self.readings.append(now)
        iv = make_interval(0)
        from dataclasses import replace
        return Sample(replace(iv, t=now, dt=dt), True, t=now)

    def final_sample(self) -> Sample | None:
        return None

    def hurry(self) -> None:
        pass

    def stop(self, reason: str = "") -> None:
        return None


def test_no_sliver_interval_at_a_step_boundary():
    ctl = _BoundaryController()
    out = io.StringIO()
    run_headless(ctl, LinePrinter(out, False, 95.0))  # type: ignore[arg-type]
    gaps = [b - a for a, b in zip([0.0] + ctl.readings, ctl.readings)]
    assert min(gaps) > 0.1, ctl.readings  # no interval shorter than half a report interval
    assert any(abs(r - 0.43) < 0.03 for r in ctl.readings), ctl.readings  # the boundary was read on time
    seconds = re.findall(r"^\[ (\S+)s \]", out.getvalue(), re.M)
    assert len(seconds) == len(ctl.readings)


class _EndingController(_BoundaryController):
    """A load that ends by itself (its --events all run) 1.3 report intervals in."""

    report_interval = 1.0

    def ends_at(self) -> float:
        return self.t0 + 30

    def deadline(self) -> float | None:
        return None

    def load_ended(self) -> bool:
        return time.monotonic() - self.t0 >= 1.3

    def sample(self) -> Sample:
        s = super().sample()
        return Sample(s.interval, True, t=s.t, finished=self.load_ended(), reason="events" if self.load_ended() else "")


def test_a_load_that_ends_by_itself_is_read_then_not_at_the_next_tick():
    ctl = _EndingController()
    out = io.StringIO()
    run_headless(ctl, LinePrinter(out, False, 95.0))  # type: ignore[arg-type]
    assert len(ctl.readings) == 2 and ctl.readings[1] < 1.3 + 0.3, ctl.readings  # within a wait step of its end
    # the short last line keeps the label of the tick it stands for: no two lines share a second
    assert re.findall(r"^\[ (\S+)s \]", out.getvalue(), re.M) == ["1", "2"]


def test_prepare_names_its_phases(tmp_path):
    opts = options_from_argv("prepare", ["--db", str(tmp_path / "x.db"), "--table-size", "2000"])
    from benchtop.workload import load_program
    from benchtop.workload.prepare import prepare

    out = io.StringIO()
    prepare(load_program(opts.workload, opts.engine, opts.workload_options), opts.conn_settings(), 1, out=out)
    last = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(r"Prepared oltp_read_write: 2000 rows in [\d.]+ s: load [\d.]+ s \(\d+ rows/s\), "
                        r"indexes [\d.]+ s", last), last


def test_the_same_knob_value_adds_no_timeline_event():
    with RunSession(options_from_argv("run", ["--engine", "null", "--rate", "50"]), monitor=False,
                    progress=None) as session:
        ctl = session.controller()
        ctl.start()
        ctl.set_rate(50)
        ctl.set_threads(1)
        ctl.set_rate(80)
        ctl.set_rate(80)
        ctl.set_paused(False)
        assert [ev.text for ev in ctl.timeline] == ["rate 80/s"]
        ctl.stop("test")
