"""Source tabs: generic panel rendering (a source kind with no designed
views), outages and reconnects, sorting, and monitor-only mode, with fake
sources (never the network)."""

from __future__ import annotations

import math
import threading
import time

from textual.widgets import Static, TabbedContent

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.panel_table import PanelTable
from benchtop.screens.widgets.source_pane import SourcePane
from benchtop.sources.base import Missing
from benchtop.sources.poller import SourcePoller
from benchtop.screens.widgets.server import ServerStrip
from tests.tui.fakes import PG_PANELS, POOLS_PANELS, FakeRunController, FakeSource, lost


async def _wait(pilot, cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


def _cells(table: PanelTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_panels_render_generically(fake) -> None:
    app = BenchtopApp(fake, [FakeSource("pgbouncer", [POOLS_PANELS], kind="custom")])
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.last is not None)
        await pilot.pause()
        pools = pane.query_one("#panel-pools PanelTable", PanelTable)
        assert [str(c.label) for c in pools.columns.values()][:3] == [
            "database",
            "user",
            "cl_active",
        ]
        assert _cells(pools)[0][:3] == ["sbtest", "sbtest", "4"]
        stats = pane.query_one("#panel-stats PanelTable", PanelTable)
        assert _cells(stats) == [["sbtest", "812.50", "16250.00", "420"]]
        values = pane.query_one("#panel-values PanelTable", PanelTable)
        assert _cells(values) == [["wal_bytes_per_s", "1048576.00"]]
        missing = pane.query_one("#panel-config .missing", Static)
        text = str(missing.render())
        assert "SHOW CONFIG needs the admin user" in text and "admin_users" in text


async def test_outage_shows_banner_then_recovers(fake) -> None:
    source = FakeSource("pgbouncer", [POOLS_PANELS, lost(), lost(), lost(), lost(), POOLS_PANELS], kind="custom")
    poller = SourcePoller(source, interval=0.1, backoff_initial_s=0.1)
    app = BenchtopApp(fake, [poller])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.has_class("lost"))
        banner = str(pane.query_one(".banner", Static).render())
        assert "connection lost" in banner and "reconnecting" in banner
        tabs = app.screen.query_one(TabbedContent)
        assert str(tabs.get_tab("tab-pgbouncer").label) == "⚠ pgbouncer"
        # the last data stays on screen under the banner
        assert pane.query_one("#panel-pools PanelTable", PanelTable).row_count == 2
        await _wait(pilot, lambda: not pane.has_class("lost"))
        assert str(tabs.get_tab("tab-pgbouncer").label) == "pgbouncer"
        assert source.connects >= 2
        # keys keep working through the outage
        await pilot.press("plus")
        await _wait(pilot, lambda: fake.threads == 9)


async def test_hung_source_does_not_freeze_keys(fake) -> None:
    answer = threading.Event()  # the hung poll answers (after 3 s at most) once the test is done

    class Hung(FakeSource):
        def poll(self):
            answer.wait(3)
            return super().poll()

    app = BenchtopApp(fake, [SourcePoller(Hung("mysql", [POOLS_PANELS]), interval=0.1, deadline_s=5)])
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.2)
            t0 = time.monotonic()
            await pilot.press("plus")
            await _wait(pilot, lambda: fake.threads == 9, timeout=1.0)
            assert time.monotonic() - t0 < 1.0
            answer.set()
    finally:
        answer.set()


async def test_missing_panel_replaced_by_data(fake) -> None:
    first = {"waits": Missing("performance_schema is off", "set performance_schema=ON")}
    then = {"waits": [{"event": "wait/io/file", "ms_per_s": 12.5, "count_per_s": 3}]}
    app = BenchtopApp(fake, [SourcePoller(FakeSource("mysql", [first, then], kind="custom"), interval=0.1)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: bool(pane.query("#panel-waits PanelTable")))
        await pilot.pause()
        assert not pane.query("#panel-waits .missing")
        assert _cells(pane.query_one("#panel-waits PanelTable", PanelTable)) == [["wait/io/file", "12.50", "3"]]


async def test_header_click_sorts(fake) -> None:
    app = BenchtopApp(fake, [FakeSource("pgbouncer", [POOLS_PANELS], kind="custom")])
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.last is not None)
        await pilot.pause()
        pools = pane.query_one("#panel-pools PanelTable", PanelTable)
        col = list(pools.columns.values())
        i = [str(c.label) for c in col].index("cl_active")
        pools.post_message(PanelTable.HeaderSelected(pools, col[i].key, i, col[i].label))
        await pilot.pause()
        assert [r[i] for r in _cells(pools)] == ["4", "1"]  # descending first
        pools.post_message(PanelTable.HeaderSelected(pools, col[i].key, i, col[i].label))
        await pilot.pause()
        assert [r[i] for r in _cells(pools)] == ["1", "4"]


async def test_monitor_only_mode() -> None:
    app = BenchtopApp(
        None,
        [
            FakeSource("pgbouncer", [POOLS_PANELS]),
            FakeSource("mysql", [{"threads": {"running": 3}}]),
        ],
    )
    async with app.run_test(size=(100, 30)) as pilot:
        panes = list(app.screen.query(SourcePane))
        assert [p.poller.name for p in panes] == ["pgbouncer", "mysql"]
        await _wait(pilot, lambda: all(p.last is not None for p in panes))
        await pilot.press("question_mark")
        await pilot.press("escape")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value is None


