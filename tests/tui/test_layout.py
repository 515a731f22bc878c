"""The dashboard's layout at the four sizes it is designed for (80x24,
120x40, 160x48, 200x60), with and without a rate and sources: every
chart and the panel beside it share their rows, and nothing drawn is cut
(the widgets' crop marks a cut line with "…")."""

from __future__ import annotations

import pytest

from benchtop.screens.app import BenchtopApp
from benchtop.screens.bench import Dashboard
from benchtop.screens.widgets.chart import TimeChart
from benchtop.screens.widgets.header import RunHeader
from benchtop.screens.widgets.panel import Panel
from benchtop.screens.widgets.server import ServerStrip
from tests.tui.fakes import PG_PANELS, POOLS_PANELS, FakeRunController, FakeSource

SIZES = [(80, 24), (120, 40), (160, 48), (200, 60)]


def _visible(widget) -> bool:
    return widget.display and all(a.display for a in widget.ancestors_with_self if hasattr(a, "display"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("rate, sources", [(0.0, False), (800.0, False), (800.0, True)],
                         ids=["closed", "rate", "rate+sources"])
async def test_panels_align_and_nothing_is_cut(size: tuple[int, int], rate: float, sources: bool) -> None:
    srcs = [FakeSource("pg", [PG_PANELS], kind="postgresql"), FakeSource("pgbouncer", [POOLS_PANELS])] if sources else []
    app = BenchtopApp(FakeRunController(rate=rate, preload=90), srcs)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        app.screen.sample_engine()
        await app.workers.wait_for_complete()
        await pilot.pause()
        dash = app.screen.query_one(Dashboard)
        bands = [b for b in dash.query(".band") if b.display]
        assert len(bands) >= 2
        for band in bands:
            chart, panel = band.children
            assert chart.region.y == panel.region.y and chart.region.height == panel.region.height, band.id
            assert chart.region.height >= 4
        drawn = [w for w in app.screen.query("TimeChart, Panel, RunHeader, ServerStrip") if _visible(w)]
        assert any(isinstance(w, Panel) and w.content == "timeline" for w in drawn)
        for w in drawn:
            assert isinstance(w, (TimeChart, Panel, RunHeader, ServerStrip))
            text = w.render()
            plain = getattr(text, "plain", str(text))
            assert "…" not in plain, f"{w.id} cut at {size}: {plain!r}"
        header = app.screen.query_one(RunHeader)
        assert "sqlite:///tmp/bench.db" in str(header.render())
