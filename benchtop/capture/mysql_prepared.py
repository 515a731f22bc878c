"""MariaDB's executions of prepared statements (the binary protocol), which
no digest counts.  What the server does keep, read with SELECTs only:

- the long statement history records each execution (statement/com/Execute)
  with its time and rows but no text: its shape (rows sent, affected and
  examined, ranges, sorts, temporary tables) groups them;
- information_schema.PROCESSLIST shows a running execution's text (with its
  `?`): sampled often, joined with events_statements_current, it names
  executions of the history one by one (a label);
- the status counters (Com_select, Com_update, Com_begin, ...) count every
  execution by its command, and performance_schema's per-table lock and row
  counters count the statements and rows on each table.

Each shape's executions are shared among the texts that could have run them
by a non-negative least-squares fit: the counters and per-table counts as
near-exact constraints, the labels' proportions as a prior.  A label names
its execution alone: executions of one shape back to back on a thread may
be different statements (sysbench's UPDATE of k, UPDATE of c and DELETE
touch a row each, one after another)."""

from __future__ import annotations

import bisect
import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import lsq_linear

from benchtop.capture.order import Seen
from benchtop.capture.normalize import literal_spans, literal_values, split_at_placeholders, statement_kind, tokens

Rows = Callable[..., list[dict[str, Any]]]

_HISTORY = (
    "SELECT THREAD_ID AS thread, EVENT_ID AS event, CURRENT_SCHEMA AS db, TIMER_START AS start, TIMER_WAIT AS ps, "
    "ROWS_SENT AS sent, "
    "ROWS_AFFECTED AS affected, ROWS_EXAMINED AS examined, SELECT_RANGE AS srange, SELECT_SCAN AS scan, "
    "SORT_ROWS AS sorted, CREATED_TMP_TABLES AS tmp FROM performance_schema.events_statements_history_long "
    "WHERE EVENT_NAME = 'statement/com/Execute' AND END_EVENT_ID IS NOT NULL"
)
# performance_schema.threads shows no text for an execution on MariaDB; the processlist does, with how long it has
# run (TIME_MS, to the microsecond).  Joined with events_statements_current it names the wrong execution as often as
# not (a thread's next statement starts within microseconds), so a label is placed by time instead: the capture's own
# row of the same reading ties the processlist's clock to performance_schema's (its statement's TIMER_START)
_RUNNING = (
    "SELECT p.ID AS id, p.TIME_MS AS ms, p.INFO AS text, (SELECT s.TIMER_START FROM "
    "performance_schema.events_statements_current s WHERE s.THREAD_ID = %s) AS own FROM information_schema.PROCESSLIST p "
    "WHERE (p.COMMAND = 'Execute' AND p.INFO IS NOT NULL AND p.DB {where}) OR p.ID = CONNECTION_ID()"
)
_ME = ("SELECT THREAD_ID AS thread, PROCESSLIST_ID AS id FROM performance_schema.threads "
       "WHERE PROCESSLIST_ID = CONNECTION_ID()")
_THREADS = ("SELECT PROCESSLIST_ID AS id, THREAD_ID AS thread FROM performance_schema.threads "
            "WHERE PROCESSLIST_ID IS NOT NULL")
# a label's start and its execution's differ by a few microseconds (the server stamps them at two points of its
# dispatch); the next statement of a thread starts a round trip later
LABEL_WITHIN_PS = 30_000_000
SHOWN_LONGER_MS = 0.01
LABEL_APART_PS = 15_000_000
_INSTANCES = ("SELECT DISTINCT i.SQL_TEXT AS text FROM performance_schema.prepared_statements_instances i "
              "JOIN performance_schema.threads t ON t.THREAD_ID = i.OWNER_THREAD_ID WHERE i.SQL_TEXT IS NOT NULL")
_COUNTERS = ("SELECT VARIABLE_NAME AS name, VARIABLE_VALUE AS value FROM information_schema.GLOBAL_STATUS "
             "WHERE VARIABLE_NAME IN ('COM_SELECT', 'COM_INSERT', 'COM_UPDATE', 'COM_DELETE', 'COM_REPLACE', "
             "'COM_BEGIN', 'COM_COMMIT', 'COM_ROLLBACK', 'COM_STMT_EXECUTE')")
_DIGESTED = ("SELECT DIGEST_TEXT AS text, COUNT_STAR AS calls, SCHEMA_NAME AS db, SUM_ROWS_AFFECTED AS affected "
             "FROM performance_schema.events_statements_summary_by_digest WHERE DIGEST_TEXT IS NOT NULL")
