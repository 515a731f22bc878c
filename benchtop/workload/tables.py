"""The rows a workload's prepare puts in each table, against what the tables
hold: a prepare resumes from it (tables already complete are kept, half-loaded
ones loaded again), an interrupted prepare says what it left, and a run
refuses tables that hold fewer rows than it asks for."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from benchtop.engine import ConnectError, ConnSettings, EngineError, exec_sql
from benchtop.workload.program import OP_EXEC, Program

_INSERT_INTO = re.compile(r"\s*INSERT\s+INTO\s+([^\s(]+)", re.I)
_DELETE_FROM = re.compile(r"\bDELETE\s+FROM\s+([^\s(;]+)", re.I)
_MISSING = ("doesn't exist", "does not exist", "no such table", "unknown table")
# a run's deletes may leave a table this much short of what prepare loaded
# (oltp_* delete and insert back the same row, and a stop between the two
# loses it); an interrupted load leaves at least a chunk or a table short
DELETED_SLACK = 0.01
# a run's check counts each table for at most this long: a table too big to
# count in that time (millions of rows) is taken as loaded, so the check
# costs a run seconds, not the minutes 32 large tables would take to count
RUN_COUNT_LIMIT_S = 2.0
_TIMED_OUT = "no reply within"


def is_missing(message: str) -> bool:
    """Whether a server's error says the table is not there."""
    low = message.lower()
    return any(w in low for w in _MISSING)


@dataclass(frozen=True, slots=True)
class Asked:
    """The rows prepare loads in a table, and the range that counts as
    complete (wider than `rows` where the count varies by design: TPC-C's
    5 to 15 lines per order, as sysbench-tpcc loads them)."""

    rows: int
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class TableRows:
    """One table's rows: what prepare loads there and what it holds (None:
    no such table)."""

    name: str
    asked: int
    found: int | None
    low: int | None = None  # the fewest rows of a complete table (None: asked)
    high: int | None = None  # the most (None: asked)

    @property
    def fewest(self) -> int:
        return self.asked if self.low is None else self.low

    @property
    def most(self) -> int:
        return self.asked if self.high is None else self.high

    @property
    def complete(self) -> bool:
        """
        >>> [TableRows("ol", 300000, n, 150000, 450000).complete for n in (298853, 149999, 450001)]
        [True, False, False]
        """
        return self.found is not None and self.fewest <= self.found <= self.most

    def describe(self) -> str:
        if self.found is None:
            return f"{self.name} missing"
        if self.complete:
            return f"{self.name} complete ({self.found} rows)"
        return f"{self.name} with {self.found} of {self.asked} rows"


def asked_rows(program: Program, table_set: int) -> dict[str, Asked]:
    """Each table of set `table_set` that prepare loads, with its rows (two
    loads into one table add up), in load order."""
    rows: dict[str, Asked] = {}
    for ld in program.loads:
        m = _INSERT_INTO.match(ld.insert_prefix)
        if m and ld.first_table <= table_set <= ld.last_table:
            name = m.group(1).replace("{t}", str(table_set))
            low, high = ld.complete_between or (ld.rows, ld.rows)
            was = rows.get(name, Asked(0, 0, 0))
            rows[name] = Asked(was.rows + ld.rows, was.low + low, was.high + high)
    return rows


def deleted_from(program: Program, table_set: int) -> set[str]:
    """The tables of set `table_set` that the workload's transactions delete from."""
    return {m.group(1).replace("{t}", str(table_set)) for s in program.stmts for m in _DELETE_FROM.finditer(s.sql)}


def consumed(program: Program, table_set: int) -> set[str]:
    """The tables of set `table_set` that a transaction deletes from without
    inserting into them again (TPC-C's delivery takes rows off new_orders that
    other transactions add): a queue whose size any run, the peer's included,
    moves by design, so no row count says it was loaded short."""
    out: set[str] = set()
    for t in program.txn_types:
        sql = [program.stmts[op[3]].sql for op in program.ops[t.first_op : t.first_op + t.nops] if op[0] == OP_EXEC]
        deletes = {m.group(1) for q in sql for m in _DELETE_FROM.finditer(q)}
        inserts = {m.group(1) for q in sql if (m := _INSERT_INTO.match(q))}
        out |= {name.replace("{t}", str(table_set)) for name in deletes - inserts}
    return out


def count_rows(conn: ConnSettings, name: str) -> int | None:
    """COUNT(*) of one table, None when it does not exist; ConnectError and
    other EngineErrors go up."""
    try:
        value = exec_sql(conn, f"SELECT COUNT(*) FROM {name}")
    except ConnectError:
        raise
    except EngineError as exc:
        if is_missing(str(exc)):
            return None
        raise
    return int(value or 0)


def survey(program: Program, conn: ConnSettings, table_set: int) -> list[TableRows]:
    """What set `table_set`'s loaded tables hold, one COUNT(*) each."""
    return [TableRows(name, a.rows, count_rows(conn, name), a.low, a.high)
            for name, a in asked_rows(program, table_set).items()]


def short_tables(program: Program, conn: ConnSettings) -> list[TableRows]:
    """The loaded tables holding fewer rows than the workload asks for (a
    table the workload deletes from may be DELETED_SLACK short, one it
    consumes any number); missing
    tables are the readiness check's to report, and a table that cannot be
    counted within RUN_COUNT_LIMIT_S is taken as loaded."""
    quick = replace(conn, query_timeout_s=RUN_COUNT_LIMIT_S)
    short = []
    for t in range(1, (program.schema.tables if program.schema else 0) + 1):
        slack = deleted_from(program, t)
        queues = consumed(program, t)
        for name, asked in asked_rows(program, t).items():
            if name in queues:
                continue
            try:
                found = count_rows(quick, name)
            except EngineError as exc:
                if isinstance(exc, ConnectError) or not str(exc).startswith(_TIMED_OUT):
                    raise
                continue
            low = asked.low * (1 - DELETED_SLACK) if name in slack else asked.low
            if found is not None and found < low:
                short.append(TableRows(name, asked.rows, found, asked.low, asked.high))
    return short
