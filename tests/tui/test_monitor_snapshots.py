"""Each source's main view as the user sees it at 80x24, 120x40 and 200x60,
from deterministic fake sources shaped like the real ones.

Update after a deliberate change with:
    pytest tests/tui/test_monitor_snapshots.py --snapshot-update
"""

from __future__ import annotations

import time

import pytest

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.source_pane import SourcePane
from benchtop.screens.widgets.top_table import TopTable
from tests.tui.fakes import MYSQL_PANELS, PG_TOP_PANELS, PGB_PANELS, PROXYSQL_PANELS, FakeSource

SOURCES = {
    "mysql": ("mysql", MYSQL_PANELS),
    "postgresql": ("postgresql", PG_TOP_PANELS),
    "pgbouncer": ("pgbouncer", PGB_PANELS),
    "proxysql": ("proxysql", PROXYSQL_PANELS),
}


async def _drawn(pilot) -> None:
    def ready() -> bool:
        panes = list(pilot.app.screen.query(SourcePane))
        if not panes or panes[0].last is None:
            return False
        tables = [t for t in panes[0].query(TopTable) if t.display]
        return bool(tables) and all(t.size.width for t in tables)

    deadline = time.monotonic() + 10
    while not ready():
        assert time.monotonic() < deadline
        await pilot.pause(0.05)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("source", list(SOURCES))
def test_main_view(snap_compare, source: str, size: tuple[int, int]) -> None:
    kind, panels = SOURCES[source]
    app = BenchtopApp(None, [FakeSource(source, [panels], kind=kind)])
    assert snap_compare(app, terminal_size=size, run_before=_drawn)
