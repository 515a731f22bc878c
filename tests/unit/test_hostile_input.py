"""Hostile values for every number a run takes and for the files benchtop
reads: one UsageError / WorkloadError / ReportError line, never another
exception (which would be a traceback at the command line)."""

from __future__ import annotations

import json
import math

import pytest

from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchtop.errors import UsageError
from benchtop.options.run_options import NUMBER_RANGES, options_from_argv
from benchtop.record.folder import read_jsonl
from benchtop.report.data import ReportError, load_run
from benchtop.target.dsn import TargetError, parse_dsn
from benchtop.workload import WorkloadError, load_program

OPTIONS = [option for option, *_ in NUMBER_RANGES.values()]
HOSTILE_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["inf", "-inf", "nan", "1e400", "-0", "0x10", "", " ", "1_000", "٣"]),
)


@settings(max_examples=150, deadline=None)
@given(option=st.sampled_from(OPTIONS), value=HOSTILE_NUMBERS)
def test_every_number_is_checked_where_it_enters(option: str, value: str) -> None:
    try:
        options_from_argv("run", ["--headless", option, value])
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    # taken: then it was a finite number inside the option's range
    least, most = next((lo, hi) for name, lo, hi, _ in NUMBER_RANGES.values() if name == option)
    number = float(value)
    assert math.isfinite(number) and least <= number <= most


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300))
def test_any_bytes_as_a_workload_file_fail_in_one_line(tmp_path_factory, data: bytes) -> None:
    f = tmp_path_factory.mktemp("w") / "w.toml"
    f.write_bytes(data)
    try:
        load_program(str(f), "sqlite")
    except WorkloadError as exc:
        assert "\n" not in str(exc).strip() or str(exc).startswith(str(f))


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.one_of(st.text(max_size=40), st.sampled_from(["null", "[1, 2]", "3", '"x"', "{}",
                                                                        '{"t": 1, "tps": 2}']))))
def test_any_intervals_file_is_read_or_named(tmp_path_factory, lines: list[str]) -> None:
    folder = tmp_path_factory.mktemp("run")
    (folder / "intervals.jsonl").write_text("\n".join(lines) + "\n", errors="surrogatepass")
    problems: list[str] = []
    records = read_jsonl(folder / "intervals.jsonl", problems)
    assert all(isinstance(r, dict) for r in records)
    assert all(p.startswith(f"{folder / 'intervals.jsonl'}:") for p in problems)
    try:
        load_run(folder)
    except ReportError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(dsn=st.one_of(st.text(max_size=60), st.text(max_size=40).map(lambda s: "postgresql://" + s),
                     st.text(max_size=40).map(lambda s: "mysql://u@[" + s)))
def test_any_dsn_is_read_or_refused_in_one_line(dsn: str) -> None:
    try:
        parse_dsn(dsn, "postgresql")
    except TargetError as exc:
        assert "\n" not in str(exc)



def _fits_the_engine(program) -> bool:
    """Every field of every op fits the C struct (int32 a..d, int64 x, y)."""
    i32, i64 = 2**31, 2**63
    return all(all(-i32 <= v < i32 for v in op[:5]) and all(-i64 <= v < i64 for v in op[5:]) for op in program.ops)


@settings(max_examples=150, deadline=None)
@given(option=st.sampled_from(["range_size", "point_selects", "table_size", "tables"]), value=HOSTILE_NUMBERS)
def test_every_workload_option_is_checked_where_it_enters(option: str, value: str) -> None:
    try:
        program = load_program("oltp_read_write", "sqlite", {option: value})
    except WorkloadError as exc:
        assert "\n" not in str(exc) and "oltp_read_write.toml:" in str(exc)
        return
    assert _fits_the_engine(program)


EXPRESSIONS = st.one_of(
    HOSTILE_NUMBERS,
    st.builds("{} {} {}".format, HOSTILE_NUMBERS, st.sampled_from(["+", "-", "*", "/", "%"]), HOSTILE_NUMBERS),
    st.builds("random({}, {})".format, HOSTILE_NUMBERS, HOSTILE_NUMBERS),
    st.builds("random_gaussian(1, 10, {})".format, HOSTILE_NUMBERS),
    st.builds("random_zipfian(1, 10, {})".format, st.floats().map(lambda f: f"{abs(f):.3f}")),
)


@settings(max_examples=200, deadline=None)
@given(expr=EXPRESSIONS)
def test_any_set_expression_compiles_or_names_file_and_line(tmp_path_factory, expr: str) -> None:
    from benchtop.workload.pgbench_script import ScriptSpec, pgbench_program

    f = tmp_path_factory.mktemp("s") / "s.sql"
    f.write_text(f"SELECT 1;\n\\set x {expr}\nSELECT :x;\n")
    try:
        program = pgbench_program([ScriptSpec(str(f))], "sqlite", {"scale": 1})
    except WorkloadError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(f"{f}:2: ")
        return
    assert _fits_the_engine(program) and program.strict_eval


