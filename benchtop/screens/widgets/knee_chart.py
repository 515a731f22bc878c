"""A knee search live: throughput against concurrency (or arrival rate),
each finished probe a point (● under the limits, × over them, ★ the best),
the USL's fitted curve as dots and the column where it expects the p99
limit to break.  Plain text on a character grid, readable without colour;
the title line says the answer so far."""

from __future__ import annotations

import math

from rich.text import Text

from benchtop.panels.units import num
from benchtop.record.knee import KneeView

LABEL_W = 7


def render_knee(s: KneeView, width: int, height: int) -> Text:
    key = "rate" if s.rate else "thr"
    best = s.best
    title = Text("knee: ", style="bold")
    if best is not None:
        where = f"{best.x:g}/s" if s.rate else f"{int(best.x)} thr"
        title.append(f"best {where} {num(best.tps)} tps p99 {best.p99_ms:.3g} ms")
    else:
        title.append("probing..." if not s.probes else "no setting under the limit yet", style="dim")
    if s.peak is not None:
        title.append(f" · USL peak {s.peak:.0f}")
    if s.p99_limit_ms is not None:
        title.append(f" · limit {s.p99_limit_ms:g} ms")
    rows, cols = height - 2, width - LABEL_W
    if rows < 2 or cols < 8:
        return title
    lo, hi = math.log(s.low), math.log(max(s.high, s.low * 1.0001))

    def col(x: float) -> int:
        return max(0, min(cols - 1, round((math.log(max(x, s.low)) - lo) / (hi - lo) * (cols - 1))))

    def at(c: int) -> float:
        return math.exp(lo + (hi - lo) * c / (cols - 1))

    curve = [s.throughput(at(c)) for c in range(cols)] if s.throughput is not None else []
    top = max([p.tps for p in s.probes] + [v for v in curve if math.isfinite(v)] + [1.0]) * 1.1

    def row(y: float) -> int:
        return max(0, min(rows - 1, rows - 1 - round(y / top * (rows - 1))))

    grid: list[list[tuple[str, str]]] = [[(" ", "")] * cols for _ in range(rows)]
    crossing = s.limit_crossing
    if crossing is not None and s.low <= crossing <= s.high:
        c = col(crossing)
        for r in range(rows):
            grid[r][c] = ("┊", "red")
    for c, y in enumerate(curve):
        if math.isfinite(y):
            grid[row(y)][c] = ("·", "cyan")
    for p in s.probes:
        grid[row(p.tps)][col(p.x)] = ("●", "green") if p.feasible else ("×", "red")
    if best is not None:
        grid[row(best.tps)][col(best.x)] = ("★", "bold yellow")
    out = Text()
    out.append_text(title)
    for r in range(rows):
        label = num(top * (rows - 1 - r) / (rows - 1)) if r in (0, rows - 1) else ""
        out.append("\n" + label.rjust(LABEL_W - 1) + "│", style="dim")
        for ch, style in grid[r]:
            out.append(ch, style=style)
    axis = [" "] * cols
    for text, x in ((f"{s.low:g}", s.low), (f"{s.high:g} {key}", s.high)):
        start = min(max(0, col(x) - (len(text) if x == s.high else 0) + 1), max(0, cols - len(text)))
        axis[start:start + len(text)] = list(text)
    out.append("\n" + " " * LABEL_W + "".join(axis)[:cols], style="dim")
    return out
