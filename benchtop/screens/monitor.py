"""Source tabs: each source's snapshot rendered generically, panel by panel
(tables for rows, key/value tables for mappings, the Missing message with its
hint), polled in its own thread worker so a hung server freezes nothing.

`MonitorScreen` is monitor-only mode: the same panes with no load engine.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import deque
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

from benchtop.screens.help import HelpScreen
from benchtop.screens.messages import SourceLost, SourcePolled
from benchtop.screens.widgets.fmt import crop, num
from benchtop.screens.widgets.server import NAN, spark
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


def rates_of(panels: Mapping[str, Any]) -> dict[str, float]:
    """Every per-second rate outside tables, named by where it sits.

    >>> rates_of({"wal_bytes_per_s": 10.0, "innodb": {"redo_bytes_per_s": 5, "lsn": 9},
    ...           "stats": {"db1": {"xact_per_s": 2.5}}, "pools": [{"x_per_s": 1}]})
    {'wal_bytes_per_s': 10.0, 'innodb.redo_bytes_per_s': 5.0, 'stats.db1.xact_per_s': 2.5}
    """

    def is_rate(key: str, value: Any) -> bool:
        return key.endswith("_per_s") and isinstance(value, (int, float)) and not isinstance(value, bool)

    out: dict[str, float] = {}
    for name, value in panels.items():
        if is_rate(name, value):
            out[name] = float(value)
        elif isinstance(value, Mapping):
            for key, inner in value.items():
                if is_rate(key, inner):
                    out[f"{name}.{key}"] = float(inner)
                elif isinstance(inner, Mapping):
                    out.update({f"{name}.{key}.{k}": float(v) for k, v in inner.items() if is_rate(k, v)})
    return out


class RateTrends(Widget):
    """Sparklines of a source's rates over its recent polls."""

    DEFAULT_CSS = """
    RateTrends { height: auto; margin-bottom: 1; }
    """
    KEEP = 120  # polls of history per rate
    SHOW = 12  # rates drawn at most, the busiest first

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.series: dict[str, deque[float]] = {}
        self.display = False  # until a poll brings rates

    def add(self, rates: Mapping[str, float]) -> None:
        for key in rates.keys() - self.series.keys():
            self.series[key] = deque([NAN] * len(next(iter(self.series.values()), ())), maxlen=self.KEEP)
        for key, values in self.series.items():
            values.append(rates.get(key, NAN))
        self.styles.height = min(len(self.series), self.SHOW) + 1
        self.display = bool(self.series)
        self.refresh()

    def render(self) -> Text:
        text = Text(no_wrap=True)
        text.append("rates over the last polls", "bold")

        def latest(vals: deque[float]) -> float:
            return next((v for v in reversed(vals) if not math.isnan(v)), 0.0)

        busiest = sorted(self.series, key=lambda k: -abs(latest(self.series[k])))[: self.SHOW]
        name_w = min(max((len(k) for k in busiest), default=8), 36)
        spark_w = max(self.size.width - name_w - 12, 8)
        for key in sorted(busiest):
            text.append(f"\n{key[:name_w]:<{name_w}} ")
            text.append(spark(list(self.series[key]), spark_w, False, per_cell=1), "cyan")
            text.append(f" {num(latest(self.series[key]))}/s")
        return crop(text, self.size.width)


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


class SourcePane(VerticalScroll):
    """One source: a status line, an outage banner, and its panels."""

    DEFAULT_CSS = """
    SourcePane { height: 1fr; }
    SourcePane .banner { display: none; background: $warning 30%; text-style: bold; }
    SourcePane.lost .banner { display: block; }
    SourcePane.lost PanelTable { opacity: 60%; }
    SourcePane .panel { height: auto; }
    SourcePane .panel-title { text-style: bold; }
    SourcePane .missing { color: $text-muted; margin-bottom: 1; }
    """

    def __init__(self, poller: Any, **kwargs: Any) -> None:
        super().__init__(id=f"source-{pane_id(poller.name)}", **kwargs)
        self.poller = poller
        self.interval = float(getattr(poller, "interval", 2.0))
        self._polling = False
        self._panels: dict[str, Vertical] = {}
        self.last: SourceSnapshot | None = None
        self.lost_error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="banner")
        yield Static(f"{self.poller.name}: connecting…", classes="status")
        yield RateTrends()

    def on_mount(self) -> None:
        self.poll()
        self.set_interval(self.interval, self.poll)

    def poll(self) -> None:
        """Timer tick: one poll at a time per source, in its own group."""
        if self._polling:
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

    def show(self, snap: SourceSnapshot) -> None:
        self.last = snap
        when = time.strftime("%H:%M:%S UTC", time.gmtime(snap.t))
        self.query_one(".status", Static).update(
            f"{snap.name} ({snap.kind}) polled at {when}, poll cost {snap.poll_ms:.1f} ms"
        )
        self.query_one(RateTrends).add(rates_of(snap.panels))
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
            self.mount(box)
        else:
            content = box.query(".content").first()
            if isinstance(content, PanelTable) == missing:
                # Missing <-> data: swap the content widget, keep the panel's place
                content.remove()
                content = _content(missing)
                box.mount(content)
        if isinstance(value, Missing):
            hint = f"\n  how to fix: {value.hint}" if value.hint else ""
            content.update(f"✗ missing: {value.what}{hint}")
        else:
            content.show(*table_of(value))


def _content(missing: bool) -> Static | PanelTable:
    return Static("", classes="missing content") if missing else PanelTable(classes="content")


class MonitorScreen(Screen):
    """Monitor-only mode: a tab per source, no load."""

    BINDINGS = [
        Binding("s", "save", "screenshot", id="save"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit_monitor", "quit", id="quit"),
    ]

    def __init__(self, pollers: Sequence[Any], save_dir: Path | None = None) -> None:
        super().__init__()
        self.pollers = list(pollers)
        self.save_dir = save_dir  # --out: screenshots go with the recording

    def compose(self) -> ComposeResult:
        names = ", ".join(p.name for p in self.pollers)
        yield Static(f"[b]benchtop monitor[/b]  {names}  (read-only polls)", id="monitor-header")
        with TabbedContent(id="tabs"):
            for p in self.pollers:
                with TabPane(p.name, id=f"tab-{pane_id(p.name)}"):
                    yield SourcePane(p)
        yield Footer(compact=True)

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
