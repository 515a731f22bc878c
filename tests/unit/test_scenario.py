"""Scenario files: good ones expand as documented, bad ones give one line
naming the file and the line, and nothing ever raises anything else."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchtop.commands import scenario as scenario_cli
from benchtop.scenario.file import (
    Scenario,
    ScenarioError,
    build_options,
    check_instrumentation,
    load_scenario,
    parse_range,
    parse_scenario,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_example_files_parse_and_build():
    expected = {"thread_sweep.toml": 11, "rate_ramp.toml": 11, "pfs_overhead.toml": 27, "sqlite_sweep.toml": 3,
                "fileio_sweep.toml": 18}
    for name, n in expected.items():
        sc = load_scenario(SCENARIOS / name)
        assert len(sc.steps) == n, name
        cfg = build_options(sc, sc.workloads[0])
        check_instrumentation(sc, cfg.engine)
    sweep = load_scenario(SCENARIOS / "thread_sweep.toml")
    assert [s.threads for s in sweep.steps] == [2**i for i in range(11)]
    assert sweep.steps[0].duration == 300 and sweep.steps[0].warmup == 30
    pfs = load_scenario(SCENARIOS / "pfs_overhead.toml")
    assert {s.instrumentation for s in pfs.steps} == {
        "all_disabled", "all_enabled", "default", "mdl_only", "memory_only",
        "stages_and_statements", "stages_only", "statements_only", "waits_only"}
    assert [s.repeat for s in pfs.steps[:3]] == [1, 2, 3]


def test_fileio_steps_sweep_test_and_io_modes():
    sc = load_scenario(SCENARIOS / "fileio_sweep.toml")
    assert [(s.threads, s.workload) for s in sc.steps[:3]] == [
        (1, "fileio:rndrd/sync"), (1, "fileio:rndrd/async"), (1, "fileio:rndwr/sync")]
    assert len(sc.workloads) == 6
    opts = build_options(sc, "fileio:rndrw/async")
    assert opts.fileio is not None and (opts.fileio.test_mode, opts.fileio.io_mode) == ("rndrw", "async")
    assert opts.fileio.extra_flags == ("direct",) and opts.fileio.file_num == 128
    with pytest.raises(ScenarioError, match="need engine = \"fileio\""):
        parse_scenario('engine = "sqlite"\n[[step]]\nduration = 1\nfile_test_mode = ["rndrd"]\n', "s.toml")
    with pytest.raises(ScenarioError, match="file_io_mode takes sync, async, mmap, not 'aio'"):
        parse_scenario('engine = "fileio"\n[[step]]\nduration = 1\nfile_io_mode = "aio"\n', "s.toml")


def test_sweeps_multiply_in_file_order_and_repeat():
    sc = parse_scenario('workload = "oltp_point_select"\n[[step]]\nrate = [10, 20]\nthreads = [1, 2]\n'
                        'duration = "1m"\nrepeat = 2\nmark = "m"\n')
    assert [(s.rate, s.threads, s.repeat) for s in sc.steps] == [
        (10, 1, 1), (10, 1, 2), (10, 2, 1), (10, 2, 2), (20, 1, 1), (20, 1, 2), (20, 2, 1), (20, 2, 2)]
    assert all(s.duration == 60 and s.mark == "m" for s in sc.steps)
    assert [s.index for s in sc.steps] == list(range(8))


def test_top_level_defaults_apply_to_steps():
    sc = parse_scenario('threads = 8\nwarmup = "5s"\nstop_if = "p99>5ms"\n[[step]]\nduration = 10\n'
                        '[[step]]\nduration = 10\nthreads = 2\nwarmup = 0\n')
    assert [(s.threads, s.warmup) for s in sc.steps] == [(8, 5.0), (2, 0.0)]
    assert sc.stop_if == ("p99>5ms",)
    assert sc.total_s == 25


def test_ranges():
    assert parse_range("1..1024*2", True)[-1] == 1024
    assert parse_range("10..50+10", True) == [10, 20, 30, 40, 50]
    assert parse_range("1..3", True) == [1, 2, 3]
    for bad in ("5..1", "1..10*1", "0..10*2", "1..10+0", "a..b"):
        with pytest.raises(ValueError):
            parse_range(bad, True)


def test_options_are_the_command_line_options():
    sc = parse_scenario('engine = "sqlite"\nworkload = "oltp_read_write"\ntable_size = 500\nno_prepare = true\n'
                        'point_selects = 3\n[[step]]\nduration = 1\n')
    cfg = build_options(sc, "oltp_read_write")
    assert cfg.time_s == 0  # steps decide how long the load runs
    assert cfg.workload_options["table_size"] == 500 and cfg.workload_options["point_selects"] == "3"
    assert cfg.prepare_statements is False


POOLER = ('engine = "postgres"\ndsn = "postgresql://app@127.0.0.1:6432/app"\nworkload = "tpcb_select_only"\n'
          'connections = 100\nthreads = 4\n')


def test_connections_sweep_on_event_loops():
    """Top-level connections and threads are --connections and --threads;
    a step's connections (a list or a range, as threads) set the connections,
    and a step's threads still do, as in files written before."""
    sc = parse_scenario(POOLER + '[[step]]\nduration = 10\nconnections = [100, 1000, 5000]\n'
                        '[[step]]\nduration = 10\nconnections = "100..800*2"\n'
                        '[[step]]\nduration = 10\nthreads = 300\n[[step]]\nduration = 10\n', "pooler.toml")
    assert [(s.connections, s.threads, s.workers) for s in sc.steps] == [
        (100, None, 100), (1000, None, 1000), (5000, None, 5000),
        (100, None, 100), (200, None, 200), (400, None, 400), (800, None, 800),
        (None, 300, 300), (None, None, None)]  # the last keeps what it finds
    assert sc.steps[1].label(9) == "step 2/9, tpcb_select_only, connections 1000"
    assert sc.steps[1].to_dict()["connections"] == 1000 and "threads" not in sc.steps[1].to_dict()
    assert sc.steps[7].label() == "step 8, tpcb_select_only, threads 300"
    opts = build_options(sc, sc.workloads[0])
    assert (opts.threads, opts.loop_threads) == (100, 4)  # as --connections 100 --threads 4
    assert (opts.for_step(sc.steps[2].workers).threads, opts.loop_threads) == (5000, 4)


