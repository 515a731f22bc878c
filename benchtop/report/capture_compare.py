"""`benchtop report CAPTURE CAPTURE2`: two captures side by side (production's
and one taken while its twin ran), statement by statement matched on their
normalized text: share of executions, mean time and rows per execution of
each, and the differences, then the two rates."""

from __future__ import annotations

from dataclasses import dataclass

from benchtop.capture.model import Capture, Statement
from benchtop.capture.normalize import folded

# the statement's text is cut to this many characters in the table
_TEXT = 60


@dataclass(frozen=True, slots=True)
class Side:
    """One statement's figures in one capture."""

    share: float
    mean_ms: float
    rows: float


@dataclass(frozen=True, slots=True)
class Pair:
    """A statement (its normalized text) as each capture saw it; None where
    one capture did not see it."""

    text: str
    first: Side | None
    second: Side | None


def _key(text: str) -> str:
    # digests of the same statement differ only in blanks and case from one run to another
    return folded(text).lower()


def _sides(cap: Capture) -> dict[str, tuple[str, Side]]:
    total = sum(s.calls for s in cap.statements) or 1
    out: dict[str, tuple[str, Side]] = {}
    merged: dict[str, list[Statement]] = {}
    for s in cap.statements:
        merged.setdefault(_key(s.text), []).append(s)
    for key, stmts in merged.items():
        calls = sum(s.calls for s in stmts)
        if not calls:
            continue
        out[key] = (folded(stmts[0].text), Side(calls / total, sum(s.total_ms for s in stmts) / calls,
                                                sum(s.rows for s in stmts) / calls))
    return out


def pairs(first: Capture, second: Capture) -> list[Pair]:
    """The statements of both captures, the first's in its order (most
    executed first), then those only the second saw.

    >>> a = Capture("mysql", "m", "10.11", 0.0, 10.0, 0, 0, True, "none",
    ...             (Statement("SELECT 1 ", "read", 30, 3.0, 30), Statement("DELETE x", "write", 10, 1.0)))
    >>> b = Capture("mysql", "m", "10.11", 0.0, 10.0, 0, 0, True, "none", (Statement("select  1", "read", 20, 4.0, 40),))
    >>> [(p.text, p.first is not None, p.second is not None) for p in pairs(a, b)]
    [('SELECT 1', True, True), ('DELETE x', True, False)]
    """
    one, two = _sides(first), _sides(second)
    ordered = sorted(one, key=lambda k: -one[k][1].share) + sorted(
        (k for k in two if k not in one), key=lambda k: -two[k][1].share)
    return [Pair((one.get(k) or two[k])[0], one[k][1] if k in one else None, two[k][1] if k in two else None)
            for k in ordered]


def _ratio(a: float, b: float) -> str:
    if a <= 0:
        return "-" if b <= 0 else "new"
    return f"{100.0 * (b / a - 1):+.0f}%"


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT else text[:_TEXT - 1] + "…"


def compare_text(first: Capture, second: Capture, first_name: str, second_name: str) -> str:
    """
    >>> a = Capture("mysql", "m", "10.11", 0.0, 10.0, 10, 10, True, "none",
    ...             (Statement("SELECT c FROM t WHERE id = ?", "read", 30, 3.0, 30), Statement("BEGIN", "begin", 10, 0.1)))
    >>> b = Capture("mysql", "m", "10.11", 0.0, 10.0, 9, 9, True, "none",
    ...             (Statement("SELECT c FROM t WHERE id = ?", "read", 36, 5.4, 36), Statement("BEGIN", "begin", 9, 0.1)))
    >>> print(compare_text(a, b, "prod", "twin"))
    prod: 1.0 transactions/s over 10.0 s; twin: 0.9 transactions/s over 10.0 s (rate -10%)
       share          diff   mean ms             diff  rows/exec          diff  statement
       75.0%   80.0%  +5.0     0.100    0.150    +50%       1.00   1.00    +0%  SELECT c FROM t WHERE id = ?
       25.0%   20.0%  -5.0     0.010    0.011    +11%       0.00   0.00      -  BEGIN
    """
    lines = [f"{first_name}: {first.rate:.1f} transactions/s over {first.window_s:.1f} s; {second_name}: "
             f"{second.rate:.1f} transactions/s over {second.window_s:.1f} s (rate {_ratio(first.rate, second.rate)})",
             f"  {'share':>6}  {'':>6}  {'diff':>4}  {'mean ms':>8}  {'':>7}  {'diff':>6}  {'rows/exec':>9}  {'':>5}  "
             f"{'diff':>5}  statement"]
    for p in pairs(first, second):
        a = p.first or Side(0.0, 0.0, 0.0)
        b = p.second or Side(0.0, 0.0, 0.0)
        share = f"{100.0 * a.share:5.1f}%  {100.0 * b.share:5.1f}%  {100.0 * (b.share - a.share):+4.1f}"
        if p.first and p.second:
            mean = f"{a.mean_ms:8.3f}  {b.mean_ms:7.3f}  {_ratio(a.mean_ms, b.mean_ms):>6}"
            rows = f"{a.rows:9.2f}  {b.rows:5.2f}  {_ratio(a.rows, b.rows):>5}"
        else:
            which = p.first or p.second
            assert which is not None
            mean = (f"{which.mean_ms:8.3f}  {'-':>7}" if p.first else f"{'-':>8}  {which.mean_ms:7.3f}") + f"  {'-':>6}"
            rows = (f"{which.rows:9.2f}  {'-':>5}" if p.first else f"{'-':>9}  {which.rows:5.2f}") + f"  {'-':>5}"
        lines.append(f"  {share}  {mean}  {rows}  {_cut(p.text)}")
    lines += [f"  note ({first_name}): {n}" for n in first.notes]
    lines += [f"  note ({second_name}): {n}" for n in second.notes]
    return "\n".join(lines)
