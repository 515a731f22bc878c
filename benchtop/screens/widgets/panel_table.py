"""A monitor panel shown as a plain table: the generic rendering of a source
kind with no views, any shape of panel value turned into columns and rows."""

from __future__ import annotations

import json
from typing import Any

from textual import on
from textual.widgets import DataTable


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
