"""A capture window: a reading of the server's statement totals at its
start and at its end, samples of values in between, and the Capture made of
their difference."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from benchtop.capture.model import Capture, Column, Order, Placeholder, Statement
from benchtop.capture.normalize import placeholder_sites, short, statement_kind
from benchtop.capture.order import Seen, derive

# at most this many values kept per placeholder
MAX_SAMPLES = 500
# seconds between looks at the statements running now: pg_stat_activity catches two statements of one short
# transaction rarely (pgbench -M prepared at 100 tps on a quiet host: 14 transactions ordered in 20 s at 0.05 s, 75
# at 0.01 s, whose order places the SELECT after the UPDATE it reads back); a look costs the server about 0.15 ms
SAMPLE_EVERY_S = 0.01


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
    # where the statements inside transactions come from (in_transactions)
    order_source: str

    @property
    def whole_transactions(self) -> bool:
        """Whether in_transactions holds each transaction's statements all
        (so two statements never seen together never ran together)."""
        ...

    def totals(self) -> dict[str, Totals]: ...

    def samples(self) -> list[tuple[str, list[str]]]:
        """(statement key, its literal values in placeholder order) for the
        statements seen whole since the previous call."""
        ...

    def in_transactions(self) -> list[Seen]:
        """The statements seen inside transactions over the window, with
        where in them (read after its end); none where the server shows no
        transaction's statements."""
        ...

    def literals(self) -> bool: ...

    def commits(self) -> int | None:
        """The server's count of committed transactions so far, when the
        statement statistics may miss the transactions' boundaries (None: they do not)."""
        ...

    def notes(self) -> list[str]:
        """What the window held that the capture cannot show (read after its end)."""
        ...

    def column(self, table: str, name: str) -> Column | None: ...

    def close(self) -> None: ...


def capture(reader: Reader, window_s: float, interval_s: float = SAMPLE_EVERY_S,
            clock: Callable[[], float] = time.monotonic, wait: Callable[[float], None] = time.sleep) -> Capture:
    """Watch `reader`'s server for `window_s` seconds."""
    started_at = time.time()
    commits_before = reader.commits()
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
    commits_after = reader.commits()
    keyed = {key: _statement(reader, t.minus(before.get(key)), seen.get(key, [])) for key, t in after.items()}
    keyed = {key: s for key, s in keyed.items() if s.calls > 0}
    stmts = list(keyed.values())
    stmts.sort(key=lambda s: -s.calls)
    begins = sum(s.calls for s in stmts if s.kind == "begin")
    commits = sum(s.calls for s in stmts if s.kind == "commit")
    notes = reader.notes()
    calls = sum(s.calls for s in stmts if s.kind not in ("begin", "commit", "rollback"))
    if commits_before is not None and commits_after is not None:
        counted = commits_after - commits_before
        # fewer commits than statements: transactions of several statements whose BEGIN the statistics missed.
        # pg_stat_statements keeps a prepared BEGIN only at its first run on each connection, so a client that
        # connected inside the window leaves a few: a BEGIN count far below the commits is missing the rest
        if 0 < counted < 0.9 * calls and begins < 0.5 * counted:
            counted_begins = f"{begins} BEGIN" if begins else "no BEGIN"
            begins = commits = once_per_transaction(counted, [s.calls for s in stmts], window)
            notes.append(f"{counted_begins} in the statement statistics: {begins} transactions, from the server's "
                         f"{counted} commits")
    if not any(p.samples for s in stmts for p in s.placeholders):
        notes.append("no literal values seen: placeholders drawn from the columns' statistics")
    body = {k: s for k, s in keyed.items() if s.kind not in ("begin", "commit", "rollback")}
    order = derive(reader.in_transactions(), body, reader.order_source, reader.whole_transactions) if begins else None
    notes += order_notes(order, len(body), reader.literals(), reader.whole_transactions)
    return Capture(reader.engine, reader.target, reader.version, started_at, window, begins, commits,
                   reader.literals(), reader.sample_source, tuple(stmts), tuple(notes), order)


def order_notes(order: Order | None, body: int, literals: bool, whole: bool = True) -> list[str]:
    """What the capture says of the statements' order and shared values.

    >>> order_notes(None, 5, False)[0][:58]
    'no statement was seen inside a transaction (no statement h'
    >>> order_notes(Order("x", 40, ("a", "b")), 3, False)[0][:69]
    'statements in the order seen in 40 transactions (x): 2 of 3 placed, t'
    """
    if not body:
        return []
    if order is None:
        return ["no statement was seen inside a transaction (no statement history on MySQL/MariaDB, prepared "
                "statements there, or too few samples): the twin runs reads first, then writes by count"]
    placed = len(order.statements)
    out = [f"statements in the order seen in {order.transactions} transactions ({order.source})"
           + (f": {placed} of {body} placed, the others where they would be without an order"
              if placed < body else "")]
    if not any(x.of for x in order.shared):
        out.append("no placeholder was seen taking an earlier statement's value" if literals else
                   "values shared between statements are not seen (prepared statements): each is drawn alone")
    if order.alternatives:
        n = len(order.alternatives)
        why = ("never seen in one transaction though each ran in many" if whole else
               "the same but for their table (assumed: transactions seen in part do not show it)")
        out.append(f"{n} group{'s' if n > 1 else ''} of statements {why} "
                   f"({', '.join(short(g[0], 32) + ' ...' for g in order.alternatives[:2])}"
                   f"{', ...' if n > 2 else ''}): a transaction runs one of each")
    assumed = sum(1 for x in order.shared if not x.of)
    if assumed:
        out.append(f"{assumed} SELECT key{'s' if assumed > 1 else ''} assumed to read back the row an earlier UPDATE "
                   "of the same table wrote by the same column (no values seen to tell)")
    return out


def once_per_transaction(counted: int, calls: list[int], window_s: float) -> int:
    """Transactions counted roughly (the server's commits, which each backend
    adds once a second or later: a second's worth or more off at either end
    of the window), made exact by the statement that ran once in each: the
    one whose count is nearest, when within two seconds' worth and 15% of it.

    >>> once_per_transaction(118, [131, 131, 655], 20.0), once_per_transaction(50, [131, 655], 20.0)
    (131, 50)
    >>> once_per_transaction(84, [111, 555], 3.0), once_per_transaction(60, [120, 600], 3.0)
    (111, 120)
    """
    near = min(calls, key=lambda c: abs(c - counted), default=counted)
    # the lag is a span of time, so its error scales with the true count, which near is if it is right
    return near if abs(near - counted) <= (0.15 + 2.0 / max(window_s, 1.0)) * max(near, counted) else counted


def _statement(reader: Reader, t: Totals, values: list[list[str]]) -> Statement:
    sites = placeholder_sites(t.text)
    phs = []
    for i, site in enumerate(sites):
        col = reader.column(site.table, site.column) if site.table and site.column else None
        got = tuple(v[i] for v in values if len(v) == len(sites))
        phs.append(Placeholder(i, site.role, col, got))
    return Statement(t.text, statement_kind(t.text), t.calls, round(t.total_ms, 4), t.rows_sent, t.rows_affected,
                     t.rows_examined, tuple(phs))
