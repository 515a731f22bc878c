"""MariaDB's executions of prepared statements (the binary protocol), which
no digest counts, read with SELECTs only:

- the long statement history records each execution (statement/com/Execute)
  with its time and rows but no text;
- information_schema.PROCESSLIST shows a running execution's text (with its
  `?`, or its values while the server logs statements): polled often, each
  names an execution of the history (a label);
- the status counters (Com_select, Com_update, Com_begin, ...) count every
  execution by its command, and performance_schema's per-table lock and row
  counters count the statements and rows on each table.

benchtop.capture.prepared_shares shares the executions among their texts."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from benchtop.capture.order import Seen
from benchtop.capture.prepared_shares import (Attributed, Execution, Shape, fit, pattern, placed, text_counts,
                                              transactions, unexpanded)
from benchtop.capture.window import Totals

Rows = Callable[..., list[dict[str, Any]]]

# an execution of a prepared statement as the long history records it (no text, no digest); the reader that owns
# this one reads them with the text protocol's statements in one pass over the history (MySQLReader.samples)
EXECUTION_COLUMNS = (
    "CURRENT_SCHEMA AS db, TIMER_START AS start, TIMER_WAIT AS ps, ROWS_SENT AS sent, ROWS_AFFECTED AS affected, "
    "ROWS_EXAMINED AS examined, SELECT_RANGE AS srange, SELECT_SCAN AS scan, SORT_ROWS AS sorted, "
    "CREATED_TMP_TABLES AS tmp"
)
IS_EXECUTION = "EVENT_NAME = 'statement/com/Execute' AND END_EVENT_ID IS NOT NULL"
_HISTORY = (f"SELECT THREAD_ID AS thread, EVENT_ID AS event, {EXECUTION_COLUMNS} "
            f"FROM performance_schema.events_statements_history_long WHERE {IS_EXECUTION}")
# performance_schema.threads shows no text for an execution on MariaDB; the processlist does, with how long it has
# run (TIME_MS, to the microsecond).  Joined with events_statements_current it names the wrong execution as often as
# not (a thread's next statement starts within microseconds), so a label is placed by time instead: the capture's own
# row of the same reading ties the processlist's clock to performance_schema's (its statement's TIMER_START)
_RUNNING = (
    "SELECT p.ID AS id, p.TIME_MS AS ms, p.INFO AS text, (SELECT s.TIMER_START FROM "
    "performance_schema.events_statements_current s WHERE s.THREAD_ID = %s) AS own "
    "FROM information_schema.PROCESSLIST p "
    "WHERE (p.COMMAND = 'Execute' AND p.INFO IS NOT NULL AND p.DB {where}) OR p.ID = CONNECTION_ID()"
)
_ME = ("SELECT THREAD_ID AS thread, PROCESSLIST_ID AS id FROM performance_schema.threads "
       "WHERE PROCESSLIST_ID = CONNECTION_ID()")
_THREADS = ("SELECT PROCESSLIST_ID AS id, THREAD_ID AS thread FROM performance_schema.threads "
            "WHERE PROCESSLIST_ID IS NOT NULL")
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
    "FROM performance_schema.table_lock_waits_summary_by_table l "
    "JOIN performance_schema.table_io_waits_summary_by_table i "
    "ON i.OBJECT_SCHEMA = l.OBJECT_SCHEMA AND i.OBJECT_NAME = l.OBJECT_NAME WHERE l.OBJECT_SCHEMA = %s"
)
# a label poll (0.46 ms of the server's time, measured) every this many seconds for most of each of the capture's
# sample intervals, about 270 a second: a 20 s window of sysbench at 100 transactions a second names about 450
# executions of its 40,000, enough for each statement's share within about 2 points
LABEL_EVERY_S = 0.002
LABEL_FOR_S = 0.09


class PreparedExecutions:
    """Watches one schema's prepared executions over a window (`start`,
    `sample` and `add_history` while it lasts, `attribute` at its end)."""

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
        self._digested: dict[tuple[str, str], Totals] = {}
        self._tables: dict[str, dict[str, int]] = {}
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

    def sample(self) -> None:
        """Labels for a little while, once the history has shown prepared
        executions in this schema."""
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
                text, values = unexpanded(str(r["text"]), self._patterns)
                self._labels.append((int(r["id"]), read_at - float(r["ms"]) * 1e9, text, tuple(values)))
                if values:
                    self.values.append((text, values))

    def _read_instances(self) -> None:
        """The texts prepared on the server's connections now."""
        for r in self._rows(_INSTANCES):
            text = " ".join(str(r["text"]).split())
            if text not in self._texts:
                self._texts.add(text)
                self._patterns.append((text, pattern(text)))

    def _read_threads(self) -> None:
        self._threads.update({int(r["id"]): int(r["thread"]) for r in self._rows(_THREADS)})

    def add_history(self, rows: list[dict[str, Any]]) -> None:
        """Executions of the long history (rows with EXECUTION_COLUMNS, and
        thread and event), each taken once."""
        self._read_threads()
        self._read_instances()
        for r in rows:
            key = (int(r["thread"]), int(r["event"]))
            if key[1] <= self._before.get(key[0], 0) or key in self._executions:
                continue
            if self.schema and r["db"] != self.schema:
                self._elsewhere.add(key)
                continue
            self._executions[key] = Execution(key[0], key[1], int(r["start"] or 0), Shape.of(r),
                                              int(r["ps"] or 0) / 1e9, int(r["sent"] or 0),
                                              int(r["affected"] or 0), int(r["examined"] or 0))

    def _read_counters(self) -> dict[str, int]:
        return {str(r["name"]).capitalize(): int(r["value"]) for r in self._rows(_COUNTERS)}

    def _read_digested(self) -> dict[tuple[str, str], Totals]:
        """Digested statements of every schema (the command counters are the
        server's), by (schema, text): their calls and rows affected."""
        return {(str(r["db"]), str(r["text"])): Totals(str(r["text"]), int(r["calls"] or 0), 0.0,
                                                       rows_affected=int(r["affected"] or 0))
                for r in self._rows(_DIGESTED)}

    def _read_tables(self) -> dict[str, dict[str, int]]:
        if not self.schema:
            return {}
        return {str(r["tbl"]): {k: int(r[k] or 0) for k in ("r", "w", "ins", "upd", "del")}
                for r in self._rows(_TABLES, (self.schema,))}

    def attribute(self) -> list[Attributed]:
        """The window's executions shared among the texts seen prepared."""
        self.add_history(self._rows(_HISTORY))
        counters = _minus(self._read_counters(), self._counters)
        digested = {k: t.minus(self._digested.get(k)) for k, t in self._read_digested().items()}
        tables = {t: _minus(v, self._tables.get(t, {})) for t, v in self._read_tables().items()}
        self._read_instances()
        executions = sorted(self._executions.values(), key=lambda e: (e.thread, e.event))
        executes = counters.get("Com_stmt_execute", 0)
        seen = len(executions) + len(self._elsewhere)
        if not executions:
            return []
        # the history keeps the server's last 10,000 statements: a busy server may have dropped some between reads
        scale = executes / seen if executes > seen else 1.0
        named_at = placed(self._labels, self._threads, executions)
        labelled = {key: text for key, (text, _v) in named_at.items()}
        texts = sorted(set(labelled.values()) | self._texts)
        commands, per_table = text_counts(digested, self.schema)
        fitted = fit(executions, labelled, texts, scale, counters, commands, tables, per_table)
        shares = fitted.statements
        # an execution of a shape only one statement ran is that statement's, named or not: a busy host's
        # processlist names too few executions to place three transactions' statements by their labels alone
        by_shape: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {
            (e.thread, e.event): (fitted.sole[e.shape], ()) for e in executions if e.shape in fitted.sole}
        self.in_transactions = transactions(executions, by_shape | named_at)
        named = len(labelled)
        self.notes.append(
            f"{round(len(executions) * scale)} executions of prepared statements (binary protocol), in no digest: "
            f"shared among {len(shares)} statements by their rows and reads, {named} of them named by the processlist "
            "while they ran, and by the server's command counters and per-table counts")
        if not named:
            self.notes.append("no running execution was named: the processlist shows other sessions' statements only "
                              "to a user with the PROCESS privilege; statements of one shape are shared evenly")
        for alike, labels in fitted.unsure:
            self.notes.append(f"{' and '.join(alike)} ran executions alike (rows and reads): how they share them "
                              f"rests on {labels} executions the processlist named, and is unsure")
        if scale > 1.01:
            self.notes.append(f"the statement history dropped {1 - 1 / scale:.0%} of the executions between reads: "
                              "the rest stand for them")
        return shares


def _minus(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items()}
