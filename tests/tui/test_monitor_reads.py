"""Issue 34's monitor reads: processlist estimates marked at every width,
digit keys switching views as the view bar numbers them."""

from __future__ import annotations

import pytest

from benchtop.panels.headless import summary_lines
from benchtop.sources.base import SourceSnapshot
from tests.tui.fakes import MYSQL_PANELS, FakeSource
from tests.tui.test_monitor_top import _column, _monitor, _ready, _table

SAMPLED = {"schema": "sbtest", "sessions_running": 2, "total_ms_per_s": 9000.0, "sampled": True,
           "query": "SELECT c FROM sbtest1 WHERE id=?"}
PANELS = dict(MYSQL_PANELS, top_statements=[SAMPLED, *MYSQL_PANELS["top_statements"]])


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_processlist_estimates_are_marked_at_every_width(size) -> None:
    app = _monitor(FakeSource("mysql", [PANELS], kind="mysql"))
    async with app.run_test(size=size) as pilot:
        pane = await _ready(pilot, app)
        await pilot.press("2")  # the statements view
        await pilot.pause()
        stmts = _table(pane, "top_statements")
        labels = [str(c.label).rstrip("▼▲") for c in stmts.columns.values()]
        marks = _column(stmts, "Est" if size[0] < 100 else "How")
        # measured rows first, the estimate after them (ranked by its guess it would top the table)
        assert marks[-1].startswith("~") and not any(m.strip() for m in marks[:-1]), (labels, marks)
        assert _column(stmts, "Time/s")[-1] == "9s/s"


def test_headless_line_shows_a_measured_statement_before_the_estimate() -> None:
    snap = SourceSnapshot("mysql", "mysql", 0.0, True, panels=PANELS)
    assert not [line for line in summary_lines(snap) if "~est" in line]
    alone = SourceSnapshot("mysql", "mysql", 0.0, True, panels=dict(MYSQL_PANELS, top_statements=[SAMPLED]))
    top = [line for line in summary_lines(alone) if "SELECT c FROM sbtest1 WHERE id=?" in line]
    assert top and "9s/s  ~est" in top[0]


async def test_digit_keys_switch_views_as_labelled() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _ready(pilot, app)
        keys = [v.key for v in pane.views]
        for n in (3, 5, 1, 2):
            await pilot.press(str(n))
            await pilot.pause()
            assert pane.view.key == keys[n - 1], (n, pane.view.key)
        await pilot.press("9")  # the ninth view, or past the last: stays
        await pilot.pause()
        assert pane.view.key == (keys[8] if len(keys) >= 9 else keys[1])
        bar = str(pane.query_one(".viewbar").render())
        assert f"2 {keys[1]}" in bar


def test_postgres_headless_never_prints_a_negative_age() -> None:
    """`longest -0s`: a statement that started as the poll read the clock
    (now() - query_start a hair below zero) printed as minus zero."""
    from tests.tui.fakes import PG_TOP_PANELS

    activity = [dict(r, query_age_s=-0.0004, xact_age_s=-0.0002) for r in PG_TOP_PANELS["activity"]]
    snap = SourceSnapshot("pg", "postgresql", 0.0, True, panels=dict(PG_TOP_PANELS, activity=activity))
    text = "\n".join(summary_lines(snap))
    assert "-0" not in text and "sessions now" in text, text


async def test_history_view_charts_the_main_rates() -> None:
    """dolphie's graphs: each poll's rates kept, charted in the history view."""
    from benchtop.screens.widgets.history import HistoryCharts

    polls = [dict(MYSQL_PANELS, status_rates=dict(MYSQL_PANELS["status_rates"], questions_per_s=1000.0 * (i + 1)))
             for i in range(5)]
    app = _monitor(FakeSource("mysql", polls, kind="mysql"))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _ready(pilot, app)
        keys = [v.key for v in pane.views]
        await pilot.press(str(keys.index("history") + 1))
        await pilot.pause(0.5)
        charts = pane.query_one(HistoryCharts)
        assert pane.history is not None and len(pane.history) >= 1
        text = str(charts.render())
        assert "queries" in text and "commits" in text and "┤" in text, text
