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
    """The range of the values (from 0 on a linear axis): `value_ticks`
    rounds it to the axis it draws."""
    values = [v for s in series for v in s.values if v > 0]
    if not values:
        return Scale(0.1 if log else 0.0, 1.0, log)
    if log:
        return Scale(min(values), max(values), True)
    return Scale(0.0, max(values), False)


def _nice_steps(lo: float, hi: float) -> list[float]:
    """Round steps (1, 2, 2.5, 4, 5 x 10^k) from about `lo` up to the first
    at or above `hi`.

    >>> _nice_steps(0.3, 30)
    [0.1, 0.2, 0.25, 0.4, 0.5, 1.0, 2.0, 2.5, 4.0, 5.0, 10.0, 20.0, 25.0, 40.0]
    """
    out: list[float] = []
    e = math.floor(math.log10(lo))
    while not out or out[-1] < hi * (1 - 1e-9):
        out += [float(f"{m * 10.0**e:.6g}") for m in (1.0, 2.0, 2.5, 4.0, 5.0)]
        e += 1
    return [s for s in out if s < hi * (1 - 1e-9)] + [next(s for s in out if s >= hi * (1 - 1e-9))]


@dataclass(frozen=True, slots=True)
class Axis:
    """A y axis laid out over a chart's rows: the plot takes the rows from
    `top` down, the rows above it stay blank so that every label falls on a
    row at the same distance from the next (both ends included)."""

    scale: Scale
    top: int
    ticks: tuple[tuple[int, float], ...]


# How linear layouts are weighed, in rows wasted: labels more than
# _SPARSE_AFTER rows apart cost _SPARSE_COST per row more (an axis with only
# its ends is hard to read), more than _MAX_LABELS labels one row each (a
# column of numbers is hard to read too), and each label _LABEL_COST (of two
# equal layouts, the calmer one).
_SPARSE_AFTER = 5
_SPARSE_COST = 0.5
_MAX_LABELS = 6
_LABEL_COST = 0.1


def _density_cost(steps: int, rows_apart: int) -> float:
    return (max(0, rows_apart - _SPARSE_AFTER) * _SPARSE_COST + max(0, steps + 1 - _MAX_LABELS)
            + (steps + 1) * _LABEL_COST)


def value_ticks(scale: Scale, rows: int) -> Axis:
    """The y axis over `rows` rows (row 0 at the top) for values in
    `scale`: labels at round values, the same number of rows apart from
    the top end to the bottom end, with a free row between two labels.
    A log axis labels every decade if each can have a free row, else
    every other decade (else every third...); a linear one picks the
    round step that wastes the fewest rows.  For exact spacing the scale
    may grow by a step and the plot may leave a few top rows blank (fewer
    than the number of steps).

    >>> value_ticks(Scale(0.0, 1900.0, False), 9).ticks
    ((0, 2000.0), (4, 1000.0), (8, 0.0))
    >>> value_ticks(Scale(1.0, 1000.0, True), 8)
    Axis(scale=Scale(lo=1.0, hi=1000.0, log=True), top=1, ticks=((1, 1000.0), (3, 100.0), (5, 10.0), (7, 1.0)))
    >>> value_ticks(Scale(1.0, 1000.0, True), 5).ticks  # short: every other decade
    ((0, 10000.0), (2, 100.0), (4, 1.0))
    >>> value_ticks(Scale(1.0, 10000.0, True), 3).ticks  # too short for a free row: a label on each row
    ((0, 10000.0), (1, 100.0), (2, 1.0))
    """
    last = rows - 1
    if scale.log:
        lmin = math.log10(max(scale.lo, 1e-300))
        lmax = math.log10(max(scale.hi, scale.lo, 1e-300))
        lo_e = math.floor(lmin + 1e-9)
        hi_e = max(math.ceil(lmax - 1e-9), lo_e + 1)
        if last <= 0:
            return Axis(Scale(10.0**lo_e, 10.0**hi_e, True), 0, ((0, 10.0**hi_e),))
        n = hi_e - lo_e
        # every decade labelled if there is room, else every other one...
        stride = next(s for s in range(1, n + 1) if last // -(-n // s) >= 2 or s == n)
        if stride == n > 1 and 2 <= last < 4:
            # free rows would leave the two ends alone (10s, 1ms on three rows): a label on each row says more
            stride = next(s for s in range(1, n + 1) if -(-n // s) <= last)
        m = -(-n // stride)
        top_e = lo_e + m * stride  # a partial stride is made whole at the top
        d = last // m
        top = last - m * d
        ticks = tuple((top + k * d, 10.0 ** (top_e - k * stride)) for k in range(m + 1))
        return Axis(Scale(10.0**lo_e, 10.0**top_e, True), top, ticks)
    vmax = scale.hi if scale.hi > 0 else 1.0
    if last <= 0:
        hi = _nice_ceil(vmax)
        return Axis(Scale(0.0, hi, False), 0, ((0, hi),))
    best_lin: tuple[float, Axis] | None = None
    for step in _nice_steps(vmax / max(last, 1), vmax):
        m = max(1, math.ceil(vmax / step - 1e-9))
        d = last // m
        if d < 2 and m > 1:
            continue
        used = m * d
        top_v = float(f"{m * step:.6g}")
        wasted = (top_v - vmax) / top_v * used
        cost = (last - used) + wasted + _density_cost(m, d)
        if best_lin is None or cost < best_lin[0] - 1e-9:
            top = last - used
            ticks = tuple((top + k * d, float(f"{(m - k) * step:.6g}")) for k in range(m + 1))
            best_lin = (cost, Axis(Scale(0.0, top_v, False), top, ticks))
    if best_lin is None:  # no round step leaves a free row: the two ends
        hi = _nice_ceil(vmax)
        return Axis(Scale(0.0, hi, False), 0, ((0, hi), (last, 0.0)))
    return best_lin[1]


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
    y_axis = value_ticks(scale_for(series, log), plot_h)
    cells = [[(" ", "")] * plot_w] * y_axis.top + plot(series, plot_w, plot_h - y_axis.top, y_axis.scale)
    n = max((len(s.values) for s in series), default=0)
    first = max(n - plot_w * 2, 0)  # value index at dot column 0
    marker_cols: dict[int, str] = {}
    for m in markers:
        if first <= m.index < n:
            marker_cols[(m.index - first) // 2] = m.symbol
    labels = dict(y_axis.ticks)
    for r, row in enumerate(cells):
        if r < y_axis.top:  # blank, so that the labels below are evenly spaced
            out.append("\n" + " " * (LABEL_W + 1))
            continue
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