def test_scenario_durations_and_rates_have_the_run_options_ranges(tmp_path) -> None:
    from benchtop.scenario.file import ScenarioError, load_scenario

    for body, needle in (("duration = 1e300", "sc.toml:3: 1e+300 is longer than a year"),
                         ("duration = 1\nrate = 1e12", "sc.toml:4: rate 1000000000000.0 out of range"),
                         ("duration = 1\nthreads = nan", "sc.toml:4: threads must be whole numbers")):
        f = tmp_path / "sc.toml"
        f.write_text(f'engine = "null"\n[[step]]\n{body}\n')
        try:
            load_scenario(f)
        except ScenarioError as exc:
            assert needle in str(exc) and "\n" not in str(exc)
        else:
            raise AssertionError(f"{body!r} was taken")


@settings(max_examples=100, deadline=None)
@given(data=st.one_of(st.binary(max_size=200),
                      st.lists(st.sampled_from(["\\set x 1", "\\set y :x / 0", "\\set z random(9, 1)", "SELECT :x;",
                                                "\\sleep 1e400 ms", "\\set w 99999999999999999999", "\\gset",
                                                "\\set", "SELECT 1 \\gset p_", "\\foo", "--", "'", ""]),
                               max_size=8).map(lambda ls: "\n".join(ls).encode())))
@example(data=b"\x00;\x00")  # two statements on one line: its error named neither file nor line
def test_any_pgbench_script_compiles_or_names_file_and_line(tmp_path_factory, data: bytes) -> None:
    from benchtop.workload.pgbench_script import ScriptSpec, pgbench_program

    f = tmp_path_factory.mktemp("p") / "p.sql"
    f.write_bytes(data)
    try:
        program = pgbench_program([ScriptSpec(str(f))], "sqlite", {"scale": 1})
    except WorkloadError as exc:
        assert "\n" not in str(exc).strip() and str(f) in str(exc)
        return
    assert _fits_the_engine(program)


@settings(max_examples=100, deadline=None)
@given(data=st.one_of(st.binary(max_size=200),
                      st.lists(st.sampled_from(['engine = "null"', "[[step]]", "duration = 1e400", "duration = 1",
                                                "threads = nan", "rate = -1", "threads = [1, 1e30]", "warmup = inf",
                                                'threads = "1..1e9*2"', "repeat = 99999999999999999999", "x = ["]),
                               max_size=6).map(lambda ls: "\n".join(ls).encode())))
def test_any_scenario_file_is_read_or_refused_in_one_line(tmp_path_factory, data: bytes) -> None:
    from benchtop.scenario.file import ScenarioError, load_scenario

    f = tmp_path_factory.mktemp("sc") / "sc.toml"
    f.write_bytes(data)
    try:
        load_scenario(f)
    except (ScenarioError, UsageError) as exc:
        assert "\n" not in str(exc).strip()


# ------------------------------------------------ every hostile input of issue 41: one line, nothing written