_TABLES = (
    "SELECT l.OBJECT_NAME AS tbl, l.COUNT_READ_EXTERNAL AS r, l.COUNT_WRITE_EXTERNAL AS w, "
    "i.COUNT_INSERT AS ins, i.COUNT_UPDATE AS upd, i.COUNT_DELETE AS del "
    "FROM performance_schema.table_lock_waits_summary_by_table l JOIN performance_schema.table_io_waits_summary_by_table i "
    "ON i.OBJECT_SCHEMA = l.OBJECT_SCHEMA AND i.OBJECT_NAME = l.OBJECT_NAME WHERE l.OBJECT_SCHEMA = %s"
)
# a label poll (about a millisecond of the server's time) every this many seconds for most of each of the
# capture's sample intervals: a 20 s window of sysbench at 100 transactions a second names about 300 executions
LABEL_EVERY_S = 0.002
LABEL_FOR_S = 0.09
_HISTORY_EVERY_S = 1.0
_ROW_COUNTER = {"insert": "ins", "replace": "ins", "update": "upd", "delete": "del"}
_RANGE_WORDS = {"between", "<", ">", "<=", ">=", "in", "like", "or"}
_AGGREGATES = {"sum", "count", "min", "max", "avg"}
# what a command counter counts, by the statement's first word
_COMMAND = {"select": "Com_select", "insert": "Com_insert", "update": "Com_update", "delete": "Com_delete",
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
        words = {t.text.lower() for t in tokens(text) if t.kind in ("ident", "op")}
        if self.ranged and not words & _RANGE_WORDS:
            return False
        if self.sorted and not words & {"order", "group", "distinct", "distinctrow"}:
            return False
        if self.tmp and not words & {"group", "distinct", "distinctrow", "union"}:
            return False
        return not (self.sent > 1 and words & _AGGREGATES and "group" not in words)


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
class Attributed:
    """A prepared statement's executions over the window, as fitted."""

    text: str
    calls: float
    total_ms: float
    rows_sent: float
    rows_affected: float
    rows_examined: float


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


class PreparedExecutions:
    """Watches one schema's prepared executions over a window (`start`,
    `sample` while it lasts, `attribute` at its end)."""

    def __init__(self, rows: Rows, schema: str, clock: Callable[[], float] = time.monotonic,
                 wait: Callable[[float], None] = time.sleep) -> None:
        self._rows = rows
        self.schema = schema
        self._clock, self._wait = clock, wait
        self._before: dict[int, int] = {}
        self._executions: dict[tuple[int, int], Execution] = {}
        # executions of other schemas' clients: counted once, for the server-wide execute counter
        self._elsewhere: set[tuple[int, int]] = set()
        self._me = self._my_id = 0
        self._labels: list[tuple[int, float, str, tuple[str, ...]]] = []
        self._threads: dict[int, int] = {}
        self._texts: set[str] = set()
        self._patterns: list[tuple[str, re.Pattern[str]]] = []
        self._counters: dict[str, int] = {}
        self._digested: dict[tuple[str, str], tuple[int, int]] = {}
        self._tables: dict[str, dict[str, int]] = {}
        self._last_history = 0.0
        self.notes: list[str] = []
        # (text, its values) of executions the processlist showed with their values in place
        self.values: list[tuple[str, list[str]]] = []
        # the named executions inside transactions, in each one's order (read after attribute)
        self.in_transactions: list[Seen] = []

    def start(self) -> None:
        me = self._rows(_ME)[0]
        self._me, self._my_id = int(me["thread"]), int(me["id"])
        self._read_threads()
        self._read_instances()
        for r in self._rows(_HISTORY):
            t = int(r["thread"])
            self._before[t] = max(self._before.get(t, 0), int(r["event"]))
        self._counters = self._read_counters()
        self._digested = self._read_digested()
        self._tables = self._read_tables()
        self._last_history = self._clock()

    def sample(self) -> None:
        """The history once a second; labels for a little while once it has
        shown prepared executions in this schema."""
        if self._clock() - self._last_history >= _HISTORY_EVERY_S:
            self._read_history()
        if not self._executions:
            return
        end = self._clock() + LABEL_FOR_S
        while True:
            self._label()
            if self._clock() + LABEL_EVERY_S > end:
                break
            self._wait(LABEL_EVERY_S)

    def _label(self) -> None:
        if self.schema:
            rows = self._rows(_RUNNING.format(where="= %s"), (self._me, self.schema))
        else:
            rows = self._rows(_RUNNING.format(where="IS NOT NULL"), (self._me,))
        mine = [r for r in rows if int(r["id"]) == self._my_id and r["own"] is not None]
        if not mine:
            return
        read_at = int(mine[0]["own"]) + float(mine[0]["ms"]) * 1e9
        for r in rows:
            if int(r["id"]) != self._my_id:
                text, values = _unexpanded(str(r["text"]), self._patterns)
                self._labels.append((int(r["id"]), read_at - float(r["ms"]) * 1e9, text, tuple(values)))
                if values:
                    self.values.append((text, values))

    def _read_instances(self) -> None:
        """The texts prepared on the server's connections now."""
        for r in self._rows(_INSTANCES):
            text = " ".join(str(r["text"]).split())
            if text not in self._texts:
                self._texts.add(text)
                self._patterns.append((text, _pattern(text)))

    def _read_threads(self) -> None:
        self._threads.update({int(r["id"]): int(r["thread"]) for r in self._rows(_THREADS)})

    def _read_history(self) -> None:
        self._last_history = self._clock()
        self._read_threads()
        self._read_instances()
        self._read_instances()
        for r in self._rows(_HISTORY):
            key = (int(r["thread"]), int(r["event"]))
            if key[1] <= self._before.get(key[0], 0) or key in self._executions:
                continue
            if self.schema and r["db"] != self.schema:
                self._elsewhere.add(key)
                continue
            self._executions[key] = Execution(key[0], key[1], int(r["start"] or 0), Shape.of(r), int(r["ps"] or 0) / 1e9,
                                              int(r["sent"] or 0), int(r["affected"] or 0), int(r["examined"] or 0))

    def _read_counters(self) -> dict[str, int]:
        return {str(r["name"]).capitalize(): int(r["value"]) for r in self._rows(_COUNTERS)}

    def _read_digested(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Digested statements of every schema (the command counters are the
        server's): calls and rows affected by (schema, text)."""
        return {(str(r["db"]), str(r["text"])): (int(r["calls"] or 0), int(r["affected"] or 0))
                for r in self._rows(_DIGESTED)}

    def _read_tables(self) -> dict[str, dict[str, int]]:
        if not self.schema:
            return {}
        return {str(r["tbl"]): {k: int(r[k] or 0) for k in ("r", "w", "ins", "upd", "del")}
                for r in self._rows(_TABLES, (self.schema,))}

    def attribute(self) -> list[Attributed]:
        """The window's executions shared among the texts seen prepared."""
        self._read_history()
        counters = _minus(self._read_counters(), self._counters)
        digested = _digested_minus(self._read_digested(), self._digested)
        tables = {t: _minus(v, self._tables.get(t, {})) for t, v in self._read_tables().items()}
        self._read_instances()
        executions = sorted(self._executions.values(), key=lambda e: (e.thread, e.event))
        executes = counters.get("Com_stmt_execute", 0)
        seen = len(executions) + len(self._elsewhere)
        if not executions:
            return []
        # the history keeps the server's last 10,000 statements: a busy server may have dropped some between reads
        scale = executes / seen if executes > seen else 1.0
        placed = _placed(self._labels, self._threads, executions)
        labelled = {key: text for key, (text, _v) in placed.items()}
        self.in_transactions = _transactions(executions, placed)
        texts = sorted(set(labelled.values()) | self._texts)
        commands, per_table = _text_counts(digested, self.schema)
        fit = _fit(executions, labelled, texts, scale, counters, commands, tables, per_table)
        named = sum(1 for key in labelled)
        self.notes.append(
            f"{round(len(executions) * scale)} executions of prepared statements (binary protocol), in no digest: "
            f"shared among {len(fit)} statements by their rows and reads, {named} of them named by the processlist "
            "while they ran, and by the server's command counters and per-table counts")
        if not named:
            self.notes.append("no running execution was named: the processlist shows other sessions' statements only "
                              "to a user with the PROCESS privilege; statements of one shape are shared evenly")
        if scale > 1.0:
            self.notes.append(f"the statement history dropped {1 - 1 / scale:.0%} of the executions between reads: "
                              "the rest stand for them")
        return fit


def _placed(labels: list[tuple[int, float, str, tuple[str, ...]]], threads: dict[int, int],
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


def _pattern(text: str) -> re.Pattern[str]:
    """What the text prepared as `text` looks like with its values in place."""
    pieces = split_at_placeholders(text)
    return re.compile(r"\s*" + _VALUE.join(r"\s*".join(re.escape(w) for w in p.split()) for p in pieces) + r"\s*;?\s*$",
                      re.S)


def _unexpanded(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> tuple[str, list[str]]:
    """A running execution's text as prepared, and the values it shows: the
    processlist shows the text with its `?`, or, while the server logs
    statements (general or slow log), with the values in place: the prepared
    text it fits, else its constants made `?`.

    >>> _unexpanded("SELECT c FROM t WHERE id=?", [])
    ('SELECT c FROM t WHERE id=?', [])
    >>> known = "UPDATE t SET k=k+1 WHERE id=?"
    >>> _unexpanded("UPDATE t SET k=k+1 WHERE id=5043", [(known, _pattern(known))])
    ('UPDATE t SET k=k+1 WHERE id=?', ['5043'])
    >>> _unexpanded("DELETE  FROM t WHERE id=5043", [(known, _pattern(known))])
    ('DELETE FROM t WHERE id=?', ['5043'])
    >>> rng = "SELECT c FROM t WHERE id BETWEEN ? AND ?"
    >>> _unexpanded("SELECT c FROM t WHERE id BETWEEN 5 AND 104 ORDER BY c", [(rng, _pattern(rng))])[0]
    'SELECT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c'
    >>> _unexpanded("UPDATE t SET c='a''b' WHERE id=7", [("UPDATE t SET c=? WHERE id=?", _pattern("UPDATE t SET c=? WHERE id=?"))])
    ('UPDATE t SET c=? WHERE id=?', ["a'b", '7'])
    """
    text = " ".join(text.split())
    if any(t.kind == "ph" for t in tokens(text)):
        return text, []
    for known, pattern in patterns:
        m = pattern.match(text)
        if m:
            return known, [literal_values(v)[0] if literal_values(v) else v for v in m.groups()]
    values = literal_values(text)
    for a, b in reversed(literal_spans(text)):
        text = text[:a] + "?" + text[b:]
    return text, values


def _transactions(executions: list[Execution],
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


def _minus(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items()}


def _digested_minus(after: dict[tuple[str, str], tuple[int, int]],
                    before: dict[tuple[str, str], tuple[int, int]]) -> dict[tuple[str, str], tuple[int, int]]:
    out = {}
    for key, (calls, affected) in after.items():
        c0, a0 = before.get(key, (0, 0))
        if calls < c0:
            c0, a0 = 0, 0
        if calls > c0:
            out[key] = (calls - c0, affected - a0)
    return out


def _text_counts(digested: dict[tuple[str, str], tuple[int, int]], schema: str) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """What the text protocol's statements add to the command counters, and
    (in `schema`) to each table's locks ("r", "w") and row counters."""
    commands: Counter[str] = Counter()
    per_table: Counter[tuple[str, str]] = Counter()
    for (db, text), (calls, affected) in digested.items():
        word = first_word(text)
        if word in _COMMAND:
            commands[_COMMAND[word]] += calls
        if db != schema:
            continue
        kind = statement_kind(text)
        for table in tables_of(text):
            per_table[(table, "w" if kind == "write" else "r")] += calls
            row_key = _ROW_COUNTER.get(word)
            if row_key:
                per_table[(table, row_key)] += affected
    return commands, per_table


def _fit(executions: list[Execution], labelled: dict[tuple[int, int], str],
         texts: list[str], scale: float, counters: dict[str, int], texted: Counter[str],
         tables: dict[str, dict[str, int]], texted_tables: Counter[tuple[str, str]]) -> list[Attributed]:
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
    for e in executions:
        text = labelled.get((e.thread, e.event))
        if text is None or not e.shape.fits(text):
            continue
        prior[e.shape][text] += 1 / (e.ms + SHOWN_LONGER_MS)
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
        return []
    col = {p: i for i, p in enumerate(pairs)}
    eqs: list[tuple[dict[int, float], float, float]] = []
    for s in shapes:
        n = per_shape[s] * scale
        eqs.append(({col[(s, t)]: 1.0 for t in texts if (s, t) in col}, n, 0.005 * n + 1))
        total = sum(prior[s].values())
        labels = named_in[s]
        for t in texts:
            if (s, t) not in col:
                continue
            p = prior[s][t] / total if total else 1.0 / max(1, sum(1 for tt in texts if (s, tt) in col))
            # a proportion from k labelled executions is known to about sqrt(p(1-p)/k); unlabelled: hardly at all
            sd = n * math.sqrt(max(p * (1 - p), 0.05) / labels) if labels else n
            eqs.append(({col[(s, t)]: 1.0}, n * p, sd + 1))
    by_command: dict[str, list[int]] = defaultdict(list)
    for (s, t), i in col.items():
        name = _COMMAND.get(first_word(t))
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
    for (s, t), v in zip(pairs, x, strict=True):
        got, acc = sums[s], out.setdefault(t, [0.0] * 5)
        caught, typical = timed[(s, t)], SHOWN_LONGER_MS
        acc[0] += v
        # the mean of executions caught in proportion to their (padded) time: their padded harmonic mean
        acc[1] += v * (len(caught) / sum(1 / (d + typical) for d in caught) - typical if len(caught) >= 3
                       else got.ms / got.n)
        acc[2] += v * got.sent / got.n
        acc[3] += v * got.affected / got.n
        acc[4] += v * got.examined / got.n
    return [Attributed(t, *v) for t, v in out.items() if round(v[0]) > 0]


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