def test_top_level_threads_without_connections_stay_the_steps_default():
    sc = parse_scenario('engine = "postgres"\nthreads = 8\n[[step]]\nduration = 1\n', "s.toml")
    assert sc.steps[0].threads == 8 and "threads" not in sc.options
    opts = build_options(sc, sc.workloads[0])
    assert (opts.threads, opts.loop_threads) == (1, 0)
    # with connections, top-level threads are the loop threads, and no step's default
    sc = parse_scenario('engine = "postgres"\nconnections = 64\nthreads = 8\n[[step]]\nduration = 1\n', "s.toml")
    assert (sc.steps[0].threads, sc.steps[0].connections) == (None, None)
    opts = build_options(sc, sc.workloads[0])
    assert (opts.threads, opts.loop_threads) == (64, 8)
    sc = parse_scenario('engine = "postgres"\nconnections = 64\n[[step]]\nduration = 1\n', "s.toml")
    assert build_options(sc, sc.workloads[0]).loop_threads == 1  # --threads' default, as on the command line


def test_connections_errors_name_the_line_when_building_the_run():
    sc = parse_scenario('engine = "postgres"\nconnections = 64\nthreads = 0\n[[step]]\nduration = 1\n', "s.toml")
    with pytest.raises(ScenarioError, match=r"^s\.toml:3: --threads must be between 1 and"):
        build_options(sc, sc.workloads[0])
    # SQLite keeps a thread per connection: the thread cap holds for its steps
    sc = parse_scenario('engine = "sqlite"\nconnections = 4\n[[step]]\nduration = 1\n\n'
                        '[[step]]\nduration = 1\nconnections = 5000\n', "s.toml")
    with pytest.raises(ScenarioError, match=r"^s\.toml:6: connections 5000 with engine sqlite: threads must be "
                                            r"between 0 and 4096, not 5000$"):
        build_options(sc, sc.workloads[0])


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("[[step]]\nduration = 1\nthreds = 4\n", 3, "unknown key 'threds'"),
        ("workload = 'x'\n\n[[step]]\nthreads = 2\n", 3, "has no duration"),
        ("[[step]]\nduration = -1\n", 2, "duration"),
        ("[[step]]\nduration = 1\nthreads = [1, 2.5]\n", 3, "whole numbers"),
        ("[[step]]\nduration = 1\nthreads = \"8..1*2\"\n", 3, "goes down"),
        ("[[step]]\nduration = 1\n[[step]]\nduration = 1\nrate = -5\n", 5, "rate"),
        ("[[step]]\nduration = 1\nstop_if = [\"p99>5\"]\n", 3, "takes a time"),
        ("[[step]]\nduration = 1\nrepeat = 0\n", 3, "repeat"),
        ("time = 10\n[[step]]\nduration = 1\n", 1, "not a scenario setting"),
        ("tables = [1, 2]\n[[step]]\nduration = 1\n", 1, "takes one value"),
        ("[[step]]\nduration = \"5 fortnights\"\n", 2, "not a duration"),
        ("name = \"x\"\n", None, "no [[step]]"),
        ("[[step]]\nduration = 1\nthreads = [1,\n", 3, "at the end of the file"),
        ("a = 1 b\n", 1, "column"),
        ("[target]\nx = 1\n[[step]]\nduration = 1\n", 1, "not a scenario table"),
        # connections: a step's needs a run on event loops, and says the knob once
        ("[[step]]\nduration = 1\nconnections = [100, 1000]\n", 3, "connections in a run without event loops"),
        ("threads = 4\n[[step]]\nduration = 1\n\nconnections = 10\n", 5, "without event loops"),
        ("connections = 10\n[[step]]\nduration = 1\nthreads = 2\nconnections = 5\n", 5,
         "sets both threads and connections"),
        ("connections = 10\n[[step]]\nduration = 1\nconnections = [1, 2.5]\n", 4, "whole numbers"),
        ("connections = 10\n[[step]]\nduration = 1\nconnections = \"1..3*1.5\"\n", 4,
         "fractional connection counts"),
        ("connections = 10\n[[step]]\nduration = 1\nconnections = 70000\n", 4, "out of range (0..65536)"),
        ("connections = \"100..5000*2\"\n[[step]]\nduration = 1\n", 1, "top-level connections takes one value"),
        ("name = \"x\"\nconnections = 0\n[[step]]\nduration = 1\n", 2, "at least 1"),
        # a top-level value's own check names its key and line (neither before)
        ("name = \"x\"\nthreads = \"lots\"\n[[step]]\nduration = 1\n", 2, "threads: 'lots' is not a range"),
        ("rate = \"fast\"\n[[step]]\nduration = 1\n", 1, "rate: 'fast' is not a range"),
        ("\nwarmup = \"x\"\n[[step]]\nduration = 1\n", 2, "warmup: 'x' is not a duration"),
        ("stop_if = \"p99 is big\"\n[[step]]\nduration = 1\n", 1, "--stop-if 'p99 is big': expected"),
        ("[[step]]\nduration = 1\nthreads = \"many\"\n", 3, "threads: 'many' is not a range"),
    ],
)
def test_malformed_files_name_file_and_line(text, line, fragment):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "bad.toml")
    msg = str(info.value)
    assert "\n" not in msg
    assert fragment in msg
    if line is None:
        assert msg.startswith("bad.toml: ")
    else:
        assert msg.startswith(f"bad.toml:{line}: "), msg


