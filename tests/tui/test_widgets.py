"""Pure rendering helpers: what the charts, histogram and server strip draw."""

from __future__ import annotations

import itertools
import math

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
    # 20 points, 2 per cell, right-aligned in 20 cells: point i is in cell 10 + i // 2
    assert plot.index("T") == 10 + 10 // 2 and plot.index("M") == 10 + 19 // 2 == len(plot) - 1
    assert len(text.splitlines()) == 6


def test_chart_newest_value_is_at_the_right_edge() -> None:
    text = render_chart(Text("x"), [Series("x", (0.0,) * 30 + (100.0,))], [], 27, 6).plain
    top_row = text.splitlines()[1]
    assert top_row.rstrip()[-1] != "┤" and top_row.rstrip()[-1] != " "


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
    assert text.startswith("pg WAL 2.4MB/s · ") and "/txn" in text


def test_missing_panel_gives_no_pick() -> None:
    series = ServerSeries(["db"])
    series.polled(SourceSnapshot("db", "mysql", 0.0, True, panels={"innodb": Missing("no PROCESS privilege")}))
    series.hold(2)
    assert series.rows([make_interval(0), make_interval(1)]) == []
