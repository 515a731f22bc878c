"""The compact "per transaction" line under the charts: what the newest
interval cost the host per transaction (vmstat/iostat normalised), and the
client's own CPU, with its warning when the client may be the bottleneck."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from benchtop.run.costs import per_op_line
from benchtop.run.samples import IntervalStats


def per_op_text(iv: IntervalStats | None) -> Text:
    """
    >>> from benchtop.engine.histogram import Histogram
    >>> h = Histogram.empty()
    >>> iv = IntervalStats(1.0, 1.0, 2, 0.0, False, 100, 100.0, 0, 0, 0, 0, 0, 0, {}, {}, {}, 0, 0, h, h,
    ...                    costs={"per_op": {"reads": 0.5, "kb_written": 4.0, "cpu_s": 0.002},
    ...                           "client_cpu": {"per_op_us": 150.0, "warning": None}})
    >>> print(per_op_text(iv).plain)
    per transaction: reads 0.50  KB written 4.00  CPU 2.000 ms  client CPU 150 us
    >>> print(per_op_text(None).plain)
    per transaction: -
    """
    costs = iv.costs if iv is not None else {}
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(per_op_line(costs.get("per_op") or {}))
    client = costs.get("client_cpu") or {}
    if client.get("per_op_us") is not None:
        t.append(f"  client CPU {client['per_op_us']:.0f} us")
    if client.get("warning"):
        t.append(f"  ⚠ {client['warning']}", "bold yellow")
    return t


class PerOpLine(Static):
    DEFAULT_CSS = """
    PerOpLine { height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def show(self, iv: IntervalStats | None) -> None:
        self.update(per_op_text(iv))


def show_per_op(container: Widget, iv: IntervalStats | None) -> None:
    """The line at the end of `container`, mounted with the first interval
    that has cost readings: a run without them (a remote engine, a test's
    fake controller) keeps its layout exactly as it was."""
    if iv is None or not iv.costs.get("per_op"):
        return
    lines = container.query(PerOpLine)
    if lines:
        lines.first().show(iv)
    else:
        container.mount(PerOpLine(per_op_text(iv), id="per-op"))
