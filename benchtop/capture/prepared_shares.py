"""Executions of prepared statements shared among their texts (pure: the
reader, benchtop.capture.mysql_prepared, brings what the server showed).

Each execution of the statement history has a shape (rows sent, affected
and examined, ranges, sorts, temporary tables) but no text; some are named
by a label (a running statement's text placed on the execution that started
when it says).  Each shape's executions are shared among the texts that
could have run them by a non-negative least-squares fit: the server's
command counters and per-table counts as near-exact constraints, the labels'
proportions as a prior.  A label names its execution alone: executions of
one shape back to back on a thread may be different statements (sysbench's
UPDATE of k, UPDATE of c and DELETE touch a row each, one after another)."""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import lsq_linear

from benchtop.capture.normalize import (literal_values, split_at_placeholders, statement_kind, tokens,
                                        with_question_marks)
from benchtop.capture.order import Seen
from benchtop.capture.window import Totals

# a label's start and its execution's differ by a few microseconds (the server stamps them at two points of its
# dispatch); the next statement of a thread starts a round trip later
LABEL_WITHIN_PS = 30_000_000
LABEL_APART_PS = 15_000_000
# the processlist shows a statement a little longer than performance_schema times it: a label's weight is
# 1 / (its execution's time + this)
SHOWN_LONGER_MS = 0.01
# what a label counts for each point it is less like its execution than the likest statement (Shape.unlike)
MISPLACED = 0.25
# a shape shared among statements on fewer labels than this: their shares are unsure (from k labels a proportion
# near a half is known to about sqrt(0.25 / k), 16 points at 10)
UNSURE_LABELS = 10
# a shape whose executions the fit gives this share of to one statement: each of them is that statement's
SOLE_SHARE = 0.95
_ROW_COUNTER = {"insert": "ins", "replace": "ins", "update": "upd", "delete": "del"}
_RANGE_WORDS = {"between", "<", ">", "<=", ">=", "in", "like", "or"}
_AGGREGATES = {"sum", "count", "min", "max", "avg"}
# what a command counter counts, by the statement's first word
COMMAND = {"select": "Com_select", "insert": "Com_insert", "update": "Com_update", "delete": "Com_delete",
            "replace": "Com_replace", "begin": "Com_begin", "start": "Com_begin", "commit": "Com_commit",
            "rollback": "Com_rollback"}


@dataclass(frozen=True, slots=True)
class Shape:
    """What the history says of an execution: its rows (in powers of two)
    and how it read them."""

    sent: int
    affected: int
    examined: int
    ranged: bool
    scanned: bool
    sorted: bool
    tmp: bool

    @classmethod
    def of(cls, r: dict[str, Any]) -> Shape:
        return cls(_bucket(r["sent"]), _bucket(r["affected"]), _bucket(r["examined"]), bool(r["srange"]),
                   bool(r["scan"]), bool(r["sorted"]), bool(r["tmp"]))

    def fits(self, text: str) -> bool:
        """Whether this statement could have run this execution: its kind
        (a read changes no row, a write sends none, BEGIN and COMMIT touch
        none) and its words (a range needs a range condition, a sort an ORDER
        BY, GROUP BY or DISTINCT, a temporary table DISTINCT, GROUP BY or
        UNION, more than one row from an aggregate a GROUP BY).

        >>> point = Shape(1, 0, 1, False, False, False, False)
        >>> ranged = Shape(7, 0, 7, True, False, False, False)
        >>> point.fits("SELECT c FROM t WHERE id=?"), ranged.fits("SELECT c FROM t WHERE id=?")
        (True, False)
        >>> ranged.fits("SELECT c FROM t WHERE id BETWEEN ? AND ?"), ranged.fits("SELECT SUM(k) FROM t WHERE id > ?")
        (True, False)
        >>> point.fits("BEGIN"), Shape(0, 0, 0, False, False, False, False).fits("COMMIT")
        (False, True)
        """
        kind = statement_kind(text)
        if kind in ("begin", "commit", "rollback"):
            return not (self.sent or self.affected or self.examined)
        if (kind == "read" and self.affected) or (kind == "write" and self.sent):
            return False
        words = _words(text)
        if self.ranged and not words & _RANGE_WORDS:
            return False
        if self.sorted and not words & {"order", "group", "distinct", "distinctrow"}:
            return False
        if self.tmp and not words & {"group", "distinct", "distinctrow", "union"}:
            return False
        return not (self.sent > 1 and words & _AGGREGATES and "group" not in words)

    def unlike(self, text: str) -> int:
        """How many of a sort, a temporary table, a range read and many rows
        read for one sent (an aggregate) the execution shows and the text's
        words do not lead one to expect, or the other way round.  `fits`
        rules a text out only when the execution shows what the text cannot
        do; a text that fits with fewer of these is the likelier one (an
        ORDER BY c over a range sorts, and a plain range does not).

        >>> plain = Shape(7, 0, 7, True, False, False, False)
        >>> plain.unlike("SELECT c FROM t WHERE id BETWEEN ? AND ?"), plain.unlike(
        ...     "SELECT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c")
        (0, 1)
        >>> summed = Shape(1, 0, 7, True, False, False, False)
        >>> summed.unlike("SELECT SUM(k) FROM t WHERE id BETWEEN ? AND ?"), summed.unlike(
        ...     "SELECT c FROM t WHERE id BETWEEN ? AND ?")
        (0, 1)
        """
        words = _words(text)
        expects = (bool(words & {"order", "group", "distinct", "distinctrow"}),
                   bool(words & {"group", "distinct", "distinctrow", "union"}),
                   bool(words & _RANGE_WORDS),
                   bool(words & _AGGREGATES) and "group" not in words)
        shows = (self.sorted, self.tmp, self.ranged, self.sent <= 1 < self.examined)
        return sum(a != b for a, b in zip(expects, shows, strict=True))


