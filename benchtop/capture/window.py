"""A capture window: a reading of the server's statement totals at its
start and at its end, samples of values in between, and the Capture made of
their difference."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from benchtop.capture.model import Capture, Column, Placeholder, Statement
from benchtop.capture.normalize import placeholder_sites, statement_kind

# at most this many values kept per placeholder
MAX_SAMPLES = 500


@dataclass(frozen=True, slots=True)
class Totals:
    """A statement's cumulative figures as the server keeps them."""

    text: str
    calls: int
    total_ms: float
    rows_sent: int = 0
    rows_affected: int = 0
    rows_examined: int = 0

    def minus(self, before: Totals | None) -> Totals:
        """The figures since `before`; all of them when the server's totals
        went back (reset by someone else) or the statement is new.

        >>> Totals("x", 10, 5.0, 3).minus(Totals("x", 4, 2.0, 1))
        Totals(text='x', calls=6, total_ms=3.0, rows_sent=2, rows_affected=0, rows_examined=0)
        >>> Totals("x", 3, 1.0).minus(Totals("x", 4, 2.0)).calls
        3
        """
        if before is None or self.calls < before.calls:
            return self
        return Totals(self.text, self.calls - before.calls, self.total_ms - before.total_ms,
                      self.rows_sent - before.rows_sent, self.rows_affected - before.rows_affected,
                      self.rows_examined - before.rows_examined)


class Reader(Protocol):
    """One server's statistics, read with SELECTs only."""

    engine: str
    target: str
    version: str
    sample_source: str

    def totals(self) -> dict[str, Totals]: ...

    def samples(self) -> list[tuple[str, list[str]]]:
        """(statement key, its literal values in placeholder order) for the
        statements seen whole since the previous call."""
        ...

    def literals(self) -> bool: ...

    def column(self, table: str, name: str) -> Column | None: ...

    def close(self) -> None: ...


def capture(reader: Reader, window_s: float, interval_s: float = 0.1,
            clock: Callable[[], float] = time.monotonic, wait: Callable[[float], None] = time.sleep) -> Capture:
    """Watch `reader`'s server for `window_s` seconds."""
    started_at = time.time()
    before = reader.totals()
    t0 = clock()
    seen: dict[str, list[list[str]]] = {}
    while True:
        left = window_s - (clock() - t0)
        if left <= 0:
            break
        for key, values in reader.samples():
            kept = seen.setdefault(key, [])
            if len(kept) < MAX_SAMPLES:
                kept.append(values)
        wait(min(interval_s, max(left, 0.0)))
    after = reader.totals()
    window = clock() - t0
    stmts = [_statement(reader, t.minus(before.get(key)), seen.get(key, [])) for key, t in after.items()]
    stmts = [s for s in stmts if s.calls > 0]
    stmts.sort(key=lambda s: -s.calls)
    begins = sum(s.calls for s in stmts if s.kind == "begin")
    commits = sum(s.calls for s in stmts if s.kind == "commit")
    notes = []
    if not any(p.samples for s in stmts for p in s.placeholders):
        notes.append("no literal values seen: placeholders drawn from the columns' statistics")
    return Capture(reader.engine, reader.target, reader.version, started_at, window, begins, commits,
                   reader.literals(), reader.sample_source, tuple(stmts), tuple(notes))


def _statement(reader: Reader, t: Totals, values: list[list[str]]) -> Statement:
    sites = placeholder_sites(t.text)
    phs = []
    for i, site in enumerate(sites):
        col = reader.column(site.table, site.column) if site.table and site.column else None
        got = tuple(v[i] for v in values if len(v) == len(sites))
        phs.append(Placeholder(i, site.role, col, got))
    return Statement(t.text, statement_kind(t.text), t.calls, round(t.total_ms, 4), t.rows_sent, t.rows_affected,
                     t.rows_examined, tuple(phs))
