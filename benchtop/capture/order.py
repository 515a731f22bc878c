"""The order statements run in within a transaction, and the values one
statement takes from an earlier one in the same transaction, derived from
statements the server showed inside transactions: whole transactions from
MySQL/MariaDB's events_statements_history_long (a thread's statements
between BEGIN and COMMIT, in EVENT_ID order), parts of them from
PostgreSQL's pg_stat_activity (a pid's statements under one xact_start)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from benchtop.capture.model import Order, Same, Statement
from benchtop.capture.normalize import main_table, tokens

# a statement seen in fewer transactions than this gets no place in the order
MIN_TRANSACTIONS = 3
# a placeholder takes an earlier one's value when the two were equal in this share of the transactions seen
# holding both statements once each, at least MIN_PAIRS of them (PostgreSQL's pg_stat_activity, sampled,
# shows two given statements of one transaction in a few: in 20 s of pgbench at 100/s, 35 to 57 ordered
# transactions, a shared value seen in 2 or 3 of them or none)...
SAME_SHARE = 0.9
MIN_PAIRS = 2
# ... and values drawn independently (as often as each was seen) would be that often equal with at most this
# probability over all the pairs of placeholders judged (each judged at CHANCE over their number): a constant
# (sysbench's `k = k + 1`) or a column of a few values seen equal a few times shares nothing
CHANCE = 0.01
# two statements each seen in at least MIN_TRANSACTIONS whole transactions and never in the same one, though drawn
# independently they would have met in this many: alternatives, one of them per transaction (sysbench runs its point
# selects on one table a transaction, the table drawn each time)
ALTERNATIVE_MEETINGS = 5.0
ALTERNATIVE_STRAYS = 0.05


@dataclass(frozen=True, slots=True)
class Seen:
    """One statement seen inside a transaction: `txn` names the transaction
    (the same for all of its statements), `at` where in it the statement
    started (its place from the BEGIN, or milliseconds since the transaction
    began), `key` the statement's and `values` its literals in placeholder order."""

    txn: str
    at: float
    key: str
    values: tuple[str, ...] = ()


def derive(seen: list[Seen], statements: dict[str, Statement], source: str, whole: bool = False) -> Order | None:
    """The order of the statements of `statements` (by key) that were seen in
    at least MIN_TRANSACTIONS transactions, and the values they share; None
    when no statement was seen that often.  Where `whole` (each transaction
    seen with all its statements), also the statements that are alternatives.

    >>> s = {k: Statement(k, "write", 9, 1.0) for k in ("a", "b")}
    >>> seen = [Seen(f"t{i}", at, k) for i in range(3) for at, k in ((0.2, "b"), (0.1, "a"))]
    >>> derive(seen, s, "x").statements
    ('a', 'b')
    >>> derive(seen[:4], s, "x") is None
    True
    """
    by_txn: dict[str, list[Seen]] = defaultdict(list)
    for x in seen:
        if x.key in statements:
            by_txn[x.txn].append(x)
    firsts = {txn: _firsts(items) for txn, items in by_txn.items()}
    counts = Counter(k for f in firsts.values() for k in f)
    keys = [k for k, n in counts.items() if n >= MIN_TRANSACTIONS]
    if not keys:
        return None
    order = _ranked(keys, list(firsts.values()))
    pairs = _pairs(order, by_txn, statements)
    shared = _shared(order, pairs, statements)
    shared += _read_back(order, pairs, statements, shared)
    alternatives = _alternatives(order, list(firsts.values())) if whole else _alike(order, statements)
    return Order(source, len(by_txn), tuple(statements[k].text for k in order), shared,
                 tuple(tuple(statements[k].text for k in g) for g in alternatives))


def _alternatives(order: list[str], txns: list[dict[str, float]]) -> tuple[tuple[str, ...], ...]:
    """Groups of statements of which each transaction ran one at most (by
    ALTERNATIVE_MEETINGS), in `order`.

    >>> txns = [{"a": 1, "c": 3}, {"b": 1, "c": 2}] * 10
    >>> _alternatives(["a", "b", "c"], txns)
    (('a', 'b'),)
    >>> _alternatives(["a", "b", "c"], txns[:8])
    ()
    """
    held = Counter(k for t in txns for k in t)
    groups: list[list[str]] = []
    for k in order:
        for g in groups:
            if all(_apart(k, m, txns, held) for m in g):
                g.append(k)
                break
        else:
            groups.append([k])
    return tuple(tuple(g) for g in groups if len(g) > 1)


