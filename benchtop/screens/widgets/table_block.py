"""A view table with its title, or the panel's Missing message in its place."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from benchtop.panels.views import TableSpec, rows_for
from benchtop.screens.widgets.fmt import pane_id
from benchtop.screens.widgets.top_table import TopTable
from benchtop.sources.base import Missing, SourceSnapshot


class TableBlock(Vertical):
    """A table with its title, or the panel's Missing message in its place."""

    DEFAULT_CSS = """
    TableBlock { height: auto; }
    TableBlock TopTable { height: auto; }
    TableBlock.last { height: 1fr; }
    TableBlock.last TopTable { height: 1fr; }
    TableBlock .block-title { text-style: bold; background: $boost; width: 100%; height: 1;
                              text-wrap: nowrap; text-overflow: ellipsis; }
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
            self.query_one(".missing", Static).update(Text(f"✗ {rows.what}{hint}"))  # hints hold [mysqld]: not markup
            return
        table.show(rows, needle, show_idle)
        hidden = len(rows) - len(table.shown)
        title = self.spec.title + (f"  [{len(table.shown)} shown, {hidden} hidden]" if hidden else f"  [{len(rows)}]")
        self.query_one(".block-title", Static).update(title)
