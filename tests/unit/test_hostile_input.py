"""Hostile values for every number a run takes and for the files benchtop
reads: one UsageError / WorkloadError / ReportError line, never another
exception (which would be a traceback at the command line)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from benchtop.errors import UsageError
from benchtop.report.data import ReportError, load_run
from benchtop.run.options import NUMBER_RANGES, options_from_argv
from benchtop.run.results import read_jsonl
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