def _alike(order: list[str], statements: dict[str, Statement]) -> tuple[tuple[str, ...], ...]:
    """Where transactions are seen in part (prepared statements, samples),
    whether two statements ran in one is unknown: statements the same but for
    their table are assumed to be alternatives, a table drawn each
    transaction (sysbench's, tables split by tenant or by date).

    >>> s = {k: Statement(k, "read", 9, 1.0) for k in ("SELECT c FROM t1 WHERE id=?", "SELECT c FROM t2 WHERE id=?",
    ...                                                "SELECT d FROM t3 WHERE id=?")}
    >>> _alike(list(s), s)
    (('SELECT c FROM t1 WHERE id=?', 'SELECT c FROM t2 WHERE id=?'),)
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    for k in order:
        toks = tokens(statements[k].text)
        table = main_table(toks)
        if table:
            form = tuple("\0" if t.kind in ("ident", "qident") and t.name == table else t.text.lower() for t in toks)
            groups.setdefault(form, []).append(k)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


def _apart(a: str, b: str, txns: list[dict[str, float]], held: Counter[str]) -> bool:
    meetings = held[a] * held[b] / len(txns)
    # a transaction whose COMMIT the history lost joins the next one: a few meetings are that
    together = sum(1 for t in txns if a in t and b in t)
    return (min(held[a], held[b]) >= MIN_TRANSACTIONS and meetings >= ALTERNATIVE_MEETINGS
            and together <= ALTERNATIVE_STRAYS * meetings)


def _firsts(items: list[Seen]) -> dict[str, float]:
    """Where each statement of one transaction was first seen."""
    out: dict[str, float] = {}
    for x in items:
        out[x.key] = min(out.get(x.key, x.at), x.at)
    return out


def _ranked(keys: list[str], txns: list[dict[str, float]]) -> list[str]:
    """The keys by how many others they come before: of two statements seen
    in the same transactions, the one first in most of them; of two never seen
    together, the one seen earliest in its transaction (a Copeland ranking,
    ties by earliest place).  Earliest, not the median: a statement waiting
    on a lock delays every later one of its transaction, so a statement seen
    in slow transactions has late places, but none earlier than its own.

    >>> _ranked(["c", "a", "b"], [{"a": 1, "b": 2}, {"b": 0.5, "c": 9}, {"a": 3, "c": 4}, {"a": 5, "b": 6}])
    ['a', 'b', 'c']
    >>> _ranked(["b", "a"], [{"a": 0.1}, {"a": 9.0}, {"a": 8.0}, {"b": 0.2}, {"b": 0.3}])
    ['a', 'b']
    """
    earliest = {k: min(t[k] for t in txns if k in t) for k in keys}
    before: Counter[tuple[str, str]] = Counter()
    for t in txns:
        here = [k for k in keys if k in t]
        for a in here:
            for b in here:
                if t[a] < t[b]:
                    before[(a, b)] += 1
    wins: dict[str, float] = {}
    for a in keys:
        score = 0.0
        for b in keys:
            if a == b:
                continue
            ab, ba = before[(a, b)], before[(b, a)]
            if ab + ba == 0:
                ab, ba = int(earliest[a] < earliest[b]), int(earliest[b] < earliest[a])
            score += 1.0 if ab > ba else (0.5 if ab == ba else 0.0)
        wins[a] = score
    return sorted(keys, key=lambda k: (-wins[k], earliest[k]))


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Over the transactions seen holding both statements once each, keyed
    (later statement, its placeholder, earlier statement, its placeholder):
    how many held them, how many of those with the two values equal, and
    the values each placeholder took in them."""

    held: Counter[tuple[str, int, str, int]]
    equal: Counter[tuple[str, int, str, int]]
    values: dict[tuple[str, int], Counter[str]]


