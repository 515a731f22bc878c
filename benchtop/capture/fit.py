"""Distributions for a statement's placeholders, fitted to what a capture
saw: uniform over the sampled range (widened by one mean gap each side, the
unbiased bounds of a uniform sample), else over the column's range from the
server's statistics; a range `BETWEEN ? AND ?` keeps the captured width."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from benchtop.capture.model import Column, Placeholder, Statement

# a text column's values when nothing says how long they are
_DEFAULT_LENGTH = 16
_MAX_LENGTH = 1000


@dataclass(frozen=True, slots=True)
class Draw:
    """How one placeholder gets its value: `int` uniform in [lo, hi],
    `string` of `length` random characters, `width` the `between_lo`
    placeholder's value plus `lo`; `source` says what it was fitted to."""

    kind: str
    lo: int = 0
    hi: int = 0
    length: int = 0
    source: str = ""


def _ints(samples: tuple[str, ...]) -> list[int] | None:
    out = []
    for s in samples:
        try:
            out.append(int(float(s)))
        except ValueError:
            return None
    return out


def uniform_bounds(values: list[int], lo_limit: float | None = None, hi_limit: float | None = None) -> tuple[int, int]:
    """The range a uniform sample came from: its extremes widened by the mean
    gap between values, within the column's range when it is known.

    >>> uniform_bounds([10, 20, 30, 40])
    (0, 50)
    >>> uniform_bounds([10, 20, 30, 40], lo_limit=1, hi_limit=45)
    (1, 45)
    >>> uniform_bounds([7])
    (7, 7)
    """
    lo, hi = min(values), max(values)
    gap = (hi - lo) / (len(values) - 1) if len(values) > 1 else 0.0
    a, b = round(lo - gap), round(hi + gap)
    if lo_limit is not None:
        a = max(a, int(lo_limit))
    if hi_limit is not None:
        b = min(b, int(hi_limit))
    return a, max(a, b)


def range_width(stmt: Statement, lo: Placeholder, hi: Placeholder) -> tuple[int, str]:
    """hi - lo of a `BETWEEN ? AND ?`: the median of the sampled pairs, else
    from the rows each execution returned (or examined), a dense integer key
    taken for granted.

    >>> from benchtop.capture.model import Statement, Placeholder as P
    >>> s = Statement("x", "read", 10, 1.0, rows_sent=1000)
    >>> range_width(s, P(0, "between_lo", samples=("5", "9")), P(1, "between_hi", samples=("104", "108")))
    (99, 'samples')
    >>> range_width(s, P(0, "between_lo"), P(1, "between_hi"))
    (99, 'rows per execution')
    """
    a, b = _ints(lo.samples), _ints(hi.samples)
    if a and b and len(a) == len(b):
        return int(statistics.median(y - x for x, y in zip(a, b, strict=True))), "samples"
    if stmt.calls:
        sent = stmt.rows_sent / stmt.calls
        per = sent if sent > 1.5 else stmt.rows_examined / stmt.calls
        if per > 1.5:
            return round(per) - 1, "rows per execution"
    return 0, "unknown"


# fewer values than this say little of a range: the column's statistics are preferred
MIN_SAMPLES = 10
_VALUE_ROLES = ("eq", "cmp", "set", "insert", "between_lo")


