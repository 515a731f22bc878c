"""Pure rendering helpers: what the charts, histogram and server strip draw."""

from __future__ import annotations

import pytest

import itertools
import math
import re

from rich.text import Text

from benchtop.engine.histogram import Histogram
from benchtop.sources.base import Missing, SourceSnapshot
from benchtop.screens.widgets.chart import Marker, Series, render_chart
from benchtop.screens.widgets.histogram import axis_for, columns, render_histogram
from benchtop.screens.widgets.server import ServerSeries, render_strip
from tests.tui.fakes import PG_PANELS, make_interval


def test_chart_puts_markers_where_events_happened() -> None:
    values = tuple(float(i) for i in range(20))
    text = render_chart(
        title=Text("tps"),
        series=[Series("tps", values)],
        markers=[Marker(10, "T"), Marker(19, "M")],
        width=27,
        height=6,
        t_end=20.0,
    ).plain
    axis = text.splitlines()[-1]
    plot = axis[7:]
    # 20 points, 2 per cell, from the left edge: point i is in cell i // 2
    assert plot.index("T") == 10 // 2 and plot.index("M") == 19 // 2
    assert len(text.splitlines()) == 6


def test_chart_starts_at_the_left_until_the_window_fills() -> None:
    text = render_chart(Text("x"), [Series("x", (0.0,) * 9 + (100.0,))], [], 27, 6).plain
    top_row = text.splitlines()[1]
    plot = top_row[7:]
    assert plot.rstrip() and len(plot.rstrip()) == 5  # 10 values, 2 per cell: the first 5 cells
    full = render_chart(Text("x"), [Series("x", (0.0,) * 60 + (100.0,))], [], 27, 6).plain
    assert full.splitlines()[1].rstrip()[-1] not in " ┤"  # once full, the newest value is at the right edge


def test_time_axis_has_round_elapsed_time_ticks() -> None:
    values = tuple(100.0 for _ in range(150))
    axis = render_chart(Text("tps"), [Series("tps", values)], [], 87, 6, t_end=150.0).plain.splitlines()[-1]
    labels = re.findall(r"┴(\d+:\d\d)", axis)
    assert labels == ["0:30", "1:00", "1:30", "2:00", "2:30"]
    for label in labels:  # each tick sits under the interval that ends at that time
        seconds = int(label[:-3]) * 60 + int(label[-2:])
        assert axis.index("┴" + label) - 7 == seconds // 2
    # 300 intervals in a window of 160: the newest, with the axis labelled by real elapsed time
    late = render_chart(Text("tps"), [Series("tps", values * 2)], [], 87, 6, t_end=300.0).plain.splitlines()[-1]
    assert re.findall(r"┴(\d+:\d\d)", late)[0] == "2:30"  # the window starts at 140 s


def test_value_axis_ticks_are_round() -> None:
    values = (4620.0, 2220.0, 3100.0)
    rows = render_chart(Text("tps"), [Series("tps", values)], [], 60, 12).plain.splitlines()[1:-1]
    labels = [r[:6].strip() for r in rows if r[6] == "┤"]
    assert labels and all(re.fullmatch(r"\d+(\.5)?k?|0", label) for label in labels), labels
    assert labels[0] == "5k" and labels[-1] == "0"


def test_histogram_shows_both_humps() -> None:
    main = [1_000_000 + k * 1000 for k in range(900)]  # ~1-2 ms
    tail = [40_000_000 + k * 10_000 for k in range(30)]  # ~40 ms, 3%
    hist = Histogram.from_values_ns(main + tail)
    axis = axis_for(hist)
    cols = columns(hist, axis, 60)
    nonzero = [i for i, c in enumerate(cols) if c]
    gaps = [b - a for a, b in itertools.pairwise(nonzero)]
    assert max(gaps) > 5, "two separate humps"
    assert sum(cols) == hist.total
    art = render_histogram("last 1s", hist, axis, 60, 8).plain.splitlines()
    tail_col = nonzero[-1]
    # the small hump is drawn, not lost under the big one's scale
    assert any(line[tail_col] != " " for line in art[1:-1])
    assert "┴1ms" in art[-1] and "┴10ms" in art[-1]


def test_server_series_line_up_with_intervals() -> None:
    series = ServerSeries(["pg"])
    series.hold(3)  # intervals before any poll: gaps
    snap = SourceSnapshot("pg", "postgresql", 0.0, True, panels=PG_PANELS)
    assert series.polled(snap) is False
    series.hold(2)
    assert series.lost("pg") is True
    series.hold(1)
    assert series.polled(snap) is True  # back after an outage
    series.hold(1)
    history = [make_interval(i) for i in range(7)]
    rows = {r.label: r for r in series.rows(history)}
    wal = rows["pg WAL"].values
    assert len(wal) == 7
    assert [math.isnan(v) for v in wal] == [True, True, True, False, False, True, False]
    assert rows["pg WAL"].latest_per_txn == 2_500_000.0 / history[-1].tps
    assert next(iter(rows)) == "pg WAL"  # a source's first pick comes first
    text = render_strip(list(rows.values()), 40, 4, False).plain
    assert text.startswith("pg WAL 2.4 MiB/s · ") and "/txn" in text


def test_missing_panel_gives_no_pick() -> None:
    series = ServerSeries(["db"])
    series.polled(SourceSnapshot("db", "mysql", 0.0, True, panels={"innodb": Missing("no PROCESS privilege")}))
    series.hold(2)
    assert series.rows([make_interval(0), make_interval(1)]) == []


@pytest.mark.parametrize("width", range(14, 81))
def test_histogram_axis_labels_1ms_whenever_it_is_on_the_axis(width: int) -> None:
    from benchtop.screens.widgets.histogram import Axis, decade_axis

    for lo, hi in ((4, 9), (5, 8), (3, 10), (6, 9)):
        row = decade_axis(Axis(lo, hi), width)
        assert len(row) == width and row.count("┴") == hi - lo + 1, (width, lo, hi, row)
        if width >= 5 * (hi - lo):  # a decade wide enough for "┴1ms"
            assert "┴1ms" in row, (width, lo, hi, row)