def _pairs(order: list[str], by_txn: dict[str, list[Seen]], statements: dict[str, Statement]) -> _Pairs:
    place = {k: i for i, k in enumerate(order)}
    arity = {k: len(statements[k].placeholders) for k in order}
    out = _Pairs(Counter(), Counter(), defaultdict(Counter))
    for items in by_txn.values():
        once = Counter(x.key for x in items)
        whole = [x for x in items if x.key in place and once[x.key] == 1 and arity[x.key] and
                 len(x.values) == arity[x.key]]
        whole.sort(key=lambda x: place[x.key])
        for x in whole:
            for i, v in enumerate(x.values):
                out.values[(x.key, i)][v] += 1
        for n, b in enumerate(whole):
            for a in whole[:n]:
                for q, vb in enumerate(b.values):
                    for p, va in enumerate(a.values):
                        out.held[(b.key, q, a.key, p)] += 1
                        out.equal[(b.key, q, a.key, p)] += va == vb
    return out


def _shared(order: list[str], pairs: _Pairs, statements: dict[str, Statement]) -> tuple[Same, ...]:
    """For each placeholder of a statement, the earliest statement's
    placeholder (in `order`) whose value it took in the same transaction, by
    the rules above (SAME_SHARE, MIN_PAIRS, CHANCE), followed back to the
    first statement that took that value."""
    place = {k: i for i, k in enumerate(order)}
    found: dict[tuple[str, int], tuple[str, int, int, int]] = {}
    judged = sum(1 for n in pairs.held.values() if n >= MIN_PAIRS) or 1
    for (bk, q, ak, p), n in sorted(pairs.held.items(), key=lambda kv: (place[kv[0][0]], kv[0][1], place[kv[0][2]])):
        e = pairs.equal[(bk, q, ak, p)]
        if (bk, q) in found or n < MIN_PAIRS or e < SAME_SHARE * n:
            continue
        if _chance(pairs.values[(ak, p)], pairs.values[(bk, q)]) ** e > CHANCE / judged:
            continue
        root = found.get((ak, p))
        found[(bk, q)] = (root[0], root[1], e, n) if root else (ak, p, e, n)
    return tuple(Same(statements[bk].text, q, statements[ak].text, p, e, n)
                 for (bk, q), (ak, p, e, n) in sorted(found.items(), key=lambda kv: (place[kv[0][0]], kv[0][1])))


def _read_back(order: list[str], pairs: _Pairs, statements: dict[str, Statement],
               shared: tuple[Same, ...]) -> tuple[Same, ...]:
    """A SELECT's key placeholder assumed to take the key an earlier UPDATE
    of the same table wrote by the same column (the row read back, as
    pgbench's SELECT of the account it just updated), when no value showed
    whether it does: prepared statements show none, and pg_stat_activity,
    sampled, rarely shows the two in one transaction.  Reading another row
    than the one just written costs the server more (2x the mean time of
    pgbench's SELECT, in 4 of 5 captures that saw too few of them); one
    transaction seen holding both with different keys rules it out.  Marked
    `equal == of == 0`."""
    taken = {(x.statement, x.index) for x in shared}
    roots = {(x.statement, x.index): (x.source, x.source_index) for x in shared}
    out = []
    for n, bk in enumerate(order):
        b = statements[bk]
        if b.kind != "read":
            continue
        for ph in b.placeholders:
            if ph.role != "eq" or ph.column is None or (bk, ph.index) in taken:
                continue
            source = next(((ak, q.index) for ak in reversed(order[:n])
                           if statements[ak].text.lstrip().upper().startswith("UPDATE")
                           for q in statements[ak].placeholders
                           if q.role == "eq" and q.column is not None and
                           (q.column.table, q.column.name) == (ph.column.table, ph.column.name)), None)
            if source is None:
                continue
            key = (bk, ph.index, *source)
            if pairs.held[key] > pairs.equal[key]:  # seen reading another row
                continue
            ak, q = roots.get(source, source)
            out.append(Same(b.text, ph.index, statements[ak].text, q, 0, 0))
    return tuple(out)


def _chance(a: Counter[str], b: Counter[str]) -> float:
    """How often a value drawn as `a`'s were and one drawn as `b`'s were are equal.

    >>> _chance(Counter({"1": 4}), Counter({"1": 2})), _chance(Counter({"1": 1, "2": 1}), Counter({"1": 1, "2": 1}))
    (1.0, 0.5)
    """
    na, nb = sum(a.values()), sum(b.values())
    if not na or not nb:
        return 1.0
    return sum(n * b[v] for v, n in a.items()) / (na * nb)
