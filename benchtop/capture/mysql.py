"""MySQL/MariaDB's statement digests (performance_schema), read with
SELECTs only: nothing is enabled, truncated or reset.  Values come from
events_statements_history_long and events_statements_current when their
consumers are already on; otherwise from the columns' catalogue
(benchtop.capture.mysql_columns).  The long history also shows each
thread's statements in order (EVENT_ID), so those between a BEGIN and its
COMMIT are kept as one transaction's, for the order they run in."""

from __future__ import annotations

import time
from typing import Any

import pymysql

from benchtop.capture.model import CaptureSourceError, Column
from benchtop.capture.mysql_columns import MySQLColumns
from benchtop.capture.mysql_prepared import EXECUTION_COLUMNS, IS_EXECUTION, PreparedExecutions
from benchtop.capture.normalize import literal_values, statement_kind
from benchtop.capture.order import Seen
from benchtop.capture.window import Totals
from benchtop.errors import one_line
from benchtop.target import Target
from benchtop.target.connection import pymysql_kwargs

_SYSTEM = ("mysql", "performance_schema", "information_schema", "sys")
_HISTORY = ("events_statements_history_long", "events_statements_current")
# the long history holds the server's last 10,000 statements (by default): once a second reads most of them
# without reading the whole table twenty times a second
_HISTORY_EVERY_S = 1.0
_TEXTED = "DIGEST IS NOT NULL AND SQL_TEXT IS NOT NULL"
_STATEMENTS = ("SELECT THREAD_ID AS thread, EVENT_ID AS event, DIGEST AS digest, SQL_TEXT AS text "
               f"FROM performance_schema.{{table}} WHERE {_TEXTED} ORDER BY THREAD_ID, EVENT_ID")
# the long history read once for both protocols: the text's statements and the prepared executions
_LONG_HISTORY = (
    f"SELECT THREAD_ID AS thread, EVENT_ID AS event, DIGEST AS digest, SQL_TEXT AS text, {IS_EXECUTION} AS execution, "
    f"{EXECUTION_COLUMNS} FROM performance_schema.events_statements_history_long "
    f"WHERE ({_TEXTED}) OR ({IS_EXECUTION}) ORDER BY THREAD_ID, EVENT_ID"
)
# MariaDB digests no binary-protocol execution: counted here, they say what a capture cannot see
_EXECUTES = ("SELECT COUNT_STAR AS calls FROM performance_schema.events_statements_summary_global_by_event_name "
             "WHERE EVENT_NAME = 'statement/com/Execute'")
_DIGESTS = (
    "SELECT SCHEMA_NAME AS db, DIGEST AS digest, DIGEST_TEXT AS text, COUNT_STAR AS calls, "
    "SUM_TIMER_WAIT AS total_ps, SUM_ROWS_SENT AS rows_sent, SUM_ROWS_AFFECTED AS rows_affected, "
    "SUM_ROWS_EXAMINED AS rows_examined FROM performance_schema.events_statements_summary_by_digest "
    "WHERE DIGEST_TEXT IS NOT NULL AND SCHEMA_NAME {where}"
)


