"""What a view is made of: columns, tables, views, and the sort, filter and
idle toggle every table shares; the summary lines' helpers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from benchtop.panels.units import text
from benchtop.sources.base import Missing, SourceSnapshot

Cell = str | Text


@dataclass(frozen=True, slots=True)
class Col:
    label: str
    key: str
    fmt: Callable[[Any], str] = text
    numeric: bool = False
    width: int | None = None  # None: as wide as the content (the last text column takes the rest)
    min_screen: int = 0  # shown only when the table is at least this wide
    max_screen: int = 0  # shown only when the table is at most this wide (0: any); a narrow stand-in


def fits(col: Col, width: int) -> bool:
    """
    >>> narrow, wide = Col("", "mark", max_screen=99), Col("How", "how", min_screen=100)
    >>> [(fits(narrow, w), fits(wide, w)) for w in (80, 99, 100, 200)]
    [(True, False), (True, False), (False, True), (False, True)]
    """
    if width <= 0:
        return not col.max_screen
    return width >= col.min_screen and (not col.max_screen or width <= col.max_screen)


@dataclass(frozen=True, slots=True)
class TableSpec:
    panel: str
    title: str
    cols: tuple[Col, ...]
    sort: str  # the column key sorted on at first (descending when numeric)
    idle: Callable[[Mapping[str, Any]], bool] | None = None  # rows hidden unless idle ones are shown
    alert: Callable[[Mapping[str, Any]], str | None] | None = None  # a style for rows that need attention
    # the panel's value (and all the snapshot's panels) -> rows; default: the panel's list
    rows: Callable[[Any, Mapping[str, Any]], list[dict[str, Any]]] | None = None
    descending: bool = True  # the first sort's direction
    # rows ranked after all the others whatever the sort: estimates after measured figures
    later: Callable[[Mapping[str, Any]], bool] | None = None

    def rows_of(self, value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
        if self.rows is not None:
            return self.rows(value, panels)
        return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class View:
    key: str  # the tab's short name
    title: str
    summary: Callable[[SourceSnapshot, int], list[Text]] | None = None
    tables: tuple[TableSpec, ...] = field(default_factory=tuple)
    history: bool = False  # charts of the source's main rates over the last polls (panels/history.py)
    # its tables' top rows join the headless monitor's text whenever they have rows (someone is blocked)
    in_text_when_rows: bool = False


def sort_value(v: Any) -> tuple[int, Any]:
    """Numbers before text before blanks, so a descending sort puts the biggest first."""
    if isinstance(v, bool) or v is None:
        return (0, 0)
    if isinstance(v, (int, float)):
        return (2, v)
    if isinstance(v, (list, tuple)):
        return (1, len(v))
    return (1, str(v).lower())


def filtered(rows: Sequence[Mapping[str, Any]], spec: TableSpec, needle: str, show_idle: bool) -> list[Mapping[str, Any]]:
    """Rows left after the idle toggle and a case-insensitive filter over every column.

    >>> spec = TableSpec("p", "t", (Col("q", "q"),), "q", idle=lambda r: r["q"] == "Sleep")
    >>> [r["q"] for r in filtered([{"q": "Sleep"}, {"q": "SELECT 1"}, {"q": "select 2"}], spec, "SELECT", False)]
    ['SELECT 1', 'select 2']
    """
    out = []
    low = needle.lower()
    for row in rows:
        if not show_idle and spec.idle is not None and spec.idle(row):
            continue
        if low and not any(low in text(v).lower() for v in row.values()):
            continue
        out.append(row)
    return out


def sorted_rows(rows: Sequence[Mapping[str, Any]], key: str, descending: bool,
                later: Callable[[Mapping[str, Any]], bool] | None = None) -> list[Mapping[str, Any]]:
    """Rows by `key`; those `later` picks (estimates) after the others.

    >>> rows = [{"t": 5, "est": True}, {"t": 3}, {"t": 4}]
    >>> [r["t"] for r in sorted_rows(rows, "t", True, lambda r: bool(r.get("est")))]
    [4, 3, 5]
    """
    out = sorted(rows, key=lambda r: sort_value(r.get(key)), reverse=descending)
    if later is not None:
        out.sort(key=lambda r: bool(later(r)))  # stable: each group keeps its order
    return out


def humanize(key: str) -> str:
    """A panel key as a label (for the details of a row).

    >>> humanize("rows_examined_per_s"), humanize("time_s"), humanize("avg_us"), humanize("Queries_per_s")
    ('rows examined /s', 'time (s)', 'avg (µs)', 'Queries /s')
    """
    for suffix, unit in (("_per_s", " /s"), ("_ms", " (ms)"), ("_us", " (µs)"), ("_s", " (s)"),
                         ("_bytes", " (bytes)"), ("_pct", " (%)")):  # fmt: skip
        if key.endswith(suffix):
            return key[: -len(suffix)].replace("_", " ") + unit
    return key.replace("_", " ")


def rows_for(spec: TableSpec, snap: SourceSnapshot) -> list[dict[str, Any]] | Missing:
    """The rows a table shows from a snapshot, or the panel's Missing."""
    value = snap.panels.get(spec.panel)
    if isinstance(value, Missing):
        return value
    return spec.rows_of(value, snap.panels)


def cell_of(col: Col, row: Mapping[str, Any]) -> Cell:
    value = row.get(col.key)
    shown = col.fmt(value)
    return Text(shown, justify="right") if col.numeric else shown


def panel_of(snap: SourceSnapshot, name: str) -> Any:
    return snap.panels.get(name)


def missing_line(label: str, value: Any) -> Text | None:
    if isinstance(value, Missing):
        line = Text(f"{label}: ", "bold")
        line.append(f"✗ {value.what}", "yellow")
        if value.hint:
            line.append(f" — {value.hint}", "dim")
        return line
    return None


def facts(pairs: Sequence[tuple[str, str]], width: int = 0, style: str = "bold") -> Text:
    r"""`label value  label value` with the values in bold, broken into lines
    between facts (never inside one) to fit `width`.

    >>> print(facts([("running", "3"), ("connected", "40"), ("queries", "1.2k/s")], 24).plain)
    running 3  connected 40
    queries 1.2k/s
    """
    line = Text()
    used = 0
    for label, value in pairs:
        size = len(label) + 1 + len(value)
        if used:
            if width and used + 2 + size > width:
                line.append("\n")
                used = 0
            else:
                line.append("  ")
                used += 2
        line.append(f"{label} ", "dim")
        line.append(value, style)
        used += size
    return line


def mapping_of(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def dict_rows(value: Any) -> list[Mapping[str, Any]]:
    """A list panel's rows; none for a panel that is absent or Missing (not readable).

    >>> dict_rows([{"a": 1}, "x"]), dict_rows(Missing("not permitted")), dict_rows(None)
    ([{'a': 1}], [], [])
    """
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def long_running(seconds_key: str, warn: float = 10.0) -> Callable[[Mapping[str, Any]], str | None]:
    """A row style for statements running `warn` seconds or more."""

    def style(row: Mapping[str, Any]) -> str | None:
        v = row.get(seconds_key)
        return "yellow" if isinstance(v, (int, float)) and v >= warn else None

    return style