@dataclass(slots=True)
class Execution:
    thread: int
    event: int
    start_ps: int
    shape: Shape
    ms: float
    sent: int
    affected: int
    examined: int


@dataclass(frozen=True, slots=True)
class Fitted:
    """The fit: each statement's executions, and the shapes whose executions
    it gave (nearly) all to one statement, by that statement."""

    statements: list[Attributed]
    sole: dict[Shape, str]
    # statements that ran executions alike, shared out on fewer than UNSURE_LABELS labels: (them, the labels)
    unsure: list[tuple[tuple[str, ...], int]]


@dataclass(frozen=True, slots=True)
class Attributed:
    """A prepared statement's executions over the window, as fitted."""

    text: str
    calls: float
    total_ms: float
    rows_sent: float
    rows_affected: float
    rows_examined: float


def _words(text: str) -> set[str]:
    """A statement's words and operators, lower-cased (what Shape.fits and Shape.unlike read).

    >>> sorted(_words("SELECT SUM(k) FROM t WHERE id > ?"))
    ['(', ')', '>', 'from', 'id', 'k', 'select', 'sum', 't', 'where']
    """
    return {t.text.lower() for t in tokens(text) if t.kind in ("ident", "op")}


def _bucket(n: Any) -> int:
    """0, 1, then one bucket per power of two (rows vary a little between executions of one statement).

    >>> [_bucket(n) for n in (0, 1, 2, 3, 4, 100, 127, 128)]
    [0, 1, 2, 2, 3, 7, 7, 8]
    """
    n = int(n or 0)
    return 0 if n <= 0 else int(math.log2(n)) + 1


def first_word(text: str) -> str:
    toks = tokens(text)
    return toks[0].text.lower() if toks else ""


def tables_of(text: str) -> tuple[str, ...]:
    """The tables a statement names after FROM, JOIN, UPDATE or INTO.

    >>> tables_of("SELECT c FROM sbtest1 WHERE id=?"), tables_of("UPDATE `db`.`t` SET k=k+1 WHERE id=?")
    (('sbtest1',), ('t',))
    >>> tables_of("SELECT a FROM t1 JOIN t2 ON t1.id = t2.id")
    ('t1', 't2')
    """
    toks = tokens(text)
    out: list[str] = []
    for i, t in enumerate(toks[:-1]):
        if t.text.lower() in ("from", "join", "update", "into"):
            j = i + 1
            if j + 2 < len(toks) and toks[j + 1].text == "." and toks[j + 2].kind in ("ident", "qident"):
                j += 2
            if toks[j].kind in ("ident", "qident") and toks[j].name not in out:
                out.append(toks[j].name)
    return tuple(out)


