"""One self-contained HTML file: inline CSS, the table, the plots as PNG
data URIs.  Nothing is fetched from the network when it is opened."""

from __future__ import annotations

import base64
import html
import time
from collections.abc import Sequence

from benchtop.knee.answer import answer_text
from benchtop.report.ab import AbData, ab_lines, rounds_table
from benchtop.report.data import COLUMNS, OP_COLUMNS, RunData, op_rows, row_cells, table_rows
from benchtop.report.plots import Plot, render_png
from benchtop.report.tables import Table, analysis_tables, validity_lines, verdict_lines

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1000px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.unsafe { background: #fdd; color: #900; font-weight: bold; }
td.unknown { color: #888; }
p.warning { color: #900; }
img { max-width: 100%; }
.pair { display: flex; flex-wrap: wrap; gap: 1em; } .pair > figure { flex: 1 1 420px; margin: 0; }
.meta { color: #666; font-size: 0.9em; }
"""


def _table(runs: list[RunData]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    for row in table_rows(runs):
        cells = row_cells(row)
        klass = "" if row.validity_ok else (' class="unknown"' if row.validity == "?" else ' class="unsafe"')
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells[:-1]) + f"<td{klass}>{html.escape(cells[-1])}</td>"
        body.append(f"<tr>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _analysis_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    note = f"<p>{html.escape(table.note)}</p>" if table.note else ""
    return (f"<h2>{html.escape(table.title)}</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            + note)


def _img(plot: Plot) -> str:
    data = base64.b64encode(render_png(plot)).decode("ascii")
    return f'<img alt="{html.escape(plot.title)}" src="data:image/png;base64,{data}">'


def _figure(plot: Plot) -> str:
    return f"<figure>{_img(plot)}<figcaption>{html.escape(plot.title)}</figcaption></figure>"


def report_html(runs: list[RunData], plots: list[Plot], title: str = "benchtop report",
                comparisons: Sequence[AbData] = ()) -> str:
    folders = [r.folder for r in runs] + [ab.folder for ab in comparisons]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">{len(folders)} result folder(s): '
        + ", ".join(html.escape(str(f)) for f in folders)
        + f" &middot; generated {time.strftime('%Y-%m-%d %H:%M:%S')}</p>",
    ]
    for ab in comparisons:
        parts.append(f"<h2>A/B comparison: {html.escape(ab.name)}</h2>")
        parts += [f"<p>{html.escape(line)}</p>" for line in ab_lines(ab)]
        parts.append(_analysis_table(rounds_table(ab)))
    if runs:
        parts.append(_table(runs))
    ops = op_rows(runs)
    if ops:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in OP_COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in ops)
        parts.append(f"<h2>Latency per operation</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    knees = [(r, r.summary["knee"]) for r in runs if isinstance(r.summary.get("knee"), dict)]
    if knees:
        parts.append("<h2>Knee</h2>")
        parts += [f"<p><b>{html.escape(r.name)}</b>: {html.escape(answer_text(k))}</p>" for r, k in knees]
    limits = verdict_lines(runs)
    if limits:
        parts.append("<h2>What limits each run</h2>")
        parts += [f"<p>{html.escape(line)}</p>" for line in limits]
    parts += [_analysis_table(t) for t in analysis_tables(runs)]
    verdicts = validity_lines(runs)
    if verdicts:
        parts.append("<h2>Validity</h2>")
        parts += [f'<p class="warning">{html.escape(line)}</p>' for line in verdicts]
    # the histogram and its percentile view side by side: the same data, two readings
    paired = {"latency_histogram", "latency_cdf"}
    pair = [p for p in plots if p.name in paired]
    for plot in plots:
        if plot.name in paired:
            if plot is pair[0]:
                parts.append("<h2>Latency</h2>")
                parts.append('<div class="pair">' + "".join(_figure(p) for p in pair) + "</div>")
            continue
        parts.append(f"<h2>{html.escape(plot.title)}</h2>")
        parts.append(_img(plot))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
