"""`benchtop prepare` / `cleanup`: create, load and index a workload's tables
(sysbench-compatible for the oltp_* family), or drop them."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from benchtop.engine import ConnectError, ConnSettings, Engine, EngineError, EngineSettings, exec_sql
from benchtop.errors import Interrupted, one_line
from benchtop.workload import Program
from benchtop.workload.program import LoadSpec
from benchtop.workload.tables import is_missing, short_tables, survey


class PrepareError(RuntimeError):
    """One line saying what failed."""


# what a server says when an index, key or constraint is already there (a
# resumed prepare builds a kept table set's indexes again)
_EXISTS = ("already exists", "duplicate key name", "multiple primary key", "duplicate foreign key", "errno: 121")


def _run(conn: ConnSettings, sql: str, exists_ok: bool = False) -> None:
    try:
        exec_sql(conn, sql)
    except EngineError as exc:
        if exists_ok and any(w in str(exc).lower() for w in _EXISTS):
            return
        raise PrepareError(f"{sql.split('(')[0].strip()[:80]}: {exc}") from None


def prepare(program: Program, conn: ConnSettings, threads: int, out: TextIO = sys.stderr, quiet: bool = False) -> int:
    """Create tables, load rows on `threads` threads, then build secondary
    indexes (after the load, which is faster).  Returns rows loaded.  The
    report names each phase with its own time: the load's rate is the
    loading alone, the index build is timed apart.

    It resumes what an earlier prepare left: a table set whose tables hold
    the rows asked is kept (its indexes built if missing), a half-loaded one
    is dropped and loaded again; a table holding more rows than asked is
    refused (other options prepared it).  Interrupted (Ctrl-C, SIGTERM), it
    raises Interrupted saying in one line what it left and how to go on."""
    schema = program.schema
    if schema is None:
        raise PrepareError(f"workload {program.name} has no [schema]: nothing to prepare")
    sets = list(range(1, schema.tables + 1))
    phase = "creating tables"
    try:
        if conn.driver == "sqlite" and conn.database:
            # before the survey's connection creates the file, then for what is left to load
            folder = Path(conn.database).resolve().parent
            if not Path(conn.database).exists():
                check_free_space(program, folder, sets)
        todo, kept = _plan(program, conn, sets, out, quiet)
        if conn.driver == "sqlite" and conn.database:
            check_free_space(program, folder, todo)
        for sql in schema.once_before:
            _run(conn, sql)
        for t in todo:
            for sql in [*schema.per_table(schema.drop, t), *schema.per_table(schema.create, t)]:
                _run(conn, sql)
        phase = "loading"
        total_rows = sum(ld.rows * sum(1 for t in todo if ld.first_table <= t <= ld.last_table)
                         for ld in program.loads)
        if not quiet and todo:
            print(f"Creating {len(todo)} table(s) and loading {total_rows} rows on {threads} thread(s)...", file=out)
        t0 = time.monotonic()
        _load(program, conn, todo, threads, total_rows, t0, out, quiet)
        t_loaded = time.monotonic()
        phase = "building indexes"
        statements = [sql for t in todo
                      for sql in [*schema.per_table(schema.after_load, t), *schema.per_table(schema.indexes, t)]]
        if statements and not quiet:
            print(f"  loaded {total_rows} rows in {t_loaded - t0:.1f} s ({total_rows / max(t_loaded - t0, 1e-9):.0f} rows/s); "
                  "building indexes...", file=out)
        for sql in statements:
            _run(conn, sql)
        # a kept set may have been interrupted while its indexes were built
        for t in kept:
            for sql in [*schema.per_table(schema.after_load, t), *schema.per_table(schema.indexes, t)]:
                _run(conn, sql, exists_ok=True)
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        raise Interrupted(signum, _left(program, conn, sets, phase, signum)) from None
    if not quiet and not todo:
        print(f"Prepared {program.name}: nothing to load, every table set already holds its rows", file=out)
    elif not quiet:
        t_end = time.monotonic()
        phases = f"load {t_loaded - t0:.1f} s ({total_rows / max(t_loaded - t0, 1e-9):.0f} rows/s)"
        if statements:
            phases += f", indexes {t_end - t_loaded:.1f} s"
        print(f"Prepared {program.name}: {total_rows} rows in {t_end - t0:.1f} s: {phases}", file=out)
    return total_rows


def check_free_space(program: Program, folder: Path, todo: list[int]) -> None:
    """A load of table sets `todo` into an SQLite database in `folder` that
    cannot fit the free space there is refused before a table is created
    (a server's disk is the server's to know)."""
    if not todo:
        return
    rows = sum(ld.rows * sum(1 for t in todo if ld.first_table <= t <= ld.last_table) for ld in program.loads)
    need = sum(ld.row_bytes * ld.rows * sum(1 for t in todo if ld.first_table <= t <= ld.last_table)
               for ld in program.loads)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # the folder is not there yet: opening the database will say so
    if need > free:
        raise PrepareError(f"{program.name} loads {rows:,} rows, about {_size(need)}, but {folder} has "
                           f"{_size(free)} free: choose a smaller scale or table size, or another --db")


def _size(n: float) -> str:
    """>>> _size(680e6), _size(3.2e15)
    ('680 MB', '3200 TB')"""
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}"
        n /= 1000
    return f"{n:.0f} TB"


def _plan(program: Program, conn: ConnSettings, sets: list[int], out: TextIO, quiet: bool) -> tuple[list[int], list[int]]:
    """(sets to create and load, sets kept as they are) from what the tables
    hold now."""
    todo, kept, notes = [], [], []
    for t in sets:
        rows = survey(program, conn, t)
        over = [r for r in rows if r.found is not None and r.found > r.most]
        if over:
            r = over[0]
            raise PrepareError(f"{r.name} already holds {r.found} rows, more than the {r.most} asked: it was prepared "
                               "(or grown by a run) with other options; run with those, or `benchtop cleanup` first")
        if rows and all(r.complete for r in rows):
            kept.append(t)
            continue
        todo.append(t)
        if any(r.found is not None for r in rows):
            notes.append(", ".join(r.describe() for r in rows if not r.complete))
    if (kept or notes) and not quiet:
        print(f"Resuming: {len(kept)} table set(s) already complete, kept"
              + (f"; loading again: {'; '.join(notes)}" if notes else ""), file=out)
    return todo, kept


def _load(program: Program, conn: ConnSettings, todo: list[int], threads: int, total_rows: int, t0: float,
          out: TextIO, quiet: bool) -> None:
    """Each load into the sets of `todo`, each contiguous run of sets at once."""
    specs = [replace(ld, first_table=max(a, ld.first_table), last_table=min(b, ld.last_table))
             for ld in program.loads for a, b in _runs(todo) if a <= ld.last_table and b >= ld.first_table]
    if not specs:
        return
    eng = Engine(conn, EngineSettings(threads=0), None)
    try:
        for ld in specs:
            err: list[BaseException] = []
            # waited for through an Event, not Thread.join: a join that a
            # signal interrupts marks a running thread as ended (Python 3.11)
            done = threading.Event()

            def work(ld: LoadSpec = ld, done: threading.Event = done) -> None:
                try:
                    eng.load(ld, threads)
                except EngineError as exc:  # reported below, with the table
                    err.append(exc)
                finally:
                    done.set()

            threading.Thread(target=work, daemon=True).start()
            last_print = 0.0
            try:
                while not done.wait(0.5):
                    now = time.monotonic()
                    if not quiet and now - last_print >= 2.0:
                        n = eng.snapshot().rows_loaded
                        pct = 100.0 * n / total_rows if total_rows else 100.0
                        print(f"  loading: {n} rows ({pct:.0f}%), {n / max(now - t0, 1e-9):.0f} rows/s", file=out)
                        last_print = now
            except KeyboardInterrupt:
                # the loaders stop after their statement in flight; the
                # engine is freed only once they are gone
                eng.stop()
                while not done.wait(0.5):
                    pass
                raise
            if err:
                raise PrepareError(str(err[0]))
    finally:
        eng.close()


def _runs(sets: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of set numbers.

    >>> _runs([1, 2, 3, 5])
    [(1, 3), (5, 5)]
    """
    runs: list[tuple[int, int]] = []
    for t in sets:
        if runs and runs[-1][1] == t - 1:
            runs[-1] = (runs[-1][0], t)
        else:
            runs.append((t, t))
    return runs


