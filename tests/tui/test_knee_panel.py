"""A knee search in the dashboard: its probes and fit take the whole-run
histogram's panel, and the chart's text says the answer so far."""

from __future__ import annotations

from benchtop.knee.search import KneeSearch, Probe, SearchSettings
from benchtop.knee.usl import usl
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
    text = render_knee(search, 60, 12).plain
    lines = text.splitlines()
    assert lines[0].startswith("knee: best ") and "USL peak" in text and "limit 10 ms" in text
    assert len(lines) == 12
    assert text.count("●") + text.count("★") + text.count("×") == len(search.probes)
    assert "★" in text and "·" in text and "┊" in text
    assert lines[-1].strip().startswith("1") and lines[-1].rstrip().endswith("64 thr")
    assert render_knee(KneeSearch(SearchSettings(low=1, high=8)), 40, 6).plain.startswith("knee: probing")


async def test_dashboard_shows_the_search() -> None:
    fake = FakeRunController()
    fake.search = _searched()  # what KneeController carries
    app = BenchtopApp(fake)
    async with app.run_test(size=(100, 30)) as pilot:
        def knee_panels() -> list[Panel]:
            return [p for p in app.screen.query(Panel) if p.content == "knee"]

        await _wait(pilot, lambda: bool(knee_panels()) and "knee: best" in knee_panels()[0].render().plain)
        panels = knee_panels()
        assert panels
        assert "knee: best" in panels[0].render().plain