@dataclass(frozen=True, slots=True)
class Pool:
    """What every statement of a capture saw of each column, by column name:
    the history table's `aid` is the accounts table's `aid`, so a column seen
    rarely in one statement borrows the values and the range seen in others."""

    samples: dict[str, tuple[str, ...]]
    columns: dict[str, Column]

    @classmethod
    def of(cls, stmts: list[Statement] | tuple[Statement, ...]) -> Pool:
        """
        >>> from benchtop.capture.model import Statement, Placeholder as P, Column as C
        >>> a = Statement("a", "read", 1, 1.0, placeholders=(P(0, "eq", C("t", "id", True, 1, 9), ("3",)),))
        >>> b = Statement("b", "write", 1, 1.0, placeholders=(P(0, "insert", C("h", "ID", True), ("4",)),))
        >>> p = Pool.of([a, b])
        >>> p.samples["id"], p.columns["id"].hi
        (('3', '4'), 9)
        """
        samples: dict[str, list[str]] = {}
        columns: dict[str, Column] = {}
        for s in stmts:
            for ph in s.placeholders:
                if ph.column is None or ph.role not in _VALUE_ROLES:
                    continue
                name = ph.column.name.lower()
                samples.setdefault(name, []).extend(ph.samples)
                known = columns.get(name)
                if known is None or (known.lo is None and ph.column.lo is not None):
                    columns[name] = ph.column
        return cls({k: tuple(v) for k, v in samples.items()}, columns)


def fit(stmt: Statement, pool: Pool | None = None) -> tuple[Draw, ...]:
    """A Draw per placeholder of `stmt`, in order."""
    out: list[Draw] = []
    phs = stmt.placeholders
    for i, ph in enumerate(phs):
        if ph.role == "between_hi" and i > 0 and phs[i - 1].role == "between_lo":
            width, source = range_width(stmt, phs[i - 1], ph)
            out.append(Draw("width", lo=width, hi=width, source=source))
            continue
        out.append(fit_one(ph, pool))
    return tuple(out)


def fit_one(ph: Placeholder, pool: Pool | None = None) -> Draw:
    """
    >>> from benchtop.capture.model import Placeholder as P, Column as C
    >>> fit_one(P(0, "eq", samples=tuple(str(v) for v in range(3, 23, 2))))
    Draw(kind='int', lo=1, hi=23, length=0, source='samples')
    >>> fit_one(P(0, "eq", samples=("3", "5", "7")))
    Draw(kind='int', lo=3, hi=7, length=0, source='samples')
    >>> fit_one(P(0, "set", C("t", "c", False, length=120)))
    Draw(kind='string', lo=0, hi=0, length=120, source='column')
    >>> fit_one(P(0, "eq", C("t", "id", True, 1, 10000)))
    Draw(kind='int', lo=1, hi=10000, length=0, source='column')
    >>> fit_one(P(0, "arith"))
    Draw(kind='int', lo=1, hi=1, length=0, source='unknown')
    """
    col = ph.column
    samples = ph.samples
    if ph.role == "arith" and not samples:
        # what is added to a column (`k = k + ?`) is no value of the column: one, when nothing was seen
        return Draw("int", 1, 1, source="unknown")
    if pool is not None and col is not None and ph.role in _VALUE_ROLES:
        name = col.name.lower()
        if len(samples) < MIN_SAMPLES:
            samples = pool.samples.get(name, samples)
        if col.lo is None and name in pool.columns:
            col = pool.columns[name]
    ranged = col is not None and col.numeric and col.lo is not None and col.hi is not None
    if samples and (len(samples) >= MIN_SAMPLES or not ranged):
        ints = _ints(samples)
        if ints is not None:
            if len(ints) < MIN_SAMPLES:
                return Draw("int", min(ints), max(ints), source="samples")
            lo_limit = col.lo if col is not None and col.numeric else None
            hi_limit = col.hi if col is not None and col.numeric else None
            lo, hi = uniform_bounds(ints, lo_limit, hi_limit)
            return Draw("int", lo, hi, source="samples")
        length = round(statistics.median(len(s) for s in samples))
        return Draw("string", length=min(max(length, 1), _MAX_LENGTH), source="samples")
    if col is not None and col.numeric and col.lo is not None and col.hi is not None:
        return Draw("int", int(col.lo), max(int(col.lo), int(col.hi)), source="column")
    if col is not None and not col.numeric:
        return Draw("string", length=min(col.length or _DEFAULT_LENGTH, _MAX_LENGTH), source="column")
    # nothing seen and no statistics: a small range
    return Draw("int", 1, 1000, source="unknown")
