"""Source tabs: each source's views (views.py: what runs now, what costs
most, and the rest) as summary lines and sortable, filterable tables, polled
in its own thread worker so a hung server freezes nothing.  A source kind
with no views is rendered generically, panel by panel.

`MonitorScreen` is monitor-only mode: the same panes with no load engine.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Label, Static, TabbedContent, TabPane

from benchtop.screens.details import RowDetails
from benchtop.screens.help import HelpScreen
from benchtop.screens.messages import SourceLost, SourcePolled
from benchtop.screens.modals import FilterModal
from benchtop.screens.views import Col, TableSpec, View, cell_of, filtered, fits, rows_for, sorted_rows, views_for
from benchtop.screens.widgets.fmt import crop
from benchtop.sources.base import Missing, Source, SourceSnapshot
from benchtop.sources.poller import Poller


def pane_id(name: str) -> str:
    """A widget id for a source name.

    >>> pane_id("mysql-2"), pane_id("db 1.example")
    ('mysql-2', 'db_1_example')
    """
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def cell(value: Any) -> str:
    """
    >>> [cell(v) for v in (None, True, 3, 2.5, 1234567.891, {"a": 1}, [1, 2], "x")]
    ['-', 'yes', '3', '2.50', '1234567.89', '{"a": 1}', '[1, 2]', 'x']
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str)
    return str(value)


def table_of(value: Any) -> tuple[list[str], list[list[Any]]]:
    """Columns and raw rows for a panel's value: rows of dicts, a mapping of
    mappings (one row per key), a flat mapping (key/value), or scalars.

    >>> table_of([{"db": "a", "n": 1}, {"db": "b", "x": 2}])
    (['db', 'n', 'x'], [['a', 1, None], ['b', None, 2]])
    >>> table_of({"p1": {"xact": 1}, "p2": {"xact": 2}})
    (['name', 'xact'], [['p1', 1], ['p2', 2]])
    >>> table_of({"lsn": 10, "dirty_pages_pct": 1.5})
    (['name', 'value'], [['lsn', 10], ['dirty_pages_pct', 1.5]])
    """
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(r, dict) for r in value):
            cols: list[str] = []
            for r in value:
                cols += [k for k in r if k not in cols]
            return cols, [[r.get(c) for c in cols] for r in value]
        return ["value"], [[v] for v in value]
    if isinstance(value, dict):
        if value and all(isinstance(v, dict) for v in value.values()):
            cols = []
            for r in value.values():
                cols += [k for k in r if k not in cols]
            return ["name", *cols], [[k, *(r.get(c) for c in cols)] for k, r in value.items()]
        return ["name", "value"], [[k, v] for k, v in value.items()]
    return ["value"], [[value]]


def _sort_key(v: Any) -> tuple[int, Any]:
    if isinstance(v, bool) or v is None:
        return (2, str(v))
    if isinstance(v, (int, float)):
        return (0, v)
    return (1, str(v))


