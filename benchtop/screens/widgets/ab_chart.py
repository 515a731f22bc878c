"""An A/B comparison live: each finished round's TPS of A and B side by
side (the letters themselves, so the chart reads without colour), the
round in progress as its latest interval (a lowercase letter), the
interval of B/A so far on a line of its own, and the runs in progress.
Plain text on a character grid; the newest rounds that fit are shown."""

from __future__ import annotations

import math

from rich.text import Text

from benchtop.ab.stats import CONFIDENCE
from benchtop.panels.units import ms, num
from benchtop.record.ab import AbLive, AbView

LABEL_W = 7
SLOT_MIN = 3  # cells per round at the least: A, B and a space
SLOT_MAX = 8
STYLE = {"a": "bold cyan", "b": "bold magenta"}


def _slots(v: AbView, cols: int) -> tuple[int, int, int]:
    """(cells per round, rounds shown, the first round shown) for `cols`
    cells: the planned rounds spread over the width, else room for a few
    more than so far; the newest that fit once they outgrow it."""
    live = 1 if v.live else 0
    want = max(v.planned or 0, len(v.rounds) + live, 6)
    slot = max(SLOT_MIN, min(SLOT_MAX, cols // want))
    shown = max(1, min(cols // slot, want))
    first = max(1, len(v.rounds) + live - shown + 1)
    return slot, shown, first


def render_chart(v: AbView, width: int, height: int) -> Text:
    """The title line (each side's latest round), the plot and the round axis."""
    title = Text("TPS per round ", style="bold")
    last = v.rounds[-1] if v.rounds else None
    for side in "ab":
        title.append(side.upper(), STYLE[side])
        title.append(f" {num(getattr(last, f'{side}_tps'))}  " if last is not None else "  ")
    if last is None:
        title.append("(no round finished yet)", style="dim")
    rows, cols = height - 2, width - LABEL_W - 1
    if rows < 2 or cols < SLOT_MIN:
        return title
    slot, shown, first = _slots(v, cols)
    live = {lv.side: lv for lv in v.live if lv.tps is not None}
    values = [p.a_tps for p in v.rounds] + [p.b_tps for p in v.rounds] + [lv.tps or 0.0 for lv in live.values()]
    low, top = _span(values)

    def row(y: float) -> int:
        return max(0, min(rows - 1, rows - 1 - round((y - low) / (top - low) * (rows - 1))))

    grid: list[list[tuple[str, str]]] = [[(" ", "")] * cols for _ in range(rows)]

    def put(index: int, side: str, y: float, live_point: bool) -> None:
        c = (index - first) * slot + (slot - 2) // 2 + (side == "b")
        if 0 <= c < cols:
            grid[row(y)][c] = (side if live_point else side.upper(), f"dim {STYLE[side]}" if live_point else STYLE[side])

    for p in v.rounds:
        put(p.index, "a", p.a_tps, False)
        put(p.index, "b", p.b_tps, False)
    for side, lv in live.items():
        put(lv.round, side, lv.tps or 0.0, True)
    out = Text(no_wrap=True, overflow="crop")
    out.append_text(title)
    step = 10 ** math.floor(math.log10((top - low) / 4))
    middle = round((low + top) / 2 / step) * step  # a round value, on the row nearest to it
    labels = {0: top, rows - 1: low, **({row(middle): middle} if rows >= 5 else {})}
    for r in range(rows):
        label = num(labels[r]) if r in labels else ""
        out.append("\n" + label.rjust(LABEL_W - 1) + ("┤" if label else "│"), style="dim")
        for ch, style in grid[r]:
            out.append(ch, style=style)
    axis = [" "] * cols
    every = max(1, math.ceil(4 / slot))  # a round's number every 4 cells at the most
    for i in range(first, min(first + shown, max(v.planned or 0, len(v.rounds) + len(v.live)) + 1)):
        text = str(i)
        c = (i - first) * slot + (slot - 2) // 2
        if (i - 1) % every == 0 and c + len(text) <= cols:
            axis[c:c + len(text)] = list(text)
    out.append("\n" + "round".rjust(LABEL_W - 1) + "└" + "".join(axis), style="dim")
    return out


def _span(values: list[float]) -> tuple[float, float]:
    """The axis' ends: the values' range with a margin, in round steps.
    Not from zero: a difference of a few percent, the size that matters
    here, would be less than a row.

    >>> _span([4800, 5300, 5100]), _span([]), _span([5000, 5000])
    ((4500.0, 5600.0), (0.0, 1.0), (4700.0, 5300.0))
    """
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.1, hi * 0.05, 1e-9)
    step = 10 ** math.floor(math.log10(pad))
    return max(0.0, float(math.floor((lo - pad) / step) * step)), float(math.ceil((hi + pad) / step) * step)


def interval_line(v: AbView, width: int) -> Text:
    """B/A so far on a scale of the change: its interval as a bar
    (├━━●━━┤), no change as │, the resolution's bounds as ┊, before there
    is an interval each round's ratio as a dot.

    >>> from benchtop.record.ab import AbView
    >>> view = AbView("", 10, False, 0.02, ratio=1.041, ci_low=1.023, ci_high=1.059)
    >>> print(interval_line(view, 60).plain)
    B/A 1.041  95% CI +2.3% .. +5.9%           ┊  │   ├━━━●━┤
    >>> print(interval_line(AbView("", None, False, 0.02, ratio=0.95, confidence=0.9962), 40).plain)
    B/A 0.950  (too few rounds for a 99.6% interval)
    """
    head = Text("B/A ", style="bold")
    ratios = [r for r in (p.ratio for p in v.rounds) if r is not None]
    if v.ratio is None:
        head.append("-", style="dim")
        return head
    head.append(f"{v.ratio:.3f}")
    have_ci = v.ci_low is not None and v.ci_high is not None
    ends = [v.ci_low, v.ci_high] if have_ci else ratios
    head.append(f"  {100 * v.confidence:.3g}% CI {_pct(v.ci_low)} .. {_pct(v.ci_high)}  " if have_ci
                else "  (an interval needs 6 rounds)  " if v.confidence == CONFIDENCE
                else f"  (too few rounds for a {100 * v.confidence:.3g}% interval)  ",
                style="" if have_ci else "dim")
    cols = width - len(head.plain)
    if cols < 9:
        return head
    span = max([abs(math.log(e)) for e in ends if e is not None and e > 0] + [math.log1p(v.resolution)]) * 1.25

    def col(r: float) -> int:
        return max(0, min(cols - 1, round((math.log(max(r, 1e-9)) / span + 1) / 2 * (cols - 1))))

    bar = [(" ", "")] * cols
    for r in (1 / (1 + v.resolution), 1 + v.resolution):
        bar[col(r)] = ("┊", "dim")
    bar[col(1.0)] = ("│", "dim")
    if have_ci and v.ci_low is not None and v.ci_high is not None:
        lo, hi = col(v.ci_low), col(v.ci_high)
        for c in range(lo, hi + 1):
            bar[c] = ("━", "bold")
        bar[lo], bar[hi] = ("├", "bold"), ("┤", "bold")
    else:
        for r in ratios:
            bar[col(r)] = ("·", "")
    bar[col(v.ratio)] = ("●", "bold yellow")
    out = head
    for ch, style in bar:
        out.append(ch, style=style)
    return out


def _pct(r: float | None) -> str:
    return f"{100 * (r - 1):+.1f}%" if r is not None else "-"


def live_text(v: AbView) -> Text:
    """The round in progress and each run's latest interval, or how the
    comparison ended.

    >>> from benchtop.record.ab import AbLive, AbView
    >>> view = AbView("", 6, True, 0.02, live=(AbLive("a", 3, 2.0, 3.0, 5120.3, 1.92), AbLive("b", 3, 0.0, 3.0)))
    >>> print(live_text(view).plain)
    round 3/6 · A 2/3 s 5.12k tps p99 1.92ms · B warming up
    """
    out = Text(no_wrap=True, overflow="ellipsis")
    if v.ended:
        done = len(v.rounds)
        out.append(f"finished: {done} round{'' if done == 1 else 's'} ({v.ended})", style="bold")
        return out
    index = v.live[0].round if v.live else len(v.rounds) + 1
    out.append(f"round {index}{f'/{v.planned}' if v.planned else ''}", style="bold")
    if v.duet:
        out.append(" (A and B together)" if not v.live else "")
    for lv in v.live:
        out.append(" · ")
        out.append(lv.side.upper(), STYLE[lv.side])
        out.append(" warming up" if lv.warming else f" {_seconds(lv)}"
                   + (f" {num(lv.tps)} tps" if lv.tps is not None else "")
                   + (f" p99 {ms(lv.p99_ms)}" if lv.p99_ms is not None else ""))
    if not v.live:
        out.append(" · starting", style="dim")
    return out


def _seconds(lv: AbLive) -> str:
    return f"{lv.t:.0f}/{lv.of:g} s"