def placed(labels: list[tuple[int, float, str, tuple[str, ...]]], threads: dict[int, int],
            executions: list[Execution]) -> dict[tuple[int, int], tuple[str, tuple[str, ...]]]:
    """Each label on the execution of its thread that started when it says,
    if one did."""
    starts: dict[int, list[Execution]] = defaultdict(list)
    for e in executions:
        starts[e.thread].append(e)
    for got in starts.values():
        got.sort(key=lambda e: e.start_ps)
    at_ps = {t: [e.start_ps for e in got] for t, got in starts.items()}
    out = {}
    for pid, at, text, values in labels:
        thread = threads.get(pid, -1)
        got = starts.get(thread, [])
        i = bisect.bisect_left(at_ps.get(thread, []), at)
        near = sorted((abs(got[j].start_ps - at), j) for j in (i - 1, i) if 0 <= j < len(got))
        # the next nearest must be clearly farther: a thread's statements can start 15 microseconds apart
        if near and near[0][0] <= LABEL_WITHIN_PS and (len(near) == 1 or near[1][0] >= near[0][0] + LABEL_APART_PS):
            best = got[near[0][1]]
            out[(best.thread, best.event)] = (text, values)
    return out


# one value as the server puts it in place of a `?`: a number, a quoted string, NULL or a hex string
_VALUE = r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|'(?:[^'\\]|\\.|'')*'|NULL|[xX]'[0-9A-Fa-f]*')"


def pattern(text: str) -> re.Pattern[str]:
    """What the text prepared as `text` looks like with its values in place."""
    pieces = split_at_placeholders(text)
    return re.compile(r"\s*" + _VALUE.join(r"\s*".join(re.escape(w) for w in p.split()) for p in pieces) + r"\s*;?\s*$",
                      re.S)