class PanelTable(DataTable):
    """A panel's table; click a column header to sort, again to reverse."""

    DEFAULT_CSS = """
    PanelTable { height: auto; max-height: 24; margin-bottom: 1; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self._columns: list[str] = []
        self._rows: list[list[Any]] = []
        self.sort_by: str | None = None
        self.sort_reverse = False

    def show(self, columns: list[str], rows: list[list[Any]]) -> None:
        if columns != self._columns:
            self.clear(columns=True)
            self.add_columns(*columns)
            self._columns = columns
            if self.sort_by not in columns:
                self.sort_by = None
        self._rows = rows
        self._redraw()

    def _redraw(self) -> None:
        rows = self._rows
        if self.sort_by is not None:
            i = self._columns.index(self.sort_by)
            rows = sorted(rows, key=lambda r: _sort_key(r[i]), reverse=self.sort_reverse)
        self.clear()
        self.add_rows([[cell(v) for v in r] for r in rows])

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        name = self._columns[event.column_index]
        self.sort_reverse = not self.sort_reverse if self.sort_by == name else True
        self.sort_by = name
        self._redraw()


class TopTable(DataTable):
    """One view table: rows sorted (s cycles the column, r reverses, or click
    a header), filtered, idle rows hidden unless asked; the last text column
    (the statement) is cut to the width left so rows stay one line."""

    DEFAULT_CSS = """
    TopTable { height: 1fr; min-height: 3; }
    """

    def __init__(self, spec: TableSpec, **kwargs: Any) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self.spec = spec
        self.sort_key = spec.sort
        self.descending = spec.descending
        self.rows_all: list[Mapping[str, Any]] = []
        self.shown: list[Mapping[str, Any]] = []
        self.needle = ""
        self.show_idle = False
        self.cols: list[Col] = list(spec.cols)
        self._drawn_width = -1

    def show(self, rows: Sequence[Mapping[str, Any]], needle: str, show_idle: bool) -> None:
        self.rows_all, self.needle, self.show_idle = list(rows), needle, show_idle
        self.redraw()

    def _labels(self) -> list[str]:
        arrow = "▼" if self.descending else "▲"
        return [f"{c.label}{arrow}" if c.key == self.sort_key else c.label for c in self.cols]

    def redraw(self) -> None:
        spec = self.spec
        rows = sorted_rows(filtered(self.rows_all, spec, self.needle, self.show_idle), self.sort_key, self.descending)
        self.shown = rows
        # A column no row has (p95 on MariaDB) is left out rather than shown as dashes.
        width = self._drawn_width = self.size.width
        cols = [
            c for c in spec.cols if fits(c, width) and (not self.rows_all or any(c.key in r for r in self.rows_all))
        ]
        self.cols = cols
        cells = [[cell_of(c, r) for c in cols] for r in rows]
        last = max((i for i, c in enumerate(cols) if not c.numeric), default=len(cols) - 1)
        labels = self._labels()
        used = 0
        for i, col in enumerate(cols):
            if i != last:
                widest = max((len(str(row[i])) for row in cells), default=0)
                used += max(len(labels[i]), widest, col.width or 0) + 2
        room = max(width - used - 3, 12) if width else 80
        for row in cells:
            value = str(row[last])
            row[last] = value if len(value) <= room else value[: room - 1] + "…"
        cursor = self.cursor_row
        self.clear(columns=True)
        self.add_columns(*labels)
        for r, row in zip(rows, cells):
            style = spec.alert(r) if spec.alert is not None else None
            self.add_row(*[Text(c, style=style or "") if isinstance(c, str) else _styled(c, style) for c in row])
        if rows:
            self.move_cursor(row=min(cursor, len(rows) - 1))

    def on_resize(self) -> None:
        if self.size.width != self._drawn_width:  # columns depend on the width only
            self.redraw()

    def on_mount(self) -> None:
        pane = next((a for a in self.ancestors if isinstance(a, SourcePane)), None)
        if pane is not None and pane.want_focus:
            pane.want_focus = False
            self.focus()

    def cycle_sort(self) -> None:
        keys = [c.key for c in self.cols if c.label]
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)] if self.sort_key in keys else keys[0]
        self.descending = True
        self.redraw()

    def reverse(self) -> None:
        self.descending = not self.descending
        self.redraw()

    def current(self) -> Mapping[str, Any] | None:
        return self.shown[self.cursor_row] if 0 <= self.cursor_row < len(self.shown) else None

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        key = self.cols[event.column_index].key
        if key == self.sort_key:
            self.descending = not self.descending
        else:
            self.sort_key, self.descending = key, True
        self.redraw()


def _styled(value: Text, style: str | None) -> Text:
    if style:
        value = value.copy()
        value.stylize(style)
    return value


class TableBlock(Vertical):
    """A table with its title, or the panel's Missing message in its place."""

    DEFAULT_CSS = """
    TableBlock { height: auto; }
    TableBlock TopTable { height: auto; }
    TableBlock.last { height: 1fr; }
    TableBlock.last TopTable { height: 1fr; }
    TableBlock .block-title { text-style: bold; background: $boost; width: 100%; }
    TableBlock .missing { color: $text-muted; height: auto; display: none; }
    TableBlock.missing-panel .missing { display: block; }
    TableBlock.missing-panel TopTable { display: none; }
    TableBlock.missing-panel { height: auto; }
    """

    def __init__(self, spec: TableSpec) -> None:
        super().__init__(id=f"block-{pane_id(spec.panel)}")
        self.spec = spec
        self.table = TopTable(spec)
        self._pending: tuple[SourceSnapshot, str, bool] | None = None
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static(self.spec.title, classes="block-title")
        yield self.table
        yield Static("", classes="missing")

    def on_mount(self) -> None:
        self._ready = True
        if self._pending is not None:
            self.show(*self._pending)

    def show(self, snap: SourceSnapshot, needle: str, show_idle: bool) -> None:
        if not self._ready:  # just built: drawn once its table exists
            self._pending = (snap, needle, show_idle)
            return
        rows = rows_for(self.spec, snap)
        table = self.table
        self.set_class(isinstance(rows, Missing), "missing-panel")
        if isinstance(rows, Missing):
            hint = f"\n  how to fix: {rows.hint}" if rows.hint else ""
            self.query_one(".missing", Static).update(f"✗ {rows.what}{hint}")
            return
        table.show(rows, needle, show_idle)
        hidden = len(rows) - len(table.shown)
        title = self.spec.title + (f"  [{len(table.shown)} shown, {hidden} hidden]" if hidden else f"  [{len(rows)}]")
        self.query_one(".block-title", Static).update(title)


