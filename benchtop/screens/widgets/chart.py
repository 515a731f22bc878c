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

from benchtop.screens.widgets.fmt import clock, crop, tick
from benchtop.panels.units import num

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


def value_ticks(scale: Scale, rows: int) -> list[tuple[int, float]]:
    """(row, value) of round values to label on a y axis of `rows` rows
    (row 0 at the top): the ends, and round steps between them where rows
    are free, never two labels on adjacent rows.

    >>> value_ticks(Scale(0.0, 2000.0, False), 9)
    [(0, 2000.0), (2, 1500.0), (4, 1000.0), (6, 500.0), (8, 0.0)]
    >>> value_ticks(Scale(1.0, 100.0, True), 7)
    [(0, 100.0), (3, 10.0), (6, 1.0)]
    """
    last = max(rows - 1, 0)
    if scale.log:
        lo, hi = round(math.log10(scale.lo)), round(math.log10(scale.hi))
        candidates = [10.0**e for e in range(hi, lo - 1, -1)]
    else:
        candidates = []
        for step in (scale.hi / 4, scale.hi / 2, scale.hi):
            n = round(scale.hi / step)
            # a quarter of 2, 5 or 10 x 10^k is only round for some: 0.5, 1.25 (no)
            if abs(step - float(f"{step:.2g}")) > 1e-9 * scale.hi:
                continue
            if last >= 2 * n:  # room for every label with a free row between
                candidates = [scale.hi - k * step for k in range(n + 1)]
                break
        if not candidates:
            candidates = [scale.hi, scale.lo]
    out: list[tuple[int, float]] = []
    for v in candidates:
        row = round((1 - scale.frac(v)) * last)
        if all(abs(row - r) >= 2 for r, _ in out) or (row == last and not out):
            out.append((row, v))
    return out


TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def time_ticks(t0: float, step: float, n: int, cols: int, min_gap: int = 8) -> list[tuple[int, float]]:
    """(column, seconds) of round elapsed times under a plot of `cols`
    cells, two values per cell, whose value 0 covers [t0, t0 + step):
    labels at least `min_gap` cells apart, over the whole width (before
    the run fills it, the axis shows where it is going).

    >>> time_ticks(0.0, 1.0, 6, 40)
    [(15, 30.0), (30, 60.0)]
    >>> [t for _, t in time_ticks(100.0, 1.0, 80, 40, 5)]
    [110.0, 120.0, 130.0, 140.0, 150.0, 160.0, 170.0]
    """
    if n <= 0 or step <= 0:
        return []
    span_cols = max(cols, 1)
    every = next((s for s in TIME_STEPS if s / step / 2 >= min_gap), None)
    if every is None:
        every = TIME_STEPS[-1] * math.ceil(min_gap * step * 2 / TIME_STEPS[-1])
    out = []
    t = math.ceil(t0 / every) * every
    if t <= t0 + 1e-9:
        t += every
    while True:
        col = int((t - t0) / step) // 2
        if col >= span_cols:
            break
        out.append((col, float(t)))
        t += every
    return out