def unexpanded(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> tuple[str, list[str]]:
    """A running execution's text as prepared, and the values it shows: the
    processlist shows the text with its `?`, or, while the server logs
    statements (general or slow log), with the values in place: the prepared
    text it fits, else its constants made `?`.

    >>> unexpanded("SELECT c FROM t WHERE id=?", [])
    ('SELECT c FROM t WHERE id=?', [])
    >>> known = "UPDATE t SET k=k+1 WHERE id=?"
    >>> unexpanded("UPDATE t SET k=k+1 WHERE id=5043", [(known, pattern(known))])
    ('UPDATE t SET k=k+1 WHERE id=?', ['5043'])
    >>> unexpanded("DELETE  FROM t WHERE id=5043", [(known, pattern(known))])
    ('DELETE FROM t WHERE id=?', ['5043'])
    >>> rng = "SELECT c FROM t WHERE id BETWEEN ? AND ?"
    >>> unexpanded("SELECT c FROM t WHERE id BETWEEN 5 AND 104 ORDER BY c", [(rng, pattern(rng))])[0]
    'SELECT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c'
    >>> upd = "UPDATE t SET c=? WHERE id=?"
    >>> unexpanded("UPDATE t SET c='a''b' WHERE id=7", [(upd, pattern(upd))])
    ('UPDATE t SET c=? WHERE id=?', ["a'b", '7'])
    """
    text = " ".join(text.split())
    if any(t.kind == "ph" for t in tokens(text)):
        return text, []
    for known, pattern in patterns:
        m = pattern.match(text)
        if m:
            return known, [literal_values(v)[0] if literal_values(v) else v for v in m.groups()]
    return with_question_marks(text), literal_values(text)


def transactions(executions: list[Execution],
                  placed: dict[tuple[int, int], tuple[str, tuple[str, ...]]]) -> list[Seen]:
    """The named executions between a thread's BEGIN and COMMIT, with their
    places.  Neither is named as such: they are the executions that touch
    no row (unless named otherwise), the first opening a transaction and the
    next closing it (a thread's transactions come one after another).  A
    transaction some of whose statements the history lacks is not kept."""
    out: list[Seen] = []
    txn: list[Seen] | None = None
    name, last, place = "", None, 0
    for e in executions:
        if last is None or e.thread != last.thread or e.event != last.event + 1:
            txn = None
        last = e
        text, values = placed.get((e.thread, e.event), ("", ()))
        if e.shape.fits("BEGIN") and (not text or statement_kind(text) in ("begin", "commit", "rollback")):
            if txn is None:
                txn, name, place = [], f"{e.thread}/{e.event}", 0
            else:
                out += txn
                txn = None
            continue
        if txn is None:
            continue
        place += 1
        if text and statement_kind(text) not in ("begin", "commit", "rollback"):
            txn.append(Seen(name, float(place), f"prepared/{text}", values))
    return out


def text_counts(digested: dict[tuple[str, str], Totals],
                schema: str) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """What the text protocol's statements (by schema and text) add to the
    command counters, and (in `schema`) to each table's locks ("r", "w") and
    row counters."""
    commands: Counter[str] = Counter()
    per_table: Counter[tuple[str, str]] = Counter()
    for (db, text), t in digested.items():
        calls, affected = t.calls, t.rows_affected
        word = first_word(text)
        if word in COMMAND:
            commands[COMMAND[word]] += calls
        if db != schema:
            continue
        kind = statement_kind(text)
        for table in tables_of(text):
            per_table[(table, "w" if kind == "write" else "r")] += calls
            row_key = _ROW_COUNTER.get(word)
            if row_key:
                per_table[(table, row_key)] += affected
    return commands, per_table


def fit(executions: list[Execution], labelled: dict[tuple[int, int], str], texts: list[str], scale: float,
        counters: dict[str, int], texted: Counter[str], tables: dict[str, dict[str, int]],
        texted_tables: Counter[tuple[str, str]]) -> Fitted:
    """Non-negative least squares: x[shape, text] executions."""
    shapes = sorted({e.shape for e in executions}, key=lambda s: (s.sent, s.affected, s.examined, s.ranged,
                                                                     s.scanned, s.sorted, s.tmp))
    kinds = {t: statement_kind(t) for t in texts}
    per_shape = Counter(e.shape for e in executions)
    # executions named: each caught in proportion to how long it ran, and then some (the processlist shows a
    # statement a little longer than performance_schema times it), so each counts 1 / that
    prior: dict[Shape, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    known: Counter[tuple[Shape, str]] = Counter()
    timed: dict[tuple[Shape, str], list[float]] = defaultdict(list)
    named_in: Counter[Shape] = Counter()
    unlikeness = {(s, t): s.unlike(t) for s in shapes for t in texts if s.fits(t)}
    likeness = {s: min((u for (us, _t), u in unlikeness.items() if us == s), default=0) for s in shapes}
    for e in executions:
        text = labelled.get((e.thread, e.event))
        if text is None or not e.shape.fits(text):
            continue
        # a label on an execution less like its text than another statement is likelier misplaced (the next
        # execution of its thread started microseconds away) than right: it counts a quarter for each point
        prior[e.shape][text] += MISPLACED ** (unlikeness[(e.shape, text)] - likeness[e.shape]) / (e.ms + SHOWN_LONGER_MS)
        known[(e.shape, text)] += 1
        named_in[e.shape] += 1
        timed[(e.shape, text)].append(e.ms)
    # a statement named on some shapes ran those; one never named, or a shape never named, could be any that fits
    named_on: dict[str, set[Shape]] = defaultdict(set)
    named: Counter[str] = Counter()
    for (s, t), k in known.items():
        named[t] += k
    for (s, t), k in known.items():
        # one misplaced label must not open a shape to a statement named mostly elsewhere
        if k >= 3 or 2 * k > named[t]:
            named_on[t].add(s)
    pairs = []
    for s in shapes:
        unnamed = [t for t in texts if not named_on[t] and s.fits(t)]
        # a shape no label named ran a statement no label named, if one fits: elimination
        here = [t for t in texts if s in named_on[t]] + unnamed if named_in[s] else (
            unnamed or [t for t in texts if s.fits(t)])
        pairs += [(s, t) for t in here if s.fits(t)]
    if not pairs:
        return Fitted([], {}, [])
    col = {p: i for i, p in enumerate(pairs)}
    eqs: list[tuple[dict[int, float], float, float]] = []
    for s in shapes:
        n = per_shape[s] * scale
        eqs.append(({col[(s, t)]: 1.0 for t in texts if (s, t) in col}, n, 0.005 * n + 1))
        here = [t for t in texts if (s, t) in col]
        if not here:
            continue
        # besides its labels, one made-up label shared by the statements most like the shape: few labels (a busy
        # host's processlist named 13 of 5,200 executions) then leave a proportion open instead of settling it, and a
        # shape none names goes to the statements that explain it rather than to any that fits
        fewest = min(unlikeness[(s, t)] for t in here)
        likest = [t for t in here if unlikeness[(s, t)] == fewest]
        one = sum(prior[s].values()) / named_in[s] if named_in[s] else 1.0
        weights = {t: prior[s][t] + (one / len(likest) if t in likest else 0.0) for t in here}
        total = sum(weights.values())
        labels = named_in[s] + 1
        for t in here:
            p = weights[t] / total
            # a proportion from k labelled executions is known to about sqrt(p(1-p)/k)
            sd = n * math.sqrt(max(p * (1 - p), 0.05) / labels)
            eqs.append(({col[(s, t)]: 1.0}, n * p, sd + 1))
    by_command: dict[str, list[int]] = defaultdict(list)
    for (s, t), i in col.items():
        name = COMMAND.get(first_word(t))
        if name:
            by_command[name].append(i)
    for name, idx in by_command.items():
        if name in counters:
            n = max(0, counters[name] - texted[name])
            eqs.append(({i: 1.0 for i in idx}, n, 0.005 * n + 1))
    affected = {s: sum(e.affected for e in executions if e.shape == s) / per_shape[s] for s in shapes}
    for table, counts in tables.items():
        lock_r: dict[int, float] = {}
        lock_w: dict[int, float] = {}
        rowed: dict[str, dict[int, float]] = {"ins": {}, "upd": {}, "del": {}}
        for (s, t), i in col.items():
            if table not in tables_of(t):
                continue
            rows = affected[s]
            word = first_word(t)
            (lock_w if kinds[t] == "write" else lock_r)[i] = 1.0
            row_key = _ROW_COUNTER.get(word)
            if row_key:
                rowed[row_key][i] = rows
        for coef, key in ((lock_r, "r"), (lock_w, "w"), *((c, k) for k, c in rowed.items())):
            if coef and key in counts:
                n = max(0, counts[key] - texted_tables[(table, key)])
                eqs.append((coef, float(n), 0.01 * n + 1))
    a = np.zeros((len(eqs), len(pairs)))
    b = np.zeros(len(eqs))
    for k, (coef, target, sd) in enumerate(eqs):
        for i, c in coef.items():
            a[k, i] = c / sd
        b[k] = target / sd
    lo = np.array([known[p] * scale for p in pairs], dtype=float)
    hi = np.array([per_shape[s] * scale for s, _t in pairs], dtype=float)
    lo = np.minimum(lo, hi)
    x = lsq_linear(a, b, bounds=(lo, hi + 1e-9)).x
    sums = {s: _Sums() for s in shapes}
    for e in executions:
        sums[e.shape].add(e)
    out: dict[str, list[float]] = {}
    given: dict[Shape, dict[str, float]] = defaultdict(dict)
    for (s, t), v in zip(pairs, x, strict=True):
        given[s][t] = v
        got, acc = sums[s], out.setdefault(t, [0.0] * 5)
        caught, typical = timed[(s, t)], SHOWN_LONGER_MS
        acc[0] += v
        # the mean of executions caught in proportion to their (padded) time: their padded harmonic mean
        acc[1] += v * (len(caught) / sum(1 / (d + typical) for d in caught) - typical if len(caught) >= 3
                       else got.ms / got.n)
        acc[2] += v * got.sent / got.n
        acc[3] += v * got.affected / got.n
        acc[4] += v * got.examined / got.n
    sole = {s: t for s, ran in given.items() for t, v in ran.items() if v >= SOLE_SHARE * per_shape[s] * scale}
    unsure = []
    for s, ran in given.items():
        shared = tuple(sorted(t for t, v in ran.items() if v >= (1 - SOLE_SHARE) * per_shape[s] * scale))
        if len(shared) > 1 and named_in[s] < UNSURE_LABELS:
            unsure.append((shared, named_in[s]))
    return Fitted([Attributed(t, *v) for t, v in out.items() if round(v[0]) > 0], sole, unsure)


@dataclass(slots=True)
class _Sums:
    n: int = 0
    ms: float = 0.0
    sent: int = 0
    affected: int = 0
    examined: int = 0

    def add(self, e: Execution) -> None:
        self.n += 1
        self.ms += e.ms
        self.sent += e.sent
        self.affected += e.affected
        self.examined += e.examined


