"""One source's pane: each source's views (views/: what runs now, what costs
most, and the rest) as summary lines and sortable, filterable tables, polled
in its own thread worker so a hung server freezes nothing.  A source kind
with no views is rendered generically, panel by panel."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import DataTable, Label, Static, TabbedContent

from benchtop.screens.details import RowDetails
from benchtop.screens.messages import SourceLost, SourcePolled
from benchtop.screens.modals import FilterModal
from benchtop.panels.history import History, metrics_for
from benchtop.panels.views import View, views_for
from benchtop.screens.widgets.fmt import crop, pane_id
from benchtop.screens.widgets.history import HistoryCharts
from benchtop.screens.widgets.panel_table import PanelTable, table_of
from benchtop.screens.widgets.table_block import TableBlock
from benchtop.screens.widgets.top_table import FocusHolder, TopTable
from benchtop.sources.base import Missing, SourceSnapshot
from benchtop.sources.poller import Poller




_KEPT = ("⚠", "waiting on", "top wait")  # a short pane's summary keeps these: what the sessions wait on


def summary_lines(lines: list[Text], body_h: int) -> list[Text]:
    """A view's summary, cut to a fifth of a short pane so its tables keep
    the room (0: no tables, every line); warnings (⚠) and what sessions wait
    on are kept first.

    >>> plain = [Text(t) for t in ("a", "b", "c", "waiting on Lock:tuple ×2", "⚠ e", "f")]
    >>> [t.plain for t in summary_lines(plain, 17)], len(summary_lines(plain, 40)), len(summary_lines(plain, 0))
    (['a', 'waiting on Lock:tuple ×2', '⚠ e'], 6, 6)
    """
    room = max(body_h // 5, 2)
    if not body_h or len(lines) <= room:
        return lines
    warnings = [i for i, t in enumerate(lines) if t.plain.startswith(_KEPT)][:room]
    others = [i for i in range(len(lines)) if i not in warnings][: room - len(warnings)]
    return [lines[i] for i in sorted(warnings + others)]

def tab_title(poller: Poller, pollers: Sequence[Poller]) -> str:
    """A source's tab label: its name, and its server's host:port when more
    than one server is watched (mysql / mysql-2 alone do not say which is which).

    >>> from types import SimpleNamespace as P
    >>> one, two = P(name="mysql", where="10.0.0.1:3306"), P(name="mysql-2", where="10.0.0.2:3306")
    >>> tab_title(one, [one]), tab_title(two, [one, two, P(name="os", where="")])
    ('mysql', 'mysql-2 10.0.0.2:3306')
    """
    servers = sum(1 for p in pollers if p.where)
    return f"{poller.name} {poller.where}" if servers > 1 and poller.where else poller.name

def bar_names(names: Sequence[str], active: int, width: int) -> list[str]:
    """The views' names for a bar of `width` with labels one space apart:
    when even that is too wide, the longest names but the active one's are
    cut (with a …) until it fits, so that every view keeps its digit and a
    readable name (PostgreSQL's 8 at 80 columns lost '8 history' whole).

    >>> pg = ["activity", "statements", "checkpoints", "tables", "vacuum", "repl", "blocking", "history"]
    >>> " ".join(f"{i + 1} {n}" for i, n in enumerate(bar_names(pg, 0, 80)))
    '1 activity 2 statemen… 3 checkpoi… 4 tables 5 vacuum 6 repl 7 blocking 8 history'
    >>> bar_names(pg, 2, 80)[2], bar_names(pg[:3], 0, 80) == pg[:3]
    ('checkpoints', True)
    """
    out = list(names)

    def total() -> int:
        return sum(len(f"{i + 1} {n}") for i, n in enumerate(out)) + len(out) - 1

    while total() > width:
        cuttable = [i for i, n in enumerate(out) if i != active and len(n) > 4]
        if not cuttable:
            break
        longest = max(cuttable, key=lambda i: len(out[i]))
        out[longest] = out[longest].rstrip("…")[:-1] + "…"
    return out


def status_line(name: str, kind: str, where: str, when: str, interval: float, poll_ms: float) -> str:
    """The pane's first line: which server, when it was polled and what the
    poll cost; one line at 80 columns for a source named after its kind
    (it took two, a row the sessions need).

    >>> status_line("postgresql", "postgresql", "127.0.0.1:15432", "15:13:13 UTC", 2.0, 78.14)
    'postgresql 127.0.0.1:15432 polled 15:13:13 UTC every 2s, cost 78.1 ms'
    >>> status_line("db", "mysql", "", "15:13:13 UTC", 0.5, 3.0)
    'db (mysql) polled 15:13:13 UTC every 0.5s, cost 3.0 ms'
    """
    named = name if name.startswith(kind) else f"{name} ({kind})"
    return f"{named} {where}".rstrip() + f" polled {when} every {interval:g}s, cost {poll_ms:.1f} ms"


class SourcePane(Vertical, FocusHolder, can_focus=True):
    """One source: a status line, an outage banner, the source's views (one
    at a time, Tab cycles them) and their keys."""

    DEFAULT_CSS = """
    SourcePane { height: 1fr; }
    SourcePane .banner { display: none; background: $warning 30%; text-style: bold; }
    SourcePane.lost .banner { display: block; }
    SourcePane.lost TopTable { opacity: 60%; }
    SourcePane .status { color: $text-muted; }
    SourcePane .viewbar { height: 1; }
    SourcePane .summary { height: auto; }
    SourcePane #body { height: 1fr; }
    SourcePane .view { height: 1fr; }
    SourcePane .generic { height: 1fr; }
    SourcePane .panel { height: auto; }
    SourcePane .panel-title { text-style: bold; }
    SourcePane .missing { color: $text-muted; margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("tab", "next_view", "next view", id="next_view"),
        Binding("shift+tab", "previous_view", "previous view", show=False, id="previous_view"),
        Binding("s", "sort", "sort", id="sort"),
        Binding("r", "reverse", "reverse", show=False, id="reverse"),
        Binding("l,slash", "filter", "filter", id="filter"),
        Binding("i", "toggle_idle", "idle", id="toggle_idle"),
        # the view bar numbers the views (1 top  2 statements ...): the digit goes there
        *(Binding(str(n), f"view({n - 1})", f"view {n}", show=False, id=f"view_{n}") for n in range(1, 10)),
    ]

    def __init__(self, poller: Poller, title: str | None = None, **kwargs: Any) -> None:
        super().__init__(id=f"source-{pane_id(poller.name)}", **kwargs)
        self.poller = poller
        self.title = title or poller.name  # its tab's label (tab_title)
        self.interval = float(getattr(poller, "interval", 2.0))
        self._polling = False
        self.paused = False
        self._timer: Any = None
        self._panels: dict[str, Vertical] = {}
        self.last: SourceSnapshot | None = None
        self.lost_error: str | None = None
        self.views: tuple[View, ...] = ()
        self.view_index = 0
        self.needle = ""
        self.show_idle = False
        self._built: str | None = None  # the view whose widgets are mounted
        self._summary: Static | None = None
        self._blocks: list[TableBlock] = []
        self._views_built: dict[str, tuple[Widget, Static | None, list[TableBlock]]] = {}
        self.want_focus = False  # the monitor screen focuses the table of the view on show
        self.history: History | None = None  # the main rates of every poll, for the history view
        self._failed: set[str] = set()  # the view failures already told
        self._drawn: Size | None = None  # the pane's size when last drawn

    def compose(self) -> ComposeResult:
        yield Static("", classes="banner")
        yield Static(f"{self.poller.name}: connecting…", classes="status")
        yield Static("", classes="viewbar")
        yield Vertical(id="body")

    def on_mount(self) -> None:
        self.poll()
        self._timer = self.set_interval(self.interval, self.poll)

    def set_poll_interval(self, seconds: float) -> None:
        self.interval = seconds
        if hasattr(self.poller, "interval"):
            self.poller.interval = seconds
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(seconds, self.poll)

    def poll(self) -> None:
        """Timer tick: one poll at a time per source, in its own group."""
        if self._polling or self.paused:
            return
        self._polling = True
        poller, name = self.poller, self.poller.name

        def work() -> None:
            try:
                snap = poller.poll()
            finally:
                self._polling = False
            if snap.ok:
                self.post_message(SourcePolled(name, snap))
            else:
                self.post_message(SourceLost(name, snap.error or "no answer"))

        self.app.run_worker(
            work,
            thread=True,
            exclusive=True,
            group=f"source:{name}",
            exit_on_error=False,
            description=f"polling {name}",
        )

    @on(SourcePolled)
    def _polled(self, event: SourcePolled) -> None:
        if self.lost_error is not None:
            self._label_tab(self.title)
        self.lost_error = None
        self.remove_class("lost")
        if self.history is None:
            self.history = History(metrics_for(event.snapshot.kind))
        self.history.add(event.snapshot)
        self.show(event.snapshot)

    def _label_tab(self, label: str) -> None:
        """The tab says when its source is down (not by colour alone)."""
        for tabs in self.screen.query(TabbedContent):
            try:
                tabs.get_tab(f"tab-{pane_id(self.poller.name)}").label = label
            except (NoMatches, ValueError):
                continue

    @on(SourceLost)
    def _lost(self, event: SourceLost) -> None:
        if self.lost_error is None:
            self._label_tab(f"⚠ {self.title}")
        self.lost_error = event.error
        self.add_class("lost")
        self.query_one(".banner", Static).update(
            Text(f"⚠ {event.source}: {event.error} — reconnecting… (showing the last data)")  # errors hold [..]
        )

    # -- rendering

    @property
    def view(self) -> View | None:
        return self.views[self.view_index] if self.views else None

    def show(self, snap: SourceSnapshot) -> None:
        self.last = snap
        self._drawn = self.size
        when = time.strftime("%H:%M:%S UTC", time.gmtime(snap.t))
        state = "  ‖ paused" if self.paused else ""
        self.query_one(".status", Static).update(Text(
            status_line(snap.name, snap.kind, self.poller.where, when, self.interval, snap.poll_ms) + state))
        if not self.views:
            self.views = views_for(snap.kind)
        view = self.view
        if view is None:
            self._show_generic(snap)
            return
        if self._built != view.key:
            self._build(view)
        try:
            self._render_view(view, snap)
        except Exception as exc:  # noqa: BLE001 - a view that cannot draw a snapshot must not end the run it watches
            text = f"{snap.name}: the {view.key} view failed to draw: {type(exc).__name__}: {exc}"
            if text not in self._failed:  # it fails again every poll: say it once
                self._failed.add(text)
                self.app.notify(text, severity="error", timeout=6)

    def _build(self, view: View) -> None:
        """Show `view`'s widgets, made the first time it is shown; the others
        stay mounted but hidden, so Tab only flips which one is displayed."""
        for key, (box, _, _) in self._views_built.items():
            box.display = key == view.key
        if view.key not in self._views_built:
            summary = Static("", classes="summary") if view.summary is not None else None
            blocks = [TableBlock(spec) for spec in view.tables]
            widgets: list[Widget] = [summary] if summary is not None else []
            if view.history:
                widgets.append(HistoryCharts(self.history or History(()), classes="history"))
            box = Vertical(*widgets, *blocks, classes="view")
            self._views_built[view.key] = (box, summary, blocks)
            self.query_one("#body", Vertical).mount(box)
        _, self._summary, self._blocks = self._views_built[view.key]
        self._built = view.key

    def _render_view(self, view: View, snap: SourceSnapshot) -> None:
        bar_text = Text()
        names = [v.key for v in self.views]
        idle = ("  idle shown" if self.show_idle else "  idle hidden") if any(t.idle for t in view.tables) else ""
        # the views first: a filter or the idle mark takes what room is left
        width = self.size.width or 80
        # one space around each view's label, or between labels when that is too wide (9 views at 80 columns)
        pad = " " if sum(len(f" {i + 1} {n} ") for i, n in enumerate(names)) + len(idle) <= width else ""
        if not pad:
            names = bar_names(names, self.view_index, width)
        for i, name in enumerate(names):
            if i and not pad:
                bar_text.append(" ")
            bar_text.append(f"{pad}{i + 1} {name}{pad}", "reverse bold" if i == self.view_index else "dim")
        if self.needle:
            bar_text.append(f"  filter: {self.needle}", "bold yellow")
        bar_text.append(idle, "dim")
        self.query_one(".viewbar", Static).update(bar_text)
        width = self.size.width or 80
        summary_h = 0
        body_h = self.query_one("#body").size.height
        if view.summary is not None and self._summary is not None:
            lines = summary_lines(view.summary(snap, width), body_h if view.tables else 0)
            summary_h = len(lines)
            self._summary.update(crop(Text("\n").join(lines), width))
        blocks = self._blocks
        # The first table (who runs what, for how long) takes the room left;
        # the ones under it keep a few rows each.
        room = body_h - summary_h - len(blocks)
        for i, block in enumerate(blocks):
            block.set_class(i == 0, "last")
            if i:
                block.table.styles.max_height = max(room // (len(blocks) + 2), 3)
            block.show(snap, self.needle, self.show_idle)
        if view.history and self.history is not None:
            for charts in self.query(HistoryCharts):
                charts.history = self.history
                charts.refresh()

    def on_resize(self) -> None:
        # A tab shown again gets a Resize to the size it had: drawing it again then
        # rebuilt every table of the view for nothing.
        if self.size != self._drawn:
            self.refresh_view()

    def refresh_view(self) -> None:
        if self.last is not None:
            self.show(self.last)

    def _show_generic(self, snap: SourceSnapshot) -> None:
        body = self.query_one("#body", Vertical)
        if self._built != "":
            body.remove_children()
            body.mount(VerticalScroll(classes="generic"))
            self._built = ""
        scalars = {k: v for k, v in snap.panels.items() if not isinstance(v, (dict, list, tuple, Missing))}
        panels: list[tuple[str, Any]] = [(k, v) for k, v in snap.panels.items() if k not in scalars]
        if scalars:
            panels.insert(0, ("values", scalars))
        for name, value in panels:
            self._show_panel(name, value)

    def _show_panel(self, name: str, value: Any) -> None:
        missing = isinstance(value, Missing)
        box = self._panels.get(name)
        if box is None:
            content: Any = _content(missing)
            box = Vertical(
                Label(name.replace("_", " "), classes="panel-title"),
                content,
                classes="panel",
                id=f"panel-{pane_id(name)}",
            )
            self._panels[name] = box
            self.query_one(".generic", VerticalScroll).mount(box)
        else:
            content = box.query(".content").first()
            if isinstance(content, PanelTable) == missing:
                content.remove()
                content = _content(missing)
                box.mount(content)
        if isinstance(value, Missing):
            hint = f"\n  how to fix: {value.hint}" if value.hint else ""
            content.update(Text(f"✗ missing: {value.what}{hint}"))  # hints hold [mysqld]: not markup
        else:
            content.show(*table_of(value))

    # -- keys

    def _table(self) -> TopTable | None:
        focused = self.screen.focused
        if isinstance(focused, TopTable) and focused in self.query(TopTable):
            return focused
        return self._blocks[0].table if self._blocks else None

    def switch_view(self, step: int) -> None:
        if not self.views:
            return
        self.view_index = (self.view_index + step) % len(self.views)
        self.refresh_view()
        self.focus_table()

    def focus_table(self) -> None:
        """Keys go to this pane's view: its first table takes the focus, now
        or as soon as it is mounted."""
        table = self._blocks[0].table if self._blocks else None
        if table is not None and table.is_mounted:
            table.focus()
        elif self.view is not None and not self.view.tables:
            self.focus()  # a view with no table: the pane itself takes the keys
        else:
            self.want_focus = True

    def action_view(self, index: int) -> None:
        """The view the bar numbers `index + 1` (a digit past the last: nothing)."""
        if 0 <= index < len(self.views) and index != self.view_index:
            self.switch_view(index - self.view_index)

    def action_next_view(self) -> None:
        self.switch_view(1)

    def action_previous_view(self) -> None:
        self.switch_view(-1)

    def action_sort(self) -> None:
        table = self._table()
        if table is not None:
            table.cycle_sort()

    def action_reverse(self) -> None:
        table = self._table()
        if table is not None:
            table.reverse()

    def action_toggle_idle(self) -> None:
        self.show_idle = not self.show_idle
        self.refresh_view()

    def action_filter(self) -> None:
        def chosen(text: str | None) -> None:
            if text is not None:
                self.needle = text
                self.refresh_view()

        self.app.push_screen(FilterModal(self.needle), chosen)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        if not isinstance(table, TopTable):
            return
        row = table.current()
        if row is not None:
            event.stop()
            self.app.push_screen(RowDetails(f"{self.poller.name}: {table.spec.title}", row, table.spec.cols))


def _content(missing: bool) -> Static | PanelTable:
    return Static("", classes="missing content") if missing else PanelTable(classes="content")