def _left(program: Program, conn: ConnSettings, sets: list[int], phase: str, signum: int) -> str:
    """The one line an interrupted prepare ends with: what the tables hold
    and how to finish or clean."""
    name = signal.Signals(signum).name
    try:
        rows = [r for t in sets for r in survey(program, conn, t)]
    except (EngineError, KeyboardInterrupt) as exc:
        held = f"the tables could not be counted ({one_line(exc) or 'interrupted again'})"
    else:
        complete = [r for r in rows if r.complete]
        partial = [r for r in rows if r.found is not None and not r.complete]
        missing = [r for r in rows if r.found is None]
        parts = []
        if complete:
            parts.append(f"{len(complete)} table(s) complete"
                         + (" (indexes not all built)" if phase == "building indexes" else ""))
        parts += [r.describe() for r in partial[:5]]
        if len(partial) > 5:
            parts.append(f"{len(partial) - 5} more half-loaded")
        if missing:
            parts.append(f"{len(missing)} table(s) not created")
        held = ", ".join(parts) or "no tables"
    return (f"prepare of {program.name} interrupted ({name}) while {phase}: left {held}; run the same "
            "`benchtop prepare` again to finish (it keeps complete tables and loads the others again), "
            "or `benchtop cleanup` with the same options to drop them")


