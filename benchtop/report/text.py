"""The terminal rendition: the comparison table and a TPS sparkline per run."""

from __future__ import annotations

from collections.abc import Sequence

from benchtop.knee.answer import answer_text
from benchtop.report.ab import AbData, ab_lines, rounds_table
from benchtop.report.data import COLUMNS, OP_COLUMNS, RunData, op_rows, row_cells, table_rows
from benchtop.report.tables import analysis_tables, table_lines, validity_lines, verdict_lines

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 60) -> str:
    """Values squeezed into `width` bars (averaged), scaled from 0 to the max.

    >>> sparkline([0, 1, 2, 3, 4, 5, 6, 7])
    '▁▂▃▄▅▆▇█'
    >>> sparkline([5, 5, 5, 5], width=2)
    '██'
    """
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [sum(chunk) / len(chunk) for chunk in
                  (values[int(i * step): max(int((i + 1) * step), int(i * step) + 1)] for i in range(width))]
    top = max(values)
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))] for v in values)


def _grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, r in enumerate(rows):
        cells = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def table_text(runs: list[RunData]) -> str:
    return _grid([list(COLUMNS)] + [row_cells(r) for r in table_rows(runs)])


def report_text(runs: list[RunData], width: int = 60, comparisons: Sequence[AbData] = ()) -> str:
    out = _runs_text(runs, width) if runs else []
    for ab in comparisons:
        out += ([""] if out else []) + [*ab_lines(ab), "", *table_lines(rounds_table(ab))]
    return "\n".join(out)


def _runs_text(runs: list[RunData], width: int) -> list[str]:
    out = [table_text(runs), ""]
    ops = op_rows(runs)
    if ops:
        out += [_grid([list(OP_COLUMNS)] + ops), ""]
    name_w = max(len(r.label) for r in runs)
    for r in runs:
        tps = [float(iv["tps"]) for iv in r.intervals]
        peak = max(tps, default=0.0)
        out.append(f"{r.label.ljust(name_w)}  {sparkline(tps, width)}  max {peak:.0f} tps")
    limits = verdict_lines(runs)
    if limits:
        out += ["", "What limits each run"] + limits
    for table in analysis_tables(runs):
        out += [""] + table_lines(table)
    verdicts = validity_lines(runs)
    if verdicts:
        out += ["", "Validity"] + verdicts
    for r in runs:
        if isinstance(r.summary.get("knee"), dict):
            out += ["", f"{r.name}: {answer_text(r.summary['knee'])}"]
    for r in runs:
        if r.unfinished:
            out += ["", f"{r.name}: {r.summary['stopped_by']}"]
        out += [f"{r.name}: {problem}" for problem in r.problems]
    stalls = [(r.name, st) for r in runs for st in r.summary.get("stalls") or []]
    if stalls:
        out.append("")
        for name, st in stalls:
            seen = f"; {', '.join(st['seen'])}" if st.get("seen") else ""
            out.append(f"{name}: stall at {st['start']:.0f}s for {st['duration']:.1f}s (min {st['min_tps']:.0f} tps){seen}")
    return out
