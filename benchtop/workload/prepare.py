"""`benchtop prepare` / `cleanup`: create, load and index a workload's tables
(sysbench-compatible for the oltp_* family), or drop them."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from benchtop.engine import ConnectError, ConnSettings, Engine, EngineError, EngineSettings, exec_sql
from benchtop.workload import Program


class PrepareError(RuntimeError):
    """One line saying what failed."""


def _run(conn: ConnSettings, sql: str) -> None:
    try:
        exec_sql(conn, sql)
    except EngineError as exc:
        raise PrepareError(f"{sql.split('(')[0].strip()[:80]}: {exc}") from None


def prepare(program: Program, conn: ConnSettings, threads: int, out: TextIO = sys.stderr, quiet: bool = False) -> int:
    """Create tables, load rows on `threads` threads, then build secondary
    indexes (after the load, which is faster).  Returns rows loaded.  The
    report names each phase with its own time: the load's rate is the
    loading alone, the index build is timed apart."""
    schema = program.schema
    if schema is None:
        raise PrepareError(f"workload {program.name} has no [schema]: nothing to prepare")
    for sql in schema.once_before:
        _run(conn, sql)
    for t in range(1, schema.tables + 1):
        for sql in schema.per_table(schema.create, t):
            _run(conn, sql)
    total_rows = sum(ld.rows * (ld.last_table - ld.first_table + 1) for ld in program.loads)
    if not quiet:
        print(f"Creating {schema.tables} table(s) and loading {total_rows} rows on {threads} thread(s)...", file=out)
    t0 = time.monotonic()
    if program.loads:
        eng = Engine(conn, EngineSettings(threads=0), None)
        try:
            for ld in program.loads:
                err: list[BaseException] = []

                def work() -> None:
                    try:
                        eng.load(ld, threads)
                    except EngineError as exc:  # reported below, with the table
                        err.append(exc)

                th = threading.Thread(target=work, daemon=True)
                th.start()
                last_print = 0.0
                while th.is_alive():
                    th.join(0.5)
                    now = time.monotonic()
                    if not quiet and now - last_print >= 2.0 and th.is_alive():
                        done = eng.snapshot().rows_loaded
                        pct = 100.0 * done / total_rows if total_rows else 100.0
                        print(f"  loading: {done} rows ({pct:.0f}%), {done / max(now - t0, 1e-9):.0f} rows/s", file=out)
                        last_print = now
                if err:
                    raise PrepareError(str(err[0]))
        finally:
            eng.close()
    t_loaded = time.monotonic()
    statements = [sql for t in range(1, schema.tables + 1)
                  for sql in [*schema.per_table(schema.after_load, t), *schema.per_table(schema.indexes, t)]]
    if statements and not quiet:
        print(f"  loaded {total_rows} rows in {t_loaded - t0:.1f} s ({total_rows / max(t_loaded - t0, 1e-9):.0f} rows/s); "
              "building indexes...", file=out)
    for sql in statements:
        _run(conn, sql)
    if not quiet:
        t_end = time.monotonic()
        phases = f"load {t_loaded - t0:.1f} s ({total_rows / max(t_loaded - t0, 1e-9):.0f} rows/s)"
        if statements:
            phases += f", indexes {t_end - t_loaded:.1f} s"
        print(f"Prepared {program.name}: {total_rows} rows in {t_end - t0:.1f} s: {phases}", file=out)
    return total_rows


def cleanup(program: Program, conn: ConnSettings, out: TextIO = sys.stderr, quiet: bool = False) -> None:
    schema = program.schema
    if schema is None:
        return
    for t in range(1, schema.tables + 1):
        for sql in schema.per_table(schema.drop, t):
            _run(conn, sql)
    if not quiet:
        print(f"Dropped {schema.tables} table(s) of {program.name}", file=out)


def check_ready(program: Program, conn: ConnSettings, label: str = "the server") -> None:
    """Fail early, in one line, when the tables are missing or the server
    cannot be reached: before any worker starts."""
    schema = program.schema
    if schema is None or not schema.check:
        try:
            exec_sql(conn, "SELECT 1")
        except ConnectError as exc:
            raise PrepareError(f"cannot connect to {label}: {str(exc).splitlines()[0]}") from None
        except EngineError:
            pass
        return
    for t in range(1, schema.tables + 1):
        sql = schema.check.replace("{t}", str(t))
        try:
            exec_sql(conn, sql)
        except ConnectError as exc:
            raise PrepareError(f"cannot connect to {label}: {str(exc).splitlines()[0]}") from None
        except EngineError as exc:
            msg = str(exc)
            low = msg.lower()
            if any(w in low for w in ("doesn't exist", "does not exist", "no such table", "unknown table")):
                raise PrepareError(
                    f"table for {program.name} is missing ({msg.splitlines()[0]}): run `benchtop prepare` with the same options first"
                ) from None
            raise PrepareError(msg.splitlines()[0] if msg else "cannot reach the server") from None
