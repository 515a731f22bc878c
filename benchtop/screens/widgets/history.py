"""The monitor's history view: a small chart per main rate of a source over
the last minutes (dolphie's graphs), stacked to fit the pane; the time axis
counts back from now."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from benchtop.panels.history import History, Metric
from benchtop.screens.widgets.chart import Series, render_chart
from benchtop.screens.widgets.fmt import crop

MIN_CHART_H = 7  # a title, five plot rows, the time axis: at 4 a chart was two rows of dots


def render_history(history: History, width: int, height: int) -> Text:
    """Each metric's chart, as many as fit at MIN_CHART_H rows or more, the
    height shared out evenly.

    >>> from benchtop.panels.history import METRICS
    >>> from benchtop.sources.base import SourceSnapshot
    >>> h = History(METRICS["postgresql"])
    >>> for i in range(30):
    ...     h.add(SourceSnapshot("pg", "postgresql", float(i), True, panels={"database": {"commits_per_s": 100.0 + i},
    ...                                                                      "wal_bytes_per_s": 2.0 ** 20}))
    >>> lines = render_history(h, 60, 24).plain.splitlines()
    >>> lines[0], len(lines) <= 24
    ('commits 129/s  (min 100/s, max 129/s)', True)
    """
    if not len(history):
        return Text("waiting for the first polls…", "dim")
    metrics = history.metrics[: max(height // MIN_CHART_H, 1)]
    each = max(height // len(metrics), MIN_CHART_H)
    out = Text(no_wrap=True, overflow="crop")
    for i, m in enumerate(metrics):
        values = history.values(m.label)
        series = [Series(m.label, tuple(v * m.axis_scale for v in values), "green")]
        chart = render_chart(_title(m, values, width), series, [], width, each, t_end=history.span_s + history.step_s,
                             step=history.step_s)
        if i:
            out.append("\n")
        out.append_text(chart)
    return out


def _title(m: Metric, values: tuple[float, ...], width: int) -> Text:
    """The metric, its latest value and its range on screen, the axis's unit."""
    t = Text(no_wrap=True, overflow="crop")
    t.append(m.label, "bold")
    t.append(f" {m.fmt(values[-1])}" if values else "")
    if values:
        t.append(f"  (min {m.fmt(min(values))}, max {m.fmt(max(values))})", "dim")
    if m.axis_unit:
        t.append(f"  axis: {m.axis_unit}", "dim")
    t.truncate(width)
    return t


class HistoryCharts(Widget):
    DEFAULT_CSS = """
    HistoryCharts { height: 1fr; }
    """

    def __init__(self, history: History, **kwargs) -> None:
        super().__init__(**kwargs)
        self.history = history

    def render(self) -> Text:
        return crop(render_history(self.history, self.size.width, self.size.height), self.size.width)
