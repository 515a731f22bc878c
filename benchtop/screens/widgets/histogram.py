"""A latency histogram on a log latency axis: one column per fine log bucket,
bar heights in eighth blocks on a log count scale so a small second hump
(lock waits, a checkpoint stall) stays visible next to the main one."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from benchtop.engine.histogram import Histogram
from benchtop.screens.widgets.fmt import crop, fit, ns_decade
from benchtop.panels.units import ms, num

_BLOCKS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class Axis:
    lo_exp: int  # 10**lo_exp ns at the left edge
    hi_exp: int  # 10**hi_exp ns at the right edge


def axis_for(hist: Histogram) -> Axis:
    """Whole decades around the recorded values (at least two)."""
    if hist.total == 0:
        return Axis(5, 8)  # 100µs .. 100ms, a typical OLTP window
    lo = math.floor(math.log10(max(hist.min_ns(), 1.0)))
    hi = math.ceil(math.log10(max(hist.max_ns(), 1.0) + 1))
    if hi - lo < 2:
        hi = lo + 2
    return Axis(lo, hi)


def columns(hist: Histogram, axis: Axis, width: int) -> list[int]:
    """Counts regrouped into `width` equal steps of log latency."""
    out = [0] * width
    span = axis.hi_exp - axis.lo_exp
    for low, high, count in hist.nonzero():
        mid = max((low + high - 1) / 2.0, 1.0)
        col = int((math.log10(mid) - axis.lo_exp) / span * width)
        out[min(max(col, 0), width - 1)] += count
    return out


def render_histogram(title: str, hist: Histogram, axis: Axis, width: int, height: int) -> Text:
    """Title line (with p50/p99 and the count, each shown whole or not at
    all), bars, and a decade axis."""
    text = Text(no_wrap=True, overflow="crop")
    pct = hist.percentiles_ms([50.0, 99.0])
    text.append(title, "bold")
    # the count goes last: a narrow panel leaves it out first
    items = [(f"p50 {ms(pct[50.0])}", ""), (f"p99 {ms(pct[99.0])}", ""), (f"n={num(hist.total)}", "dim")]
    sep = "  "
    if len(fit(items[:2], width - len(title) - 2, sep)) < 2:
        sep = " "  # tighter rather than without p99
    for item, style in fit(items, width - len(title) - len(sep), sep):
        text.append(sep)
        text.append(item, style)
    bars_h = max(height - 2, 1)
    width = max(width, 8)
    cols = columns(hist, axis, width)
    top = math.log1p(max(cols)) if any(cols) else 1.0
    eighths = [round(math.log1p(c) / top * bars_h * 8) if c else 0 for c in cols]
    # a non-empty bucket always shows at least a sliver
    eighths = [max(e, 1) if c else 0 for e, c in zip(eighths, cols)]
    for r in range(bars_h):
        floor = (bars_h - 1 - r) * 8
        text.append("\n")
        text.append("".join(_BLOCKS[min(max(e - floor, 0), 8)] for e in eighths), "cyan")
    text.append("\n" + decade_axis(axis, width), "dim")
    return text


_MS_EXP = 6  # 1ms in ns: the decade an OLTP reader looks for first


def decade_axis(axis: Axis, width: int) -> str:
    """A tick at every decade, labelled at a stride whose labels all fit,
    1ms among them when it is on the axis (a label that did not fit used
    to drop the one after it: often 1ms).

    >>> decade_axis(Axis(5, 8), 40)
    '┴100µs───────┴1ms──────────┴10ms───────┴'
    >>> decade_axis(Axis(4, 9), 26)
    '┴10µs┴────┴1ms──┴────┴───┴'
    """
    span = axis.hi_exp - axis.lo_exp
    cols = [min(round(k / span * width), width - 1) for k in range(span + 1)]
    labels = [f"┴{ns_decade(axis.lo_exp + k)}" for k in range(span + 1)]
    phase_of = (lambda s: (_MS_EXP - axis.lo_exp) % s) if axis.lo_exp <= _MS_EXP <= axis.hi_exp else (lambda s: 0)
    row = ["─"] * width
    for c in cols:
        row[c] = "┴"
    for stride in range(1, span + 2):
        # a label never covers the next decade's tick; the right edge's, past the width, stays a bare tick
        shown = [k for k in range(span + 1) if k % stride == phase_of(stride) and cols[k] + len(labels[k]) <= width]
        if all(cols[k] + len(labels[k]) <= cols[k + 1] for k in shown if k < span):
            for k in shown:
                row[cols[k] : cols[k] + len(labels[k])] = list(labels[k])
            break
    return "".join(row)


class LatencyHistogram(Widget):
    """One histogram panel (the last interval or the whole run)."""

    DEFAULT_CSS = """
    LatencyHistogram { height: 1fr; min-height: 4; }
    """

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title_text = title
        self._hist: Histogram | None = None
        self._axis = Axis(5, 8)

    def update_data(self, title: str, hist: Histogram, axis: Axis) -> None:
        self.title_text = title
        self._hist = hist
        self._axis = axis
        self.refresh()

    def render(self) -> Text:
        if self._hist is None:
            return Text(f"{self.title_text}  waiting for the first interval…", style="dim")
        return crop(
            render_histogram(
                self.title_text,
                self._hist,
                self._axis,
                self.size.width,
                self.size.height,
            ),
            self.size.width,
        )