def plot(
    series: Sequence[Series],
    width: int,
    height: int,
    scale: Scale,
) -> list[list[tuple[str, str]]]:
    """Cells [row][col] as (char, style); values map to dot columns 1:1 from
    the left edge; once they fill the width, the newest are kept."""
    dots_h = height * 4
    masks = [[0] * width for _ in range(height)]
    owner = [[""] * width for _ in range(height)]
    for s in series:
        vals = s.values[-width * 2 :]
        prev_y: int | None = None
        for x, v in enumerate(vals):
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
    tick_fmt: Callable[[float], str] = tick,
) -> Text:
    """The whole chart: title/legend line, plot rows with a y axis of round
    values, and a time axis of round elapsed times carrying the timeline
    markers.  The run starts at the left edge; once it fills the width the
    newest intervals that fit are shown, or with `whole` every interval,
    folded to fit."""
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
    first = max(n - plot_w * 2, 0)  # value index at dot column 0
    marker_cols: dict[int, str] = {}
    for m in markers:
        if first <= m.index < n:
            marker_cols[(m.index - first) // 2] = m.symbol
    labels = dict(value_ticks(scale, plot_h))
    for r, row in enumerate(cells):
        label = tick_fmt(labels[r]) if r in labels else ""
        out.append("\n" + label.rjust(LABEL_W)[:LABEL_W] + "┤" if label else "\n" + " " * LABEL_W + "│", "dim")
        line = [("┊", "dim") if ch == " " and c in marker_cols else (ch, style) for c, (ch, style) in enumerate(row)]
        _append_runs(out, line)
    axis = ["─"] * plot_w
    if n:
        t_first = (t_end or float(n) * step) - (n - first) * step  # start of the value at column 0
        free_from = 0
        for col, t in time_ticks(t_first, step, n - first, plot_w):
            label = "┴" + clock(t)
            span = range(col, col + len(label))
            if col >= free_from and span.stop <= plot_w and not any(c in marker_cols for c in span):
                axis[col : span.stop] = list(label)
                free_from = span.stop + 1
    for c, sym in marker_cols.items():
        axis[c] = sym
    out.append("\n" + "m:ss".rjust(LABEL_W) + "└", "dim")
    _append_runs(out, [(ch, "bold reverse" if ch in marker_cols.values() and c in marker_cols else "dim")
                       for c, ch in enumerate(axis)])
    return out


def legend_text(name: str, series: Sequence[Series], fmt: Callable[[float], str], width: int, lines: int = 1,
                whole: bool = False) -> Text:
    """The chart's name and each series' latest value, in `lines` lines of
    `width` cells: a series that does not fit whole is left out, never cut.

    >>> s = [Series("p50", (2.45,)), Series("p95", (3.76,)), Series("p99", (43.9,)), Series("max", (51.4,))]
    >>> print(legend_text("latency", s, lambda v: f"{v:g}ms", 40, 2).plain)
    latency  ━p50 2.45ms  ━p95 3.76ms
    ━p99 43.9ms  ━max 51.4ms
    >>> print(legend_text("latency", s, lambda v: f"{v:g}ms", 40, 1).plain)
    latency  ━p50 2.45ms  ━p95 3.76ms
    """
    text = Text(no_wrap=True, overflow="crop")
    text.append(name, "bold")
    if whole:
        text.append(" (whole run)")
    line_len, line = len(text.plain), 1
    for s in series:
        last = s.values[-1] if s.values else 0.0
        item = f"{s.name} {fmt(last)}"
        sep = "  " if line_len else ""
        if line_len + len(sep) + 1 + len(item) > width:
            if line >= lines or 1 + len(item) > width:
                continue
            text.append("\n")
            line_len, line, sep = 0, line + 1, ""
        text.append(sep)
        text.append("━", s.style)
        text.append(item)
        line_len += len(sep) + 1 + len(item)
    return text


class TimeChart(Widget):
    """A chart of several series over the run's intervals."""

    DEFAULT_CSS = """
    TimeChart { height: 1fr; min-height: 4; }
    """

    def __init__(self, name: str, log: bool = False, fmt: Callable[[float], str] = num,
                 tick_fmt: Callable[[float], str] = tick, **kwargs) -> None:
        super().__init__(**kwargs)
        self.chart_name = name
        self.log_scale = log
        self.fmt = fmt
        self.tick_fmt = tick_fmt
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

    def legend(self, width: int = 80, lines: int = 1) -> Text:
        return legend_text(self.chart_name, self._series, self.fmt, width, lines, self.whole)

    def render(self) -> Text:
        return crop(
            render_chart(
                self.legend(self.size.width, 2 if self.size.height >= 6 else 1),
                self._series,
                self._markers,
                self.size.width,
                self.size.height,
                log=self.log_scale,
                fmt=self.fmt,
                t_end=self._t_end,
                step=self._step,
                whole=self.whole,
                tick_fmt=self.tick_fmt,
            ),
            self.size.width,
        )