def cleanup(program: Program, conn: ConnSettings, out: TextIO = sys.stderr, quiet: bool = False) -> None:
    schema = program.schema
    if schema is None:
        return
    for t in range(1, schema.tables + 1):
        for sql in schema.per_table(schema.drop, t):
            _run(conn, sql)
    if not quiet:
        print(f"Dropped {schema.tables} table(s) of {program.name}", file=out)


def _missing_file(database: str) -> bool:
    """A SQLite database named by a path that does not exist (not :memory:, not a URI)."""
    return bool(database) and database != ":memory:" and not database.startswith("file:") \
        and not os.path.exists(database)


def check_ready(program: Program, conn: ConnSettings, label: str = "the server", rows: bool = False) -> None:
    """Fail early, in one line, when the tables are missing or the server
    cannot be reached: before any worker starts.  `rows`: also when a loaded
    table holds fewer rows than the workload asks for (a COUNT(*) of each:
    once before a run, not before each of a scenario's steps)."""
    schema = program.schema
    if schema is not None and schema.check and conn.driver == "sqlite" and _missing_file(conn.database):
        # opening it would leave an empty database file behind a refused run
        raise PrepareError(f"no database file {conn.database}: run `benchtop prepare` with the same options first")
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
            if is_missing(msg):
                raise PrepareError(
                    f"table for {program.name} is missing ({msg.splitlines()[0]}): run `benchtop prepare` with the same options first"
                ) from None
            raise PrepareError(msg.splitlines()[0] if msg else "cannot reach the server") from None
    if rows:
        _check_rows(program, conn, label)


def _check_rows(program: Program, conn: ConnSettings, label: str) -> None:
    try:
        short = short_tables(program, conn)
    except ConnectError as exc:
        raise PrepareError(f"cannot connect to {label}: {one_line(exc)}") from None
    except EngineError as exc:
        raise PrepareError(f"counting the rows of {program.name}'s tables: {one_line(exc)}") from None
    if short:
        r = short[0]
        more = f" ({len(short) - 1} more table(s) short too)" if len(short) > 1 else ""
        asked = str(r.asked) if r.fewest == r.most else f"{r.fewest} to {r.most}"
        raise PrepareError(f"{r.name} holds {r.found} rows, not the {asked} this run asks for{more}: an interrupted "
                           "prepare, or one with other options; run `benchtop prepare` with these options to load it "
                           "again, or run with the options it was prepared with")
