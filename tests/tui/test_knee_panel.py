"""A knee search in the dashboard: its probes and fit take the whole-run
histogram's panel, and the chart's text says the answer so far."""

from __future__ import annotations

from benchtop.knee.probe import ProbeTiming
from benchtop.knee.runner import KneeController
from benchtop.knee.search import KneeSearch, Probe, SearchSettings
from benchtop.knee.usl import usl
from benchtop.knee.view import knee_view
from benchtop.metrics.run_metrics import MeteredController, RunMetrics
from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.knee_chart import render_knee
from benchtop.screens.widgets.panel import Panel
from tests.tui.fakes import FakeRunController
from tests.tui.test_monitor_top import _wait


def _searched() -> KneeSearch:
    search = KneeSearch(SearchSettings(low=1, high=64, p99_limit_ms=10.0))
    for x in (1, 2, 4, 8, 16, 32, 64):
        tps = usl(x, 1000.0, 0.03, 0.0003)
        search.record(Probe(x, tps, 3 * x / tps * 1000, transactions=1000, time_s=2.0))
    return search


def test_render_knee_marks_probes_fit_best_and_limit() -> None:
    search = _searched()
    text = render_knee(knee_view(search), 60, 12).plain
    lines = text.splitlines()
    assert lines[0].startswith("knee: best ") and "USL peak" in text and "limit 10 ms" in text
    assert len(lines) == 12
    assert text.count("●") + text.count("★") + text.count("×") == len(search.probes)
    assert "★" in text and "·" in text and "┊" in text
    assert lines[-1].strip().startswith("1") and lines[-1].rstrip().endswith("64 thr")
    assert render_knee(knee_view(KneeSearch(SearchSettings(low=1, high=8))), 40, 6).plain.startswith("knee: probing")



def test_the_chart_takes_no_peak_or_limit_break_from_a_loose_fit() -> None:
    """The answer and the probe lines take none from a fit under r² 0.9; the
    chart drew this one's peak near 6 and a limit break near 9 all the same."""
    search = KneeSearch(SearchSettings(low=1, high=64, p99_limit_ms=10.0))
    for x, tps in ((1, 900.0), (2, 3000.0), (4, 1200.0), (8, 4000.0), (16, 1500.0)):
        search.record(Probe(x, tps, 3 * x / tps * 1000, transactions=6000, time_s=2.0))
    assert search.fit is not None and search.fit.r2 < 0.9
    view = knee_view(search)
    assert view.peak is None and view.limit_crossing is None and view.throughput is not None
    text = render_knee(view, 60, 12).plain
    assert "USL peak" not in text and "┊" not in text


async def test_dashboard_shows_the_search() -> None:
    fake = FakeRunController()
    fake.knee_view = knee_view(_searched())  # what KneeController shows
    app = BenchtopApp(fake)
    async with app.run_test(size=(100, 30)) as pilot:
        def knee_panels() -> list[Panel]:
            return [p for p in app.screen.query(Panel) if p.content == "knee"]

        await _wait(pilot, lambda: bool(knee_panels()) and "knee: best" in knee_panels()[0].render().plain)
        panels = knee_panels()
        assert panels
        assert "knee: best" in panels[0].render().plain


async def test_dashboard_shows_the_search_behind_the_metrics_wrapper() -> None:
    """`benchtop knee --metrics-listen` wraps the search in the metrics
    controller: the chart still draws, read through the protocol."""
    search = KneeSearch(SearchSettings(low=1, high=8, rate=True))  # a rate search: no scipy to load
    knee = KneeController(FakeRunController(), search, ProbeTiming(interval_s=3600.0))  # type: ignore[arg-type]
    app = BenchtopApp(MeteredController(knee, RunMetrics("sqlite", "oltp_read_write", "sqlite:///tmp/bench.db")))
    async with app.run_test(size=(100, 30)) as pilot:
        def knee_text() -> str:
            panels = [p for p in app.screen.query(Panel) if p.content == "knee"]
            return panels[0].render().plain if panels else ""

        await _wait(pilot, lambda: knee_text().startswith("knee: probing"))
        assert "8 rate" in knee_text()