async def test_server_series_share_the_time_axis() -> None:
    fake = FakeRunController(report_interval=0.1)
    source = FakeSource("pg", [PG_PANELS], kind="postgresql")
    app = BenchtopApp(fake, [SourcePoller(source, interval=0.1)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await _wait(pilot, lambda: any(not math.isnan(v) for vals in screen.server.values.values() for v in vals))
        await pilot.pause(0.3)
        rows = {r.label: r for r in screen.server.rows(screen.history)}
        wal = rows["pg WAL"]
        # one value per interval on screen, the held poll value where known
        assert len(wal.values) == len(screen.history)
        assert wal.values[-1] == 2_500_000.0
        assert abs(wal.latest_per_txn - 2_500_000.0 / screen.history[-1].tps) < 1e-6
        strip = str(screen.query_one(ServerStrip).render())
        assert "pg WAL 2.4 MiB/s" in strip and "/txn" in strip


async def test_outage_goes_on_the_timeline() -> None:
    fake = FakeRunController(report_interval=0.1)
    source = FakeSource("pgb", [POOLS_PANELS, lost(), lost(), lost(), POOLS_PANELS])
    app = BenchtopApp(fake, [SourcePoller(source, interval=0.1, backoff_initial_s=0.1)])
    async with app.run_test(size=(100, 30)) as pilot:
        await _wait(pilot, lambda: [e.text for e in fake.timeline if e.kind == "outage"][-1:] == ["pgb back"])
        outages = [e.text for e in fake.timeline if e.kind == "outage"]
        assert outages[0].startswith("pgb lost: connection lost")


async def test_a_view_that_fails_to_draw_is_told_and_the_run_goes_on(monkeypatch) -> None:
    from benchtop.panels.views import views_for

    def broken(snap, width):
        raise TypeError("'Missing' object is not iterable")

    monkeypatch.setattr("benchtop.screens.widgets.source_pane.views_for",
                        lambda kind: tuple(type(v)(v.key, v.title, broken, v.tables, v.history) for v in views_for(kind)))
    fake = FakeRunController(sample_delay=0.05)
    app = BenchtopApp(fake, [SourcePoller(FakeSource("postgresql", [PG_PANELS], kind="postgresql"), interval=0.1)])
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.last is not None)
        seen = pane.last
        await _wait(pilot, lambda: pane.last is not seen)  # polled and drawn again: still running
        assert app.is_running and app.return_code is None
        told = [n.message for n in app._notifications]
        assert told == ["postgresql: the activity view failed to draw: TypeError: 'Missing' object is not iterable"]


def test_a_dashboard_that_crashes_records_a_failed_run_not_a_quit(monkeypatch) -> None:
    from benchtop.screens import launch

    class Crashed:
        return_code = 1  # Textual's, after an exception ended the app

        def __init__(self, *args, **kwargs) -> None:
            pass

        def run(self) -> None:
            return None

    class Controller:
        reasons: list[str] = []

        def stop(self, reason: str) -> str:
            self.reasons.append(reason)
            return reason

    monkeypatch.setattr(launch, "BenchtopApp", Crashed)
    ctl = Controller()
    assert launch.run_tui(ctl).startswith("error: the dashboard failed")  # type: ignore[arg-type, union-attr]
    Crashed.return_code = 0  # ctrl+q: the user's quit
    assert launch.run_tui(ctl) == "quit"  # type: ignore[arg-type]


async def test_a_hint_in_brackets_is_shown_as_written(fake) -> None:
    # "[mariadbd]" is an option-file section, not Rich markup to swallow
    hint = "performance-schema-instrument='wait/lock/metadata/sql/mdl=ON' under [mariadbd]"
    first = {"metadata_locks": Missing("metadata lock instrument off", hint)}
    app = BenchtopApp(fake, [SourcePoller(FakeSource("mysql", [first], kind="custom"), interval=0.1)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: bool(pane.query("#panel-metadata_locks .missing")))
        await pilot.pause()
        assert "under [mariadbd]" in str(pane.query_one("#panel-metadata_locks .missing", Static).render())


async def test_two_servers_of_one_kind_are_told_apart_by_address() -> None:
    from textual.widgets import TabbedContent as Tabs

    from benchtop.screens.widgets.verdict_line import VerdictLine
    from benchtop.target import Target

    first, second = FakeSource("mysql", [{}], kind="mysql"), FakeSource("mysql-2", [{}], kind="mysql")
    first.target, second.target = Target(kind="mysql", port=13306), Target(kind="mysql", port=13307)
    app = BenchtopApp(None, [first, second])
    async with app.run_test(size=(120, 30)) as pilot:
        panes = list(app.screen.query(SourcePane))
        await _wait(pilot, lambda: all(p.last is not None for p in panes))
        tabs = app.screen.query_one(Tabs)
        assert [str(tabs.get_tab(f"tab-{n}").label) for n in ("mysql", "mysql-2")] == [
            "mysql 127.0.0.1:13306", "mysql-2 127.0.0.1:13307"]
        assert "127.0.0.1:13306" in str(panes[0].query_one(".status", Static).render())
        line = app.screen.query_one(VerdictLine)
        await _wait(pilot, lambda: line.render().plain.startswith("limit mysql 127.0.0.1:13306: "))
        await pilot.press("greater_than_sign")  # the next source's tab: the limit line is about its server
        await _wait(pilot, lambda: line.render().plain.startswith("limit mysql-2 127.0.0.1:13307: "))
