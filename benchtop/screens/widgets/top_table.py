"""One view's table in a source pane: sorted, filtered, idle rows hidden,
the statement column cut to the width left."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.widgets import DataTable

from benchtop.panels.views import Col, TableSpec, cell_of, filtered, fits, sorted_rows


class FocusHolder:
    """A container (the source pane) that wants its first table focused as
    soon as that table is mounted."""

    want_focus: bool = False


class TopTable(DataTable):
    """One view table (no horizontal scroll: the statement is cut to fit, enter
    shows it whole): rows sorted (s cycles the column, r reverses, or click
    a header), filtered, idle rows hidden unless asked; the last text column
    (the statement) is cut to the width left so rows stay one line."""

    DEFAULT_CSS = """
    TopTable { height: 1fr; min-height: 3; overflow-x: hidden; }
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
        rows = sorted_rows(filtered(self.rows_all, spec, self.needle, self.show_idle), self.sort_key, self.descending,
                           spec.later)
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
        pane = next((a for a in self.ancestors if isinstance(a, FocusHolder)), None)
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
