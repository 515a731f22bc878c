"""Switching between server tabs is cheap: a tab shown again keeps its
tables as drawn, and the key footer keeps its keys when they are the same."""

from __future__ import annotations

import time

from textual.widgets import Footer, TabbedContent

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.source_pane import SourcePane
from benchtop.screens.widgets.top_table import TopTable
from benchtop.sources.poller import SourcePoller
from tests.tui.fakes import MYSQL_PANELS, PGB_PANELS, FakeRunController, FakeSource


async def _wait(pilot, cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


async def test_a_tab_shown_again_is_not_redrawn_nor_its_footer_rebuilt(monkeypatch) -> None:
    # one poll each (the next comes in a minute): every redraw below is the switch's
    sources = [SourcePoller(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"), interval=60.0),
               SourcePoller(FakeSource("pgbouncer", [PGB_PANELS]), interval=60.0)]
    app = BenchtopApp(FakeRunController(), sources)
    async with app.run_test(size=(120, 40)) as pilot:
        tabs = app.screen.query_one(TabbedContent)
        await _wait(pilot, lambda: all(p.last is not None for p in app.screen.query(SourcePane)))
        for key, tab in ((">", "tab-mysql"), (">", "tab-pgbouncer"), ("<", "tab-mysql")):  # each drawn once shown
            await pilot.press(key)
            await _wait(pilot, lambda: tabs.active == tab and any(t.has_focus for t in app.screen.query(TopTable)))
        await pilot.pause()
        redraws: list[str] = []
        rebuilds: list[int] = []
        redraw, recompose = TopTable.redraw, Footer.recompose
        monkeypatch.setattr(TopTable, "redraw", lambda self: (redraws.append(self.spec.panel), redraw(self))[1])
        monkeypatch.setattr(Footer, "recompose", lambda self: (rebuilds.append(1), recompose(self))[1])
        for key, tab in ((">", "tab-pgbouncer"), ("<", "tab-mysql"), (">", "tab-pgbouncer")):
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab
        assert redraws == [] and rebuilds == []
        pgb = app.screen.query_one("#tab-pgbouncer SourcePane", SourcePane)
        assert any(t.has_focus for t in pgb.query(TopTable)) and pgb.query(TopTable).first().row_count