WEIGHT_TOML = '[workload]\nname = "w"\n[[transaction]]\nname = "t"\nweight = 4294967296\nscript = "SELECT 1"\n'
PG = ["--engine", "postgres", "--dsn", "postgresql://sbtest@127.0.0.1:1/sbtest"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--headless", "--engine", "sqlite", "--workload", "{dir}/w.toml", "--time", "1"],
         "w.toml:6: weight of 't' must be a number from 0 to 2147483647"),
        (["replay", "{dir}/run", "--speed", "nan"], "--speed: takes a factor from 0.001 to 1e+06, not 'nan'"),
        (["replay", "{dir}/run", "--speed", "1e-300"], "not '1e-300'"),
        (["monitor", "--headless", "--count", "1", "--interval", "nan", "--pgsql", "postgresql://u@127.0.0.1:1/x"],
         "--interval: takes seconds from 0.05 to 3600, not 'nan'"),
        (["monitor", "--headless", "--count", "1", "--timeout", "nan", "--pgsql", "postgresql://u@127.0.0.1:1/x"],
         "--timeout: takes seconds from 0.01 to 3600, not 'nan'"),
        (["--headless", "--engine", "fileio", "--dir", "{dir}/fio", "--file-total-size", "8M", "--file-test-mode",
          "rndrw", "--file-rw-ratio", "nan", "--time", "1"], "--file-rw-ratio: takes reads per write"),
        (["--headless", "--engine", "sqlite", "--ignore-errors", "banana", "--time", "1"],
         "--ignore-errors: 'banana' is neither an error number nor a SQLSTATE"),
        (["--headless", *PG, "--connections", "0", "--threads", "2", "--time", "1"],
         "connections must be between 1 and 65536, not 0"),
        (["--headless", "--engine", "sqlite", "--report-interval", "0.001", "--time", "1"],
         "--report-interval takes 0 (the summary only) or from 0.1 s, not 0.001"),
        (["knee", "--headless", "--engine", "sqlite", "--min-threads", "1", "--max-threads", "2", "--p99-limit", "1e308"],
         "the p99 limit takes milliseconds from 0 to 3600000 (an hour), not 1e+308"),
        (["--headless", "--engine", "sqlite", "--metrics-listen", "", "--time", "1"], "--metrics-listen takes HOST:PORT"),
        (["report", "{dir}/run", "--width", "0"], "--width: takes columns from 10 to 1000, not '0'"),
        (["report", "{dir}/run", "--width", "-5"], "not '-5'"),
        (["--headless", "--engine", "sqlite", "--out", "", "--time", "1"], "--out takes a folder"),
        (["--headless", "--engine", "sqlite", "--point-selects", "99999999999", "--time", "1"],
         "option --point-selects must be at most 100000, not 99999999999"),
        (["prepare", "--engine", "sqlite", "--db", "{dir}/tpcc.db", "--workload", "tpcc", "--scale", "99999999999"],
         "tpcc loads 49,901,099,999,600,989 rows, about 451706957 TB, but {dir} has"),
        (["--headless", "--engine", "sqlite", "--workload", "tpcc", "--scale", "99999999999", "--time", "1"],
         "tpcc loads 49,901,099,999,600,989 rows, about 451706957 TB, but "),
        (["--headless", "--engine", "postgres", "--pgsql-host", "127.0.0.1", "--pgsql-port", "-1", "--time", "1"],
         "--pgsql-port takes a port from 1 to 65535, not '-1'"),
        (["--headless", *PG[:2], "--dsn", "postgresql://u@/db?host=/tmp&port=99999", "--time", "1"],
         "bad port '99999'"),
    ],
)  # fmt: skip
def test_hostile_input_is_one_line_and_writes_nothing(argv, line, tmp_path, monkeypatch, capsys) -> None:
    from benchtop.commands import main

    (tmp_path / "w.toml").write_text(WEIGHT_TOML)
    _results_folder(tmp_path / "run")
    before = sorted(tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCHTOP_RESULTS", str(tmp_path / "results"))
    code = main([a.format(dir=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code not in (0, None) and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and line.format(dir=tmp_path) in err, err
    assert sorted(tmp_path.rglob("*")) == before  # nothing prepared, no results folder, no file


def _results_folder(folder, summary: dict | None = None, intervals: str | None = None) -> None:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary or {
        "transactions": 30, "tps": 10.0, "time_s": 3.0, "threads": 1, "errors": 0,
        "latency_ms": {"p95": 1.0, "p99": 2.0}}))
    (folder / "intervals.jsonl").write_text(intervals or "".join(
        json.dumps({"type": "interval", "t": t, "tps": 10.0, "threads": 1, "transactions": 10,
                    "latency_ms": {"p95": 1.0, "p99": 2.0}}) + "\n" for t in (1.0, 2.0, 3.0)))


@pytest.mark.parametrize("extra", [[], ["--html", "{dir}/r.html"], ["--png", "{dir}/png"]])
def test_report_refuses_a_summary_no_run_writes(extra, tmp_path, capsys) -> None:
    from benchtop.commands import main

    summary = {"transactions": 30, "tps": 10.0, "time_s": 3.0, "threads": -1e308, "latency_ms": {"p99": 2.0}}
    _results_folder(tmp_path / "run", summary=summary)
    code = main(["report", str(tmp_path / "run"), *(a.format(dir=tmp_path) for a in extra)])
    err = capsys.readouterr().err
    assert code == 1 and err.strip() == (f"benchtop report: error: {tmp_path}/run/summary.json: threads is -1e+308, "
                                         "not a count (a damaged or edited file: fix or remove it)")
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "png").exists()


def test_report_names_a_non_number_and_a_cut_line_and_shows_the_rest(tmp_path, capsys) -> None:
    from benchtop.commands import main

    line = '{"type": "interval", "t": %s, "tps": %s, "threads": 1, "latency_ms": {"p99": 2.0}}\n'
    _results_folder(tmp_path / "run", intervals=line % (1, '"banana"') + line % (2, 10) + (line % (3, 10))[:-8])
    (tmp_path / "run" / "monitor.jsonl").write_text('{"t": 1.0, "sources": {}}\n{"t": 2.0, "sour')
    assert main(["report", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err.splitlines()
    folder = tmp_path / "run"
    assert err == [
        f"benchtop report: warning: {folder}/intervals.jsonl:3: cut short (the writer was stopped mid-line?), left out",
        f"benchtop report: warning: {folder}/intervals.jsonl:1: tps is 'banana', not a number, left out",
        f"benchtop report: warning: {folder}/monitor.jsonl:2: cut short (the writer was stopped mid-line?), left out",
    ]


def test_replay_names_a_non_number_and_plays_the_rest(tmp_path, capsys) -> None:
    from benchtop.commands import main

    line = '{"type": "interval", "t": %s, "tps": %s, "threads": 1, "latency_ms": {"p99": 2.0}}\n'
    _results_folder(tmp_path / "run", intervals=line % (1, '"banana"') + line % (2, 10))
    assert main(["replay", str(tmp_path / "run"), "--no-wait"]) == 0
    out, err = capsys.readouterr()
    assert err.strip() == (f"benchtop replay: warning: {tmp_path}/run/intervals.jsonl:1: tps is 'banana', "
                           "not a number, left out")
    assert "tps: 10.00" in out
