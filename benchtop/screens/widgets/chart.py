"""Line charts over time drawn with braille dots (2x4 per cell), with the
run's timeline as marker columns, readable in 80 columns and without colour.

Series are drawn in order, later ones on top; the legend on the title line
names every series with its latest value, so a line's identity never rests
on colour alone (latency series are also ordered: p50 <= p95 <= p99 <= max).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from benchtop.screens.widgets.fmt import clock, crop, num

_BRAILLE = 0x2800
# bit of the dot at (row 0..3 top to bottom, column 0..1) of a braille cell
_DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
LABEL_W = 6


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    values: tuple[float, ...]  # one per interval, aligned across series
    style: str = ""
    peak: bool = False  # folded by max (latency: keep the spikes), else by mean


def fold(values: Sequence[float], factor: int, peak: bool) -> tuple[float, ...]:
    """Every `factor` consecutive values as one (a whole run in one window).

    >>> fold([1, 3, 2, 8, 5], 2, False), fold([1, 3, 2, 8, 5], 2, True)
    ((2.0, 5.0, 5.0), (3, 8, 5))
    """
    groups = [values[i : i + factor] for i in range(0, len(values), factor)]
    return tuple(max(g) if peak else sum(g) / len(g) for g in groups)


@dataclass(frozen=True, slots=True)
class Marker:
    index: int  # interval index the event happened in
    symbol: str


@dataclass(frozen=True, slots=True)
class Scale:
    lo: float
    hi: float
    log: bool

    def frac(self, v: float) -> float:
        if self.log:
            v = math.log10(max(v, self.lo))
            lo, hi = math.log10(self.lo), math.log10(self.hi)
        else:
            lo, hi = self.lo, self.hi
        return 0.0 if hi <= lo else min(1.0, max(0.0, (v - lo) / (hi - lo)))

    def at(self, f: float) -> float:
        if self.log:
            lo, hi = math.log10(self.lo), math.log10(self.hi)
            return 10 ** (lo + f * (hi - lo))
        return self.lo + f * (self.hi - self.lo)


def _nice_ceil(v: float) -> float:
    """The next 1/2/5 x 10^k at or above v.

    >>> [_nice_ceil(x) for x in (0.7, 3, 10, 1234)]
    [1.0, 5.0, 10.0, 2000.0]
    """
    if v <= 0:
        return 1.0
    exp = math.floor(math.log10(v))
    for m in (1, 2, 5, 10):
        if m * 10**exp >= v * (1 - 1e-9):
            return float(m * 10**exp)
    return float(10 ** (exp + 1))


def scale_for(series: Sequence[Series], log: bool) -> Scale:
    values = [v for s in series for v in s.values if v > 0]
    if not values:
        return Scale(0.1 if log else 0.0, 1.0, log)
    if log:
        lo = 10 ** math.floor(math.log10(min(values)))
        hi = 10 ** math.ceil(math.log10(max(values)))
        return Scale(lo, hi if hi > lo else lo * 10, True)
    return Scale(0.0, _nice_ceil(max(values)), False)


def plot(
    series: Sequence[Series],
    width: int,
    height: int,
    scale: Scale,
) -> list[list[tuple[str, str]]]:
    """Cells [row][col] as (char, style); values map to dot columns 1:1 and
    the newest value is at the right edge."""
    dots_h = height * 4
    masks = [[0] * width for _ in range(height)]
    owner = [[""] * width for _ in range(height)]
    for s in series:
        vals = s.values[-width * 2 :]
        offset = width * 2 - len(vals)
        prev_y: int | None = None
        for i, v in enumerate(vals):
            x = offset + i
            y = dots_h - 1 - round(scale.frac(v) * (dots_h - 1))
            lo, hi = (y, y) if prev_y is None else (min(y, prev_y), max(y, prev_y))
            # filling the vertical gap keeps steep changes a connected line
            for yy in range(lo, hi + 1):
                row, sub = divmod(yy, 4)
                masks[row][x // 2] |= _DOT[sub][x % 2]
                owner[row][x // 2] = s.style
            prev_y = y
    return [[(chr(_BRAILLE + m) if m else " ", owner[r][c]) for c, m in enumerate(masks[r])] for r in range(height)]


def _append_runs(out: Text, cells: Sequence[tuple[str, str]]) -> None:
    """One span per run of equal style: a chart redraws every second, and
    per-cell spans made it cost several times more to lay out."""
    run: list[str] = []
    style = None
    for ch, st in cells:
        if st != style and run:
            out.append("".join(run), style or "")
            run = []
        style = st
        run.append(ch)
    if run:
        out.append("".join(run), style or "")


def render_chart(
    title: Text,
    series: Sequence[Series],
    markers: Sequence[Marker],
    width: int,
    height: int,
    log: bool = False,
    fmt: Callable[[float], str] = num,
    t_end: float | None = None,
    step: float = 1.0,
    whole: bool = False,
) -> Text:
    """The whole chart: title/legend line, plot rows with a y axis, and an
    x-axis row carrying the timeline markers.  The newest intervals that fit
    are shown, or with `whole` every interval, folded to fit."""
    out = Text(no_wrap=True, overflow="crop")
    out.append_text(title)
    plot_w = max(width - LABEL_W - 1, 4)
    plot_h = max(height - 1 - len(title.plain.split("\n")), 1)
    n_all = max((len(s.values) for s in series), default=0)
    if whole and n_all > plot_w * 2:
        factor = -(-n_all // (plot_w * 2))
        series = [Series(s.name, fold(s.values, factor, s.peak), s.style, s.peak) for s in series]
        markers = [Marker(m.index // factor, m.symbol) for m in markers]
        step *= factor
    scale = scale_for(series, log)
    cells = plot(series, plot_w, plot_h, scale)
    n = max((len(s.values) for s in series), default=0)
    first = max(n - plot_w * 2, 0)  # interval index at dot column 0 (once the window is full)
    offset = plot_w * 2 - min(n, plot_w * 2)
    marker_cols: dict[int, str] = {}
    for m in markers:
        if first <= m.index < n:
            marker_cols[(offset + m.index - first) // 2] = m.symbol
    for r, row in enumerate(cells):
        f = 1 - r / max(plot_h - 1, 1)
        label = fmt(scale.at(f)) if r in (0, plot_h - 1) or (plot_h >= 5 and r == plot_h // 2) else ""
        out.append(
            "\n" + label.rjust(LABEL_W)[:LABEL_W] + "┤" if label else "\n" + " " * LABEL_W + "│",
            "dim",
        )
        line = [("┊", "dim") if ch == " " and c in marker_cols else (ch, style) for c, (ch, style) in enumerate(row)]
        _append_runs(out, line)
    start_label = clock(max((t_end or 0.0) - n * step, 0.0) + first * step) if n else ""
    out.append("\n" + start_label.rjust(LABEL_W)[:LABEL_W] + "└", "dim")
    axis = ["─"] * plot_w
    for c, sym in marker_cols.items():
        axis[c] = sym
    _append_runs(out, [(ch, "bold reverse" if ch != "─" else "dim") for ch in axis])
    return out


class TimeChart(Widget):
    """A chart of several series over the run's intervals."""

    DEFAULT_CSS = """
    TimeChart { height: 1fr; min-height: 4; }
    """

    def __init__(self, name: str, log: bool = False, fmt: Callable[[float], str] = num, **kwargs) -> None:
        super().__init__(**kwargs)
        self.chart_name = name
        self.log_scale = log
        self.fmt = fmt
        self._series: tuple[Series, ...] = ()
        self._markers: tuple[Marker, ...] = ()
        self._t_end: float | None = None
        self._step = 1.0
        self.whole = False

    def update_data(
        self,
        series: Sequence[Series],
        markers: Sequence[Marker],
        t_end: float | None,
        step: float,
        whole: bool = False,
    ) -> None:
        self.whole = whole
        self._series = tuple(series)
        self._markers = tuple(markers)
        self._t_end = t_end
        self._step = step
        self.refresh()

    def legend(self, width: int = 0) -> Text:
        """The chart's name and each series' latest value; when it does not
        fit in `width`, a second line rather than a cut-off series."""
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(self.chart_name, "bold")
        if self.whole:
            text.append(" (whole run)")
        line_len, lines = len(text.plain), 1
        for s in self._series:
            last = s.values[-1] if s.values else 0.0
            item = f"{s.name} {self.fmt(last)}"
            if width and lines == 1 and line_len + 3 + len(item) > width:
                text.append("\n")
                line_len, lines, sep = 0, 2, ""
            else:
                sep = "  "
            text.append(sep)
            text.append("━", s.style)
            text.append(item)
            line_len += len(sep) + 1 + len(item)
        return text

    def render(self) -> Text:
        return crop(
            render_chart(
                self.legend(self.size.width if self.size.height >= 6 else 0),
                self._series,
                self._markers,
                self.size.width,
                self.size.height,
                log=self.log_scale,
                fmt=self.fmt,
                t_end=self._t_end,
                step=self._step,
                whole=self.whole,
            ),
            self.size.width,
        )
