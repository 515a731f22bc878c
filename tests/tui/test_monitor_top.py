"""The monitor as a top: each source's views with human units, and their
keys (views, sort, reverse, filter, idle, details, refresh, pause, sources),
driven with Pilot on fake sources shaped like the real ones."""

from __future__ import annotations

import io
import time

from rich.console import Console

from textual.widgets import Static, TabbedContent

from benchtop.screens.app import BenchtopApp
from benchtop.screens.details import RowDetails, details_table
from benchtop.screens.help import BENCH_KEYS, MONITOR_KEYS, HelpScreen, keys_table
from benchtop.screens.modals import FilterModal
from benchtop.screens.target_line import TargetTopLine
from benchtop.screens.widgets.source_pane import SourcePane
from benchtop.screens.widgets.top_table import TopTable
from benchtop.sources.base import Missing
from tests.tui.fakes import MYSQL_PANELS, PG_TOP_PANELS, PGB_PANELS, PROXYSQL_PANELS, FakeRunController, FakeSource

INTERNAL_KEYS = ("status_rates", "_per_s", "unsafe_because", "checkpoint_age_pct", "cl_active", "blocked_by")


async def _wait(pilot, cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


def _monitor(*sources: FakeSource) -> BenchtopApp:
    return BenchtopApp(None, list(sources))


async def _ready(pilot, app) -> SourcePane:
    panes = list(app.screen.query(SourcePane))
    def drawn() -> bool:
        tables = [t for t in panes[0].query(TopTable) if t.display]
        return all(p.last is not None for p in panes) and bool(tables) and all(t.size.width for t in tables)

    await _wait(pilot, drawn)
    await pilot.pause()
    await pilot.pause()
    return panes[0]


def _table(pane: SourcePane, panel: str) -> TopTable:
    return pane.query_one(f"#block-{panel} TopTable", TopTable)


def _column(table: TopTable, label: str) -> list[str]:
    labels = [str(c.label).rstrip("▼▲") for c in table.columns.values()]
    i = labels.index(label)
    return [str(table.get_row_at(r)[i]) for r in range(table.row_count)]


def _details(screen: RowDetails) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(details_table(screen.row, screen.cols))
    statics = "\n".join(str(w.render()) for w in screen.query(Static) if "RichVisual" not in str(w.render()))
    return console.export_text() + statics


def _screen_text(pane: SourcePane) -> str:
    parts = [str(w.render()) for w in pane.query(Static)]
    for table in pane.query(TopTable):
        parts += [" ".join(str(c.label) for c in table.columns.values())]
        parts += [" ".join(str(c) for c in table.get_row_at(r)) for r in range(table.row_count)]
    return "\n".join(parts)


async def test_mysql_top_shows_the_longest_statement_first_without_idle_ones() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await _ready(pilot, app)
        procs = _table(pane, "processlist")
        assert _column(procs, "Id") == ["7", "13", "12"]  # by time, the Sleep session hidden
        assert _column(procs, "Time") == ["42s", "3.5s", "4ms"]
        assert _column(procs, "Query")[0].startswith("SELECT c FROM sbtest1 WHERE id BETWEEN 5001")
        stmts = _table(pane, "top_statements")
        assert _column(stmts, "Time/s") == ["2.21s/s", "1.52s/s", "840ms/s"]
        text = _screen_text(pane)
        for shown in ("checkpoint age 62.5% of 76.8 MiB", "dirty 12.4%", "redo 4.5 MiB/s", "hit 99.91%",
                      "history 1.83k", "top wait wait/io/file/innodb/innodb_log_file 310ms/s", "1 lock wait"):  # fmt: skip
            assert shown in text, shown
        assert not [k for k in INTERNAL_KEYS if k in text]
        assert pane.screen.focused is procs  # the keys go to the view at once


async def test_sort_reverse_idle_filter_and_details_keys() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await _ready(pilot, app)
        procs = _table(pane, "processlist")
        await pilot.press("i")
        assert _column(procs, "Id") == ["14", "7", "13", "12"]  # idle shown: the sleeper's 120 s leads
        await pilot.press("i")
        await pilot.press("r")
        assert _column(procs, "Id") == ["12", "13", "7"]  # ascending
        await pilot.press("s")
        assert procs.sort_key != "time_s" and procs.descending
        await pilot.press("slash")
        assert isinstance(app.screen, FilterModal)
        await pilot.press(*"sbtest3", "enter")
        await _wait(pilot, lambda: procs.row_count == 1)
        assert _column(procs, "Id") == ["12"] and pane.needle == "sbtest3"
        await pilot.press("l")
        await pilot.press(*["backspace"] * 7, "enter")
        await _wait(pilot, lambda: procs.row_count == 3)
        # enter on the long statement: its full text, and every figure labelled
        await pilot.press("s", "s", "s", "s", "s")  # back to Time
        procs.sort_key, procs.descending = "time_s", True
        procs.redraw()
        procs.move_cursor(row=0)
        await pilot.press("enter")
        assert isinstance(app.screen, RowDetails)
        details = _details(app.screen)
        assert "AND k > 0 AND k > 0" in details and "Sending data" in details and "42s" in details
        await pilot.press("escape")
        assert not isinstance(app.screen, RowDetails)


async def test_tab_cycles_the_views_of_a_source() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _ready(pilot, app)
        seen = []
        for _ in range(9):
            seen.append(pane.view.key)
            await pilot.press("tab")
            await pilot.pause()
        assert seen == ["top", "statements", "waits", "innodb", "locks", "trx", "repl", "blocking", "history"]
        assert pane.view.key == "top"  # round again
        await pilot.press("shift+tab", "shift+tab", "shift+tab", "shift+tab", "shift+tab")
        await pilot.pause()
        assert pane.view.key == "locks"
        locks = _table(pane, "locks")
        assert _column(locks, "Blocker") == ["21"] and _column(locks, "Blocker does") == ["Sleep"]
        await pilot.press("shift+tab", "shift+tab")
        await pilot.pause()
        assert pane.view.key == "waits"
        waits = _table(pane, "waits")
        assert _column(waits, "Wait time/s") == ["310ms/s", "40.2ms/s", "12ms/s"]
        assert _column(waits, "")[0].strip() == "█" * 20  # the bar, longest for the top wait
        await pilot.press("tab")
        await pilot.pause()
        text = _screen_text(pane)
        assert "checkpoint age" in text and "│" in text and "async flushing" in text and "512.0 MiB" in text


async def test_a_missing_panel_says_how_to_fix_it() -> None:
    panels = dict(MYSQL_PANELS, top_statements=Missing("no SELECT on performance_schema",
                                                       "GRANT SELECT ON performance_schema.* TO 'mon'@'%'"))
    app = _monitor(FakeSource("mysql", [panels], kind="mysql"))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _ready(pilot, app)
        block = pane.query_one("#block-top_statements")
        assert block.has_class("missing-panel")
        text = str(block.query_one(".missing", Static).render())
        assert "no SELECT on performance_schema" in text and "GRANT SELECT ON performance_schema" in text
        assert _table(pane, "processlist").row_count == 3  # the rest of the source still shows


async def test_postgres_activity_shows_who_blocks_whom() -> None:
    app = _monitor(FakeSource("pg", [PG_TOP_PANELS], kind="postgresql"))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await _ready(pilot, app)
        act = _table(pane, "activity")
        assert _column(act, "PID") == ["4242", "4251", "4250"]  # idle hidden, oldest query first
        assert _column(act, "Blocked by") == ["", "", "4251"]
        assert _column(act, "Wait")[2] == "Lock:transactionid"
        text = _screen_text(pane)
        assert "1 session(s) blocked" in text and "WAL 2.4 MiB/s" in text and "cache hit 99.80%" in text
        await pilot.press("tab", "tab")
        await pilot.pause()
        text = _screen_text(pane)
        for shown in ("checkpointer", "buffers written", "120/s", "background writer", "full-page images", "1.0 GiB"):
            assert shown in text, shown
        await pilot.press("tab")
        await pilot.pause()
        assert _column(_table(pane, "tables"), "Table") == ["sbtest1"]
        assert _column(_table(pane, "indexes"), "Index") == ["sbtest1_pkey"]
        await pilot.press("tab")
        await pilot.pause()
        assert _column(_table(pane, "vacuum"), "Scanned") == ["33.3%"]


async def test_pgbouncer_pools_clients_servers() -> None:
    app = _monitor(FakeSource("pgbouncer", [PGB_PANELS]))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await _ready(pilot, app)
        pools = _table(pane, "pools")
        assert _column(pools, "Waiting") == ["2", "0"] and _column(pools, "Max wait") == ["250ms", "0"]
        assert "2 client(s) waiting" in _screen_text(pane)
        assert _column(_table(pane, "stats"), "Avg trx") == ["2.45ms"]
        await pilot.press("tab")
        await pilot.pause()
        assert _column(_table(pane, "clients"), "State") == ["waiting", "active"]
        await pilot.press("tab")
        await pilot.pause()
        assert _column(_table(pane, "servers"), "Port") == ["5432"]


async def test_proxysql_comcount_enter_shows_latency_buckets() -> None:
    app = _monitor(FakeSource("proxysql", [PROXYSQL_PANELS], kind="proxysql"))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await _ready(pilot, app)
        assert _column(_table(pane, "connection_pool"), "Status") == ["ONLINE", "SHUNNED"]
        for _ in range(4):
            await pilot.press("tab")
        await pilot.pause()
        assert pane.view.key == "comcount"
        await pilot.press("enter")
        assert isinstance(app.screen, RowDetails)
        details = _details(app.screen)
        assert "latency buckets" in details and "≤ 500µs" in details and "> 10s" in details


async def test_refresh_pause_sources_and_help_keys() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"), FakeSource("pgbouncer", [PGB_PANELS]))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _ready(pilot, app)
        panes = list(app.screen.query(SourcePane))
        await pilot.press("plus")
        assert [p.interval for p in panes] == [5.0, 5.0]
        await pilot.press("minus", "minus")
        assert [p.interval for p in panes] == [1.0, 1.0]
        await pilot.press("p")
        assert all(p.paused for p in panes)
        polls = panes[0].poller.stats.polls
        await pilot.pause(1.3)
        assert panes[0].poller.stats.polls == polls
        await pilot.press("p")
        assert not any(p.paused for p in panes)
        await pilot.press("greater_than_sign")
        await pilot.pause()
        assert app.screen.query_one(TabbedContent).active == "tab-pgbouncer"
        await pilot.press("less_than_sign")
        await pilot.pause()
        assert app.screen.query_one(TabbedContent).active == "tab-mysql"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(keys_table(MONITOR_KEYS))
        help_text = console.export_text()
        assert not app.screen.bench
        for key in ("tab / shift+tab", "reverse the sort", "filter", "idle", "enter", "+ / -", "pause"):
            assert key in help_text, key
        await pilot.press("escape")
        assert pane.last is not None


async def test_dashboard_top_line_of_the_target() -> None:
    app = BenchtopApp(FakeRunController(), [FakeSource("mysql", [MYSQL_PANELS], kind="mysql")])
    async with app.run_test(size=(120, 36)) as pilot:
        line = app.screen.query_one(TargetTopLine)
        await _wait(pilot, lambda: line.has_class("has-data"))
        await pilot.pause()
        text = str(line.render())
        assert "top 91/s avg 24.3ms SELECT `c` FROM `sbtest1`" in text  # the costliest, cut at the width
        assert "wait innodb_log_file 310ms/s" in text and "ckpt age 62.5%" in text and "lock waits 1" in text


async def test_a_recording_replays_into_the_same_views(tmp_path) -> None:
    import json

    from benchtop.record.replay import events
    from benchtop.screens.replay import replay_pollers
    from benchtop.sources.base import SourceSnapshot

    snap = SourceSnapshot("mysql", "mysql", 1_700_000_000.0, True, 2.0, panels=MYSQL_PANELS)
    line = {"type": "snapshot", "t": snap.t, "sources": {"mysql": json.loads(json.dumps(snap.to_dict()))}}
    (tmp_path / "monitor.jsonl").write_text(json.dumps(line) + "\n")
    app = BenchtopApp(None, replay_pollers(events(tmp_path), speed=1000.0), source_interval=0.1)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await _ready(pilot, app)
        assert _column(_table(pane, "processlist"), "Id") == ["7", "13", "12"]
        assert "checkpoint age 62.5%" in _screen_text(pane)


async def test_the_run_s_server_tabs_are_reached_by_the_monitor_s_keys() -> None:
    """Issue 43: tab and digits did not leave the bench tab, and ] (next source
    in the monitor) doubled the rate there.  > and < move between tabs in both
    screens; on the bench tab tab/shift+tab and digits pick tabs, on a source's
    tab its views; ] stays the rate key."""
    fake = FakeRunController()
    app = BenchtopApp(fake, [FakeSource("mysql", [MYSQL_PANELS], kind="mysql"), FakeSource("pgbouncer", [PGB_PANELS])])
    async with app.run_test(size=(120, 40)) as pilot:
        tabs = app.screen.query_one(TabbedContent)
        await _wait(pilot, lambda: all(p.last is not None for p in app.screen.query(SourcePane)))
        assert tabs.active == "tab-bench"
        await pilot.press("tab")
        await pilot.pause()
        assert tabs.active == "tab-mysql"
        mysql = app.screen.query_one("#tab-mysql SourcePane", SourcePane)
        await _wait(pilot, lambda: mysql.view is not None and any(t.has_focus for t in mysql.query(TopTable)))
        await pilot.press("tab")  # on a source's tab: its next view
        await pilot.pause()
        assert tabs.active == "tab-mysql" and mysql.view.key == "statements"
        await pilot.press("greater_than_sign")
        await pilot.pause()
        assert tabs.active == "tab-pgbouncer"
        await pilot.press("greater_than_sign")  # round to the bench
        await pilot.pause()
        assert tabs.active == "tab-bench"
        await pilot.press("3")
        await pilot.pause()
        assert tabs.active == "tab-pgbouncer"
        await pilot.press("less_than_sign", "less_than_sign")
        await pilot.pause()
        assert tabs.active == "tab-bench"
        await pilot.press("shift+tab")
        await pilot.pause()
        assert tabs.active == "tab-pgbouncer"
        await pilot.press("1")  # on a source's tab: its first view
        await pilot.pause()
        assert tabs.active == "tab-pgbouncer"
        await pilot.press("less_than_sign", "less_than_sign", "2")
        await pilot.pause()
        assert tabs.active == "tab-mysql"
        await pilot.press("less_than_sign")
        await pilot.pause()
        assert tabs.active == "tab-bench"
        rate = fake.rate
        await pilot.press("greater_than_sign", "less_than_sign")
        await pilot.pause()
        assert fake.rate == rate  # moving between tabs never turns the rate
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.screen.bench
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(keys_table(BENCH_KEYS))
        help_text = console.export_text()
        assert "> / <" in help_text and "next / previous tab" in help_text and "1 bench, 2 the first source" in help_text
        assert "rate x2 / half" in help_text