def test_semantic_errors_from_the_cli_name_the_key_line(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('workload = "oltp_point_select"\nbogus_option = 4\n[[step]]\nduration = 1\n')
    sc = load_scenario(p)
    with pytest.raises(ScenarioError, match=r"s\.toml:2: unknown option --bogus-option"):
        build_options(sc, sc.workloads[0])
    p.write_text('engine = "sqlite"\n[[step]]\nduration = 1\ninstrumentation = "waits_only"\n')
    sc = load_scenario(p)
    with pytest.raises(ScenarioError, match=r"s\.toml:4: instrumentation needs --engine mysql/postgres"):
        check_instrumentation(sc, "sqlite")
    p.write_text('engine = "mysql"\n[[step]]\nduration = 1\ninstrumentation = "everything"\n')
    with pytest.raises(ScenarioError, match=r"s\.toml:4: unknown instrumentation preset 'everything'"):
        check_instrumentation(load_scenario(p), "mysql")


def test_cli_reports_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[step]]\nduration = 1\nthreads = 'many'\n")
    assert scenario_cli.main([str(bad), "--headless"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and re.match(r"benchtop scenario: error: .*bad\.toml:3: ", err)
    assert scenario_cli.main([str(tmp_path / "missing.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_dry_run_lists_the_plan(capsys):
    assert scenario_cli.main([str(SCENARIOS / "thread_sweep.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "11 step(s)" in out and "threads 1024" in out


# ------------------------------------------------------------------ fuzzing

_KEYS = ["duration", "threads", "connections", "rate", "workload", "instrumentation", "mark", "warmup", "repeat", "stop_if",
         "name", "engine", "tables", "time", "bogus", "step"]
_scalars = st.one_of(
    st.integers(-5, 2000).map(str),
    st.floats(-10, 1e6, allow_nan=False).map(repr),
    st.sampled_from(['"1..8*2"', '"2..1"', '"10s"', '"5m"', '"p99>5ms"', '"x"', "true", '""', '"1..1e9+1"',
                     "1979-05-27", "inf", "nan", '"oltp_point_select"', '"waits_only"']),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
                    st.just("{a = 1}"))
_line = st.one_of(
    st.tuples(st.sampled_from(_KEYS), _values).map(lambda kv: f"{kv[0]} = {kv[1]}"),
    st.sampled_from(["[[step]]", "[step]", "[[ step ]]", "[other]", "", "# comment", "[[step.x]]"]),
    st.text(alphabet=string.printable, max_size=30),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_line, max_size=12))
def test_fuzz_toml_ish_text_never_tracebacks(lines):
    text = "\n".join(lines)
    try:
        sc = parse_scenario(text, "fuzz.toml")
    except ScenarioError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("fuzz.toml")
        return
    assert isinstance(sc, Scenario) and sc.steps and all(s.duration > 0 for s in sc.steps)


_step = st.fixed_dictionaries(
    {"duration": st.one_of(st.integers(1, 600), st.sampled_from(['"30s"', '"2m"', "0.5"]))},
    optional={
        "threads": st.one_of(st.integers(1, 64).map(str), st.lists(st.integers(1, 64), min_size=1, max_size=4).map(str),
                             st.just('"1..16*2"')),
        "rate": st.one_of(st.integers(0, 5000).map(str), st.just('"100..500+100"')),
        "warmup": st.integers(0, 30).map(str),
        "repeat": st.integers(1, 3).map(str),
        "mark": st.text(alphabet=string.ascii_letters + " ", max_size=10).map(lambda s: f'"{s}"'),
        "stop_if": st.sampled_from(['"p99>50ms for 10s"', '["tps<100 for 30s", "errors>1%"]']),
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, min_size=1, max_size=4))
def test_fuzz_valid_structures_expand_exactly(steps):
    text = "".join("[[step]]\n" + "".join(f"{k} = {v}\n" for k, v in s.items()) for s in steps)
    sc = parse_scenario(text, "ok.toml")
    expected = 0
    for s in steps:
        n = int(s.get("repeat", "1"))
        threads = s.get("threads")
        if threads is not None:
            n *= 5 if threads == '"1..16*2"' else (len(eval(threads)) if threads.startswith("[") else 1)
        if s.get("rate") == '"100..500+100"':
            n *= 5
        expected += n
    assert len(sc.steps) == expected
    assert [s.index for s in sc.steps] == list(range(expected))


def test_repeatable_options_take_lists_and_source_guards_need_sources(tmp_path, capsys):
    sc = parse_scenario('pgbouncer = ["pgbouncer://a@h:1/pgbouncer", "pgbouncer://b@h:2/pgbouncer"]\n'
                        '[[step]]\nduration = 1\n')
    assert build_options(sc).monitor.pgbouncer == ("pgbouncer://a@h:1/pgbouncer", "pgbouncer://b@h:2/pgbouncer")
    p = tmp_path / "guarded.toml"
    p.write_text('workload = "oltp_point_select"\ntable_size = 100\n[[step]]\nduration = 1\nstop_if = "pool_wait>1s"\n')
    assert scenario_cli.main([str(p), "--headless"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"benchtop scenario: error: {p}: --stop-if 'pool_wait>1s' needs PgBouncer stats: "
                       "add --pgbouncer DSN")
