"""At 80x24 each view shows what matters most first: who runs what, for how
long, waiting on what; the limit line is never cut; history charts have
rows enough to read."""

from __future__ import annotations

import copy

from benchtop.screens.widgets.history import HistoryCharts, render_history
from benchtop.screens.widgets.verdict_line import VerdictLine
from textual.widgets import Static

from tests.tui.fakes import MYSQL_PANELS, PG_TOP_PANELS, FakeSource
from tests.tui.test_monitor_top import _column, _monitor, _ready, _table


def _nine_sessions() -> dict:
    panels = copy.deepcopy(MYSQL_PANELS)
    running = [r for r in panels["processlist"] if r.get("command") != "Sleep"]
    for i in range(9 - len(running)):
        panels["processlist"].append({"id": 100 + i, "user": "sbtest", "host": "localhost", "db": "sbtest",
                                      "command": "Query", "time_s": 1.0 + i, "state": "Sending data",
                                      "query": f"SELECT c FROM sbtest{i} WHERE id BETWEEN 1 AND 100 ORDER BY c"})
    return panels


async def test_mysql_top_at_80x24_shows_most_sessions_with_their_command() -> None:
    app = _monitor(FakeSource("mysql", [_nine_sessions()], kind="mysql"))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _ready(pilot, app)
        sessions = _table(pane, "processlist")
        await pilot.pause(0.2)
        assert _column(sessions, "Cmd")[0] == "Query"
        # the rows the table shows on screen (it held 2 of 9 before)
        assert sessions.size.height - 1 >= 6, sessions.size


async def test_the_limit_line_wraps_rather_than_cut_at_80_columns() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot, app)
        await pilot.pause(0.2)
        line = app.screen.query_one(VerdictLine)
        text = line.render().plain
        assert not text.endswith("…") and len(text) > line.content_size.width, text
        assert line.size.height == 2


async def test_history_charts_have_five_plot_rows_at_80x24() -> None:
    app = _monitor(FakeSource("mysql", [MYSQL_PANELS], kind="mysql"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot, app)
        await pilot.press("9")  # the history view (8 is who blocks whom)
        await pilot.pause(0.3)
        charts = app.screen.query_one(HistoryCharts)
        lines = render_history(charts.history, charts.size.width, charts.size.height).plain.splitlines()
        axes = [i for i, line in enumerate(lines) if "└" in line]
        titles = [0] + [i + 1 for i in axes[:-1]]
        assert axes and all(a - t - 1 >= 5 for t, a in zip(titles, axes)), lines


class _At(FakeSource):
    @property
    def where(self) -> str:
        return "127.0.0.1:15432"


async def test_the_status_line_takes_one_row_at_80_columns() -> None:
    # 'postgresql (postgresql, 127.0.0.1:15432) polled at ... every 2s, poll cost 78.1' / 'ms' took two rows
    app = _monitor(_At("postgresql", [PG_TOP_PANELS], kind="postgresql"))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _ready(pilot, app)
        status = pane.query_one(".status", Static)
        assert "postgresql 127.0.0.1:15432 polled " in str(status.render())
        assert status.size.height == 1, str(status.render())


async def test_mysql_top_at_80x24_leaves_the_waiters_query_room_beside_an_idle_holder() -> None:
    # a row lock staged on the test server: 'idle in trx (open 5.0s, 1 rows locked)' left the
    # waiting UPDATE 'UPDATE sbtest1 SE…'
    panels = copy.deepcopy(MYSQL_PANELS)
    panels["processlist"] = [
        {"id": 156, "user": "sbtest", "command": "Sleep", "time_s": 5.1, "state": "", "query": None},
        {"id": 157, "user": "sbtest", "command": "Query", "time_s": 4.1, "state": "Updating",
         "query": "UPDATE sbtest1 SET k=k+1 WHERE id=1"}]
    panels["transactions"] = [{"id": 156, "state": "RUNNING", "age_s": 5.0, "rows_locked": 1, "command": "Sleep",
                               "idle_s": 5.1}]
    app = _monitor(FakeSource("mysql", [panels], kind="mysql"))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _ready(pilot, app)
        sessions = _table(pane, "processlist")
        await pilot.pause(0.2)
        assert "idle in trx (5.0s, 1 row locked)" in _column(sessions, "State")
        query = next(c for c in sessions.columns.values() if str(c.label).rstrip("▼▲") == "Query")
        assert query.get_render_width(sessions) >= 23, query.get_render_width(sessions)


async def test_every_postgresql_view_keeps_its_digit_and_name_at_80_columns() -> None:
    # the bar read '... 7 blocking 8': the history view's name was cut off
    app = _monitor(FakeSource("postgresql", [PG_TOP_PANELS], kind="postgresql"))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _ready(pilot, app)
        bar = pane.query_one(".viewbar", Static)
        text = str(bar.render())
        assert text.startswith("1 activity ") and " 8 history" in text, text
        assert len(text[: text.index(" 8 history") + 10]) <= bar.content_size.width


async def test_postgresql_activity_at_80x24_says_what_an_active_session_waits_on() -> None:
    # the Wait column has no room under 100 columns: a session waiting on a lock or on I/O read 'active'
    panels = copy.deepcopy(PG_TOP_PANELS)
    panels["activity"][0].update(wait_event_type="IO", wait_event="WALSync")
    app = _monitor(FakeSource("postgresql", [panels], kind="postgresql"))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _ready(pilot, app)
        sessions = _table(pane, "activity")
        await pilot.pause(0.2)
        doing = dict(zip(_column(sessions, "PID"), _column(sessions, "State/wait")))
        assert doing["4242"] == "IO:WALSync" and doing["4250"] == "Lock:transactionid"
        assert doing["4251"] == "idle in trx"  # an idle session's ClientRead is no wait