class MySQLReader:
    """Reads one MySQL/MariaDB server. Its connection names no default
    database, so its own statements count under no schema and stay out of
    the captured ones."""

    engine = "mysql"
    order_source = "performance_schema.events_statements_history_long"

    def __init__(self, target: Target, timeout_s: float = 5.0) -> None:
        self.target = target.describe()
        self.schema = target.database or ""
        try:
            self._conn = pymysql.connect(**pymysql_kwargs(target, timeout_s=timeout_s, with_database=False,
                                                          program_name="benchtop-capture"))
        except (pymysql.MySQLError, OSError) as exc:
            raise CaptureSourceError(f"cannot connect to {self.target}: {one_line(exc)}") from None
        self.version = str(self._one("SELECT VERSION() AS v")["v"])
        on = {r["name"] for r in self._rows(
            "SELECT NAME AS name FROM performance_schema.setup_consumers WHERE ENABLED = 'YES'")}
        if "statements_digest" not in on:
            raise CaptureSourceError(f"{self.target}: performance_schema keeps no statement digests "
                                     "(performance_schema=ON and the statements_digest consumer are needed)")
        # the history consumers are filled only while events_statements_current is on too
        self._history = [t for t in _HISTORY if t in on] if "events_statements_current" in on else []
        self.sample_source = (", ".join(f"performance_schema.{t}" for t in self._history) if self._history
                              else "column statistics (no statement history consumer is on)")
        self._last_history = 0.0
        self._executes: list[int] = []
        self._digests: dict[str, str] = {}
        self._seen: set[tuple[int, int]] = set()
        # per thread: the last event of the long history followed, and the transaction open at it
        self._followed: dict[int, int] = {}
        self._open: dict[int, tuple[str, list[Seen]]] = {}
        self._in_txns: list[Seen] = []
        self._columns = MySQLColumns(self._rows, self.schema)
        # prepared statements' executions, shared among their texts from what the history and counters show
        self._prepared = PreparedExecutions(self._rows, self.schema) if len(self._history) == 2 else None
        self._attributed = 0
        self._texted: list[int] = []
        self._started = False

    def _rows(self, sql: str, args: Any = None) -> list[dict[str, Any]]:
        try:
            with self._conn.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except pymysql.MySQLError as exc:
            raise CaptureSourceError(f"{self.target}: {one_line(exc)}") from None

    def _one(self, sql: str, args: Any = None) -> dict[str, Any]:
        rows = self._rows(sql, args)
        return rows[0] if rows else {}

    def totals(self) -> dict[str, Totals]:
        self._executes.append(int(self._one(_EXECUTES).get("calls") or 0))
        if self.schema:
            rows = self._rows(_DIGESTS.format(where="= %s"), (self.schema,))
        else:
            rows = self._rows(_DIGESTS.format(where="NOT IN %s"), (_SYSTEM,))
        out = {}
        for r in rows:
            key = f"{r['db']}/{r['digest']}"
            self._digests[str(r["digest"])] = key
            out[key] = Totals(str(r["text"]), int(r["calls"]), float(r["total_ps"] or 0) / 1e9,
                              int(r["rows_sent"] or 0), int(r["rows_affected"] or 0), int(r["rows_examined"] or 0))
        self._texted.append(sum(t.calls for t in out.values()))
        if self._prepared is not None:
            if not self._started:
                self._prepared.start()
            else:
                for a in self._prepared.attribute():
                    calls = round(a.calls)
                    self._attributed += calls
                    out[f"prepared/{a.text}"] = Totals(a.text, calls, a.total_ms, round(a.rows_sent),
                                                       round(a.rows_affected), round(a.rows_examined))
        self._started = True
        return out

    def samples(self) -> list[tuple[str, list[str]]]:
        out = []
        now = time.monotonic()
        tables = self._history
        if now - self._last_history < _HISTORY_EVERY_S:
            tables = [t for t in tables if t != "events_statements_history_long"]
        else:
            self._last_history = now
        read = {}
        for table in tables:
            if table == "events_statements_history_long":
                rows = self._rows(_LONG_HISTORY)
                if self._prepared is not None:
                    self._prepared.add_history([r for r in rows if r["execution"]])
                read[table] = [r for r in rows if not r["execution"]]
            else:
                read[table] = self._rows(_STATEMENTS.format(table=table))
        if self._prepared is not None:
            self._prepared.sample()
            out += [(f"prepared/{text}", values) for text, values in self._prepared.values]
            self._prepared.values.clear()
        for table, rows in read.items():
            for r in rows:
                mark = (int(r["thread"]), int(r["event"]))
                key = self._digests.get(str(r["digest"]))
                if table == "events_statements_history_long":
                    self._follow(mark, key, str(r["text"]))
                if key is None or mark in self._seen:
                    continue
                self._seen.add(mark)
                out.append((key, literal_values(str(r["text"]))))
        return out

    def _follow(self, mark: tuple[int, int], key: str | None, text: str) -> None:
        """One statement of the long history, in its thread's order: a BEGIN
        opens the thread's transaction, a COMMIT or ROLLBACK closes it and
        keeps its statements (those of a transaction whose BEGIN came before
        the window are not kept: their places are unknown)."""
        thread, event = mark
        if event <= self._followed.get(thread, -1):
            return
        self._followed[thread] = event
        kind = statement_kind(text)
        if kind == "begin":
            self._open[thread] = (f"{thread}/{event}", [])
        elif kind in ("commit", "rollback"):
            self._in_txns += self._open.pop(thread, ("", []))[1]
        elif thread in self._open and key is not None:
            name, txn = self._open[thread]
            txn.append(Seen(name, float(len(txn) + 1), key, tuple(literal_values(text))))

    @property
    def whole_transactions(self) -> bool:
        # the long history holds a text-protocol transaction whole; of a prepared one, the executions named
        return self._prepared is None or not self._prepared.in_transactions

    def in_transactions(self) -> list[Seen]:
        return self._in_txns + (self._prepared.in_transactions if self._prepared is not None else [])

    def literals(self) -> bool:
        # the twin sends what most of production's statements came as
        texted = self._texted[-1] - self._texted[0] if len(self._texted) >= 2 else 0
        return self._attributed <= texted or not self._attributed

    def commits(self) -> int | None:
        # the digests hold every BEGIN and COMMIT the capture can see at all (the text protocol's)
        return None

    def notes(self) -> list[str]:
        """What the window held that the capture cannot show."""
        if self._prepared is not None and self._attributed:
            return list(self._prepared.notes)
        if len(self._executes) >= 2 and self._executes[-1] > self._executes[0]:
            return [f"{self._executes[-1] - self._executes[0]} executions of prepared statements (binary protocol) "
                    "on this server are in no digest and not captured"]
        return []

    def column(self, table: str, name: str) -> Column | None:
        return self._columns.column(table, name)

    def close(self) -> None:
        try:
            self._conn.close()
        except pymysql.MySQLError:
            pass