class SourcePane(Vertical, can_focus=True):
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
    ]

    def __init__(self, poller: Any, **kwargs: Any) -> None:
        super().__init__(id=f"source-{pane_id(poller.name)}", **kwargs)
        self.poller = poller
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
            self._label_tab(self.poller.name)
        self.lost_error = None
        self.remove_class("lost")
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
            self._label_tab(f"⚠ {self.poller.name}")
        self.lost_error = event.error
        self.add_class("lost")
        self.query_one(".banner", Static).update(
            f"⚠ {event.source}: {event.error} — reconnecting… (showing the last data)"
        )

    # -- rendering

    @property
    def view(self) -> View | None:
        return self.views[self.view_index] if self.views else None

    def show(self, snap: SourceSnapshot) -> None:
        self.last = snap
        when = time.strftime("%H:%M:%S UTC", time.gmtime(snap.t))
        state = "  ‖ paused" if self.paused else ""
        self.query_one(".status", Static).update(
            f"{snap.name} ({snap.kind}) polled at {when} every {self.interval:g}s, poll cost {snap.poll_ms:.1f} ms{state}"
        )
        if not self.views:
            self.views = views_for(snap.kind)
        view = self.view
        if view is None:
            self._show_generic(snap)
            return
        if self._built != view.key:
            self._build(view)
        self._render_view(view, snap)

    def _build(self, view: View) -> None:
        """Show `view`'s widgets, made the first time it is shown; the others
        stay mounted but hidden, so Tab only flips which one is displayed."""
        for key, (box, _, _) in self._views_built.items():
            box.display = key == view.key
        if view.key not in self._views_built:
            summary = Static("", classes="summary") if view.summary is not None else None
            blocks = [TableBlock(spec) for spec in view.tables]
            widgets: list[Widget] = [summary] if summary is not None else []
            box = Vertical(*widgets, *blocks, classes="view")
            self._views_built[view.key] = (box, summary, blocks)
            self.query_one("#body", Vertical).mount(box)
        _, self._summary, self._blocks = self._views_built[view.key]
        self._built = view.key

    def _render_view(self, view: View, snap: SourceSnapshot) -> None:
        bar_text = Text()
        for i, v in enumerate(self.views):
            bar_text.append(f" {i + 1} {v.key} ", "reverse bold" if i == self.view_index else "dim")
        if self.needle:
            bar_text.append(f"  filter: {self.needle}", "bold yellow")
        if view.tables and any(t.idle for t in view.tables):
            bar_text.append("  idle shown" if self.show_idle else "  idle hidden", "dim")
        self.query_one(".viewbar", Static).update(bar_text)
        width = self.size.width or 80
        summary_h = 0
        if view.summary is not None and self._summary is not None:
            text = Text("\n").join(view.summary(snap, width))
            summary_h = len(text.plain.splitlines())
            self._summary.update(crop(text, width))
        blocks = self._blocks
        # The last table takes the room left; those above it get a fair share.
        room = self.query_one("#body").size.height - summary_h - len(blocks)
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            block.set_class(last, "last")
            if not last:
                block.table.styles.max_height = max(room // len(blocks) - 1, 4)
            block.show(snap, self.needle, self.show_idle)

    def on_resize(self) -> None:
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
            content.update(f"✗ missing: {value.what}{hint}")
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


REFRESH_STEPS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


def next_interval(current: float, step: int) -> float:
    """The refresh interval one step slower (+1) or faster (-1).

    >>> next_interval(2.0, 1), next_interval(2.0, -1), next_interval(0.5, -1), next_interval(3.0, 1)
    (5.0, 1.0, 0.5, 5.0)
    """
    if step > 0:
        return next((s for s in REFRESH_STEPS if s > current + 1e-9), REFRESH_STEPS[-1])
    return next((s for s in reversed(REFRESH_STEPS) if s < current - 1e-9), REFRESH_STEPS[0])


class MonitorScreen(Screen):
    """Monitor-only mode: a tab per source, no load."""

    BINDINGS = [
        Binding("plus,equals_sign", "refresh_by(1)", "slower", id="slower"),
        Binding("minus", "refresh_by(-1)", "faster", id="faster"),
        Binding("p,space", "pause", "pause", id="pause"),
        Binding("right_square_bracket", "source_by(1)", "next source", id="next_source"),
        Binding("left_square_bracket", "source_by(-1)", "previous source", show=False, id="previous_source"),
        Binding("ctrl+s", "save", "screenshot", show=False, id="save"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit_monitor", "quit", id="quit"),
    ]

    def __init__(self, pollers: Sequence[Any], save_dir: Path | None = None) -> None:
        super().__init__()
        self.pollers = list(pollers)
        self.paused = False
        self.save_dir = save_dir  # --out: screenshots go with the recording

    def compose(self) -> ComposeResult:
        names = ", ".join(p.name for p in self.pollers)
        yield Static(f"[b]benchtop monitor[/b]  {names}  (read-only polls)", id="monitor-header")
        with TabbedContent(id="tabs"):
            for p in self.pollers:
                with TabPane(p.name, id=f"tab-{pane_id(p.name)}"):
                    yield SourcePane(p)
        yield Footer(compact=True)

    def _active_pane(self) -> SourcePane | None:
        tabs = self.query_one(TabbedContent)
        active = tabs.active
        for pane in self.query(SourcePane):
            if f"tab-{pane_id(pane.poller.name)}" == active:
                return pane
        return None

    def on_mount(self) -> None:
        # The first tab shows first: its first table takes the keys once it exists.
        for pane in self.query(SourcePane).results():
            pane.want_focus = True
            break

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self._active_pane()
        if pane is not None:
            pane.focus_table()

    def action_refresh_by(self, step: int) -> None:
        panes = list(self.query(SourcePane))
        if not panes:
            return
        seconds = next_interval(panes[0].interval, step)
        for pane in panes:
            pane.set_poll_interval(seconds)
        self.notify(f"refresh every {seconds:g}s", timeout=2)

    def action_pause(self) -> None:
        self.paused = not self.paused
        for pane in self.query(SourcePane):
            pane.paused = self.paused
            pane.refresh_view()
        self.notify("paused: the screens keep the last poll" if self.paused else "resumed", timeout=2)

    def action_source_by(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = [f"tab-{pane_id(p.name)}" for p in self.pollers]
        if tabs.active in ids:
            tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]

    def action_save(self) -> None:
        path = self.app.save_screenshot(path=str(self.save_dir) if self.save_dir else None)
        self.notify(f"saved {path}", timeout=4)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(bench=False))

    def action_quit_monitor(self) -> None:
        self.app.exit(None)


def as_poller(source: Any, interval: float) -> Any:
    """Sources are polled through a Poller (bounded, never raising, with
    reconnect backoff); pollers pass through unchanged."""
    return Poller(source, interval=interval) if isinstance(source, Source) else source
