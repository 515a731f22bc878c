"""`benchtop report CAPTURE`: a capture's statements in a table (share of
executions, executions per second, mean time, rows per execution and where
each statement's values came from), the rate and the capture's notes."""

from __future__ import annotations

from pathlib import Path

from benchtop.capture.model import CAPTURE_JSON, Capture

# the statement's text is cut to this many characters in the table
_TEXT = 70


def is_capture_folder(folder: Path) -> bool:
    return (folder / CAPTURE_JSON).is_file()


def _values(cap: Capture, index: int) -> str:
    phs = cap.statements[index].placeholders
    if not phs:
        return "-"
    seen = sum(1 for p in phs if p.samples)
    return f"{seen}/{len(phs)} seen"


def capture_text(cap: Capture, name: str) -> str:
    """
    >>> from benchtop.capture.model import Statement, Placeholder
    >>> cap = Capture("mysql", "mysql://u@h/db", "10.11", 0.0, 10.0, 100, 100, True, "column statistics",
    ...               (Statement("BEGIN", "begin", 100, 1.0), Statement("SELECT c FROM t WHERE id = ?", "read", 300,
    ...                          30.0, 300, placeholders=(Placeholder(0, "eq"),))))
    >>> print(capture_text(cap, "cap"))
    cap: mysql://u@h/db (mysql 10.11), 10.0 s: 100 transactions, 10.0/s; values from column statistics
       share     per s   mean ms     rows  values     statement
       25.0%      10.0     0.010     0.00  -          BEGIN
       75.0%      30.0     0.100     1.00  0/1 seen   SELECT c FROM t WHERE id = ?
    """
    total = sum(s.calls for s in cap.statements) or 1
    lines = [f"{name}: {cap.target} ({cap.engine} {cap.server_version}), {cap.window_s:.1f} s: "
             f"{cap.transactions} transactions, {cap.rate:.1f}/s; values from {cap.sample_source}",
             f"  {'share':>6}  {'per s':>8}  {'mean ms':>8}  {'rows':>7}  {'values':<9}  statement"]
    for i, s in enumerate(cap.statements):
        text = " ".join(s.text.split())
        text = text if len(text) <= _TEXT else text[:_TEXT - 1] + "…"
        rows = s.rows / s.calls if s.calls else 0.0
        lines.append(f"  {100.0 * s.calls / total:5.1f}%  {s.calls / max(cap.window_s, 1e-9):8.1f}  "
                     f"{s.mean_ms:8.3f}  {rows:7.2f}  {_values(cap, i):<9}  {text}")
    lines += [f"  note: {n}" for n in cap.notes]
    return "\n".join(lines)
