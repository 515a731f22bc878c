"""The charts' y axes at every height a chart gets between 80x24 and 200x60:
both ends labelled, labels evenly spaced in rows and in value, round values,
a log axis labelling every decade (every other one when rows are short)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from benchtop.screens.widgets.chart import Scale, Series, render_chart, value_ticks
from benchtop.screens.widgets.fmt import ms_tick

HEIGHTS = range(1, 61)


def _even(xs: list[float]) -> bool:
    gaps = [b - a for a, b in zip(xs, xs[1:])]
    return all(math.isclose(g, gaps[0], rel_tol=1e-6, abs_tol=1e-9) for g in gaps)


def _check(axis, rows: int, lo: float, hi: float, log: bool) -> None:
    ticks = list(axis.ticks)
    if rows == 1:  # one row holds one label: the top
        assert ticks == [(0, axis.scale.hi)] and axis.scale.hi >= hi * (1 - 1e-9)
        return
    rows_at = [r for r, _ in ticks]
    values = [v for _, v in ticks]
    assert rows_at[-1] == rows - 1, "bottom end labelled"
    assert rows_at[0] == axis.top, "top end labelled"
    assert axis.top < max(len(ticks) - 1, 1), "fewer blank rows than steps"
    assert _even(rows_at), ticks
    assert values == sorted(values, reverse=True)
    if len(ticks) > 2 and not (log and rows <= 4):  # 3 or 4 rows: a label on each rather than the ends alone
        assert rows_at[1] - rows_at[0] >= 2, "a free row between labels"
    if log and 3 <= rows <= 4 and round(math.log10(values[0] / values[-1])) > 1:
        assert len(ticks) >= 3, "more than the two ends on a short log axis"
    assert axis.scale.hi == values[0] and axis.scale.lo == values[-1]
    assert axis.scale.lo <= lo * (1 + 1e-9) and axis.scale.hi >= hi * (1 - 1e-9), "the data fits"
    if log:
        exps = [math.log10(v) for v in values]
        assert all(math.isclose(e, round(e), abs_tol=1e-9) for e in exps), "decades"
        assert _even(exps)
        decades = round(exps[0] - exps[-1])
        stride = round(exps[0] - exps[1]) if len(exps) > 1 else decades
        if rows - 1 >= 2 * decades:
            assert stride == 1, "every decade when each has a free row"
        elif rows - 1 >= 2 * math.ceil(decades / 2):
            assert stride <= 2
    else:
        assert values[-1] == 0.0 and _even(values)
        step = values[0] - values[1] if len(values) > 1 else values[0]
        mant = step / 10 ** math.floor(math.log10(step))
        assert any(math.isclose(mant, m) for m in (1, 2, 2.5, 4, 5)), step


@pytest.mark.parametrize("rows", HEIGHTS)
@pytest.mark.parametrize("lo,hi", [(1.0, 1000.0), (0.8, 700.0), (0.05, 3.0), (2.0, 2.0), (0.01, 40000.0)])
def test_log_axis_even_at_every_height(rows: int, lo: float, hi: float) -> None:
    _check(value_ticks(Scale(lo, hi, True), rows), rows, lo, hi, True)


@pytest.mark.parametrize("rows", HEIGHTS)
@pytest.mark.parametrize("hi", [1.0, 7.0, 4620.0, 1234.0, 2000.0, 99999.0, 0.3])
def test_linear_axis_even_at_every_height(rows: int, hi: float) -> None:
    _check(value_ticks(Scale(0.0, hi, False), rows), rows, 0.0, hi, False)


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 60), lo=st.floats(1e-3, 1e4), span=st.floats(1.0, 1e6), log=st.booleans())
def test_any_range_any_height(rows: int, lo: float, span: float, log: bool) -> None:
    hi = lo * span
    lo = lo if log else 0.0
    _check(value_ticks(Scale(lo, hi, log), rows), rows, lo, hi, log)


@pytest.mark.parametrize("height", [6, 8, 12, 20, 30])
def test_rendered_latency_chart_labels_each_decade_evenly(height: int) -> None:
    """The 80x24 case from the issue: 1 ms .. 1 s was labelled 1s and 10ms
    only, two rows apart, the bottom end bare."""
    values = tuple(1.0 if i % 2 else 900.0 for i in range(40))
    lines = render_chart(Text("lat"), [Series("p99", values)], [], 60, height, log=True,
                         tick_fmt=ms_tick).plain.splitlines()[1:-1]
    labelled = [(i, line[:6].strip()) for i, line in enumerate(lines) if len(line) > 6 and line[6] == "┤"]
    assert labelled[-1] == (len(lines) - 1, "1ms")
    assert labelled[0][1] in ("1s", "10s")
    assert _even([i for i, _ in labelled])
    if len(lines) >= 7:
        assert [label for _, label in labelled] == ["1s", "100ms", "10ms", "1ms"]
    # the data is drawn on the rows between the ends, none above the top label
    assert all(not re.search(r"[\u2801-\u28ff]", line) for line in lines[: labelled[0][0]])
