"""The history view under Pilot for the sources whose charts issue 34 named
beside MySQL's: PostgreSQL's cache hit among its rates, ProxySQL's queries and
backend connections in use (dolphie's graphs)."""

from __future__ import annotations

import pytest

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.history import HistoryCharts
from tests.tui.fakes import PG_TOP_PANELS, PROXYSQL_PANELS, FakeSource
from tests.tui.test_monitor_top import _ready, _wait


def _monitor(source: FakeSource) -> BenchtopApp:
    """Polled every 0.5 s instead of the monitor's 2 s: the charts wait for a second poll."""
    return BenchtopApp(None, [source], source_interval=0.5)


def _proxysql_polls(n: int) -> list[dict]:
    polls = []
    for i in range(n):
        pool = [dict(r, ConnUsed=r["ConnUsed"] + i) for r in PROXYSQL_PANELS["connection_pool"]]
        rates = dict(PROXYSQL_PANELS["global_rates"], Questions=500.0 * (i + 1))
        polls.append(dict(PROXYSQL_PANELS, connection_pool=pool, global_rates=rates))
    return polls


async def _history_text(app, pilot, wanted: int) -> str:
    pane = await _ready(pilot, app)
    keys = [v.key for v in pane.views]
    await pilot.press(str(keys.index("history") + 1))
    await _wait(pilot, lambda: pane.history is not None and len(pane.history) >= wanted, timeout=15)
    await pilot.pause(0.2)
    return str(pane.query_one(HistoryCharts).render())


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_proxysql_history_charts_queries_and_pool_in_use(size) -> None:
    app = _monitor(FakeSource("proxysql", _proxysql_polls(4), kind="proxysql"))
    async with app.run_test(size=size) as pilot:
        text = await _history_text(app, pilot, 2)
        assert "queries" in text and "connections in use" in text and "┤" in text, text
        assert "(min 500/s" in text, text  # the range on screen, from the first poll's rate


async def test_postgres_history_has_the_cache_hit() -> None:
    polls = [dict(PG_TOP_PANELS, cache_hit_ratio={"interval": 0.90 + 0.02 * i, "cumulative": 0.99}) for i in range(4)]
    app = _monitor(FakeSource("postgresql", polls, kind="postgresql"))
    async with app.run_test(size=(200, 60)) as pilot:
        text = await _history_text(app, pilot, 2)
        assert "cache hit" in text and "commits" in text and "WAL written" in text, text
