"""Enter on a row: everything the row holds, with the full statement text,
and for a ProxySQL command its latency buckets as bars."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from benchtop.panels.views.spec import Col, humanize
from benchtop.panels.units import bar, count, text

_LONG = ("query", "digest_text", "info", "blocking_query", "waiting_query")


def bucket_label(name: str) -> str:
    """ProxySQL's cnt_<limit> bucket names as latency bounds.

    >>> [bucket_label(b) for b in ("cnt_100us", "cnt_5ms", "cnt_1s", "cnt_INFs")]
    ['≤ 100µs', '≤ 5ms', '≤ 1s', '> 10s']
    """
    limit = name.removeprefix("cnt_")
    return "> 10s" if limit == "INFs" else f"≤ {limit.replace('us', 'µs')}"


def details_table(row: Mapping[str, Any], cols: tuple[Col, ...]) -> Table:
    """The row's fields, formatted as its table shows them, labelled for people."""
    shown = {c.key: c for c in cols}
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in row.items():
        if key in _LONG or key in ("buckets", "bar"):
            continue
        col = shown.get(key)
        label = col.label if col is not None and col.label else humanize(key)
        table.add_row(label, col.fmt(value) if col is not None else text(value))
    return table


def buckets_text(buckets: Mapping[str, Any]) -> Text:
    values = {k: v for k, v in buckets.items() if isinstance(v, (int, float))}
    top = max(values.values(), default=0)
    out = Text()
    for name, v in values.items():
        out.append(f"{bucket_label(name):>9} ", "bold")
        out.append(bar(v, top, 40), "cyan")
        out.append(f" {count(v)}\n")
    return out


class RowDetails(ModalScreen[None]):
    DEFAULT_CSS = """
    RowDetails { align: center middle; }
    RowDetails > VerticalScroll {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    RowDetails .statement { margin-top: 1; }
    """
    BINDINGS = [("escape,enter,q", "close", "close")]

    def __init__(self, title: str, row: Mapping[str, Any], cols: tuple[Col, ...]) -> None:
        super().__init__()
        self.title_text = title
        self.row = dict(row)
        self.cols = cols

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(self.title_text, "bold"))
            yield Static(details_table(self.row, self.cols))
            for key in _LONG:
                if self.row.get(key):
                    yield Static(Text(f"{humanize(key)}:\n", "bold") + Text(str(self.row[key])), classes="statement")
            buckets = self.row.get("buckets")
            if isinstance(buckets, Mapping) and buckets:
                yield Static(Text("latency buckets in the interval:\n", "bold") + buckets_text(buckets))
            yield Static("[dim]escape closes[/dim]")

    def action_close(self) -> None:
        self.dismiss(None)
