"""`benchtop check --workload tpcc ...`: run a workload's consistency
conditions (its [[consistency]] queries, each counting the rows that break
one condition) on every table set, print PASS/FAIL per condition and exit 1
when any fails."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from benchtop.commands import subcommands_epilog
from benchtop.engine import ConnSettings, EngineError, exec_sql
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.workload import Program, load_program
from benchtop.workload.prepare import check_ready


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    table_set: int
    violations: int

    @property
    def passed(self) -> bool:
        return self.violations == 0


def run_checks(program: Program, conn: ConnSettings) -> list[CheckResult]:
    """Every condition on every table set; raises EngineError (with the
    server's message) when a query cannot run, e.g. missing tables."""
    checks = program.extra.get("consistency", ())
    tables = program.schema.tables if program.schema else 1
    out = []
    for t in range(1, tables + 1):
        for name, sql in checks:  # type: ignore[attr-defined]
            value = exec_sql(conn, sql.replace("{t}", str(t)))
            out.append(CheckResult(name, t, int(float(value)) if value else 0))
    return out


def print_results(results: list[CheckResult], out: TextIO) -> None:
    for r in results:
        status = "PASS" if r.passed else "FAIL"
        detail = "" if r.passed else f" ({r.violations} violating rows)"
        print(f"{status}  table set {r.table_set}  condition {r.name}{detail}", file=out)


def main(argv: Sequence[str]) -> int:
    opts = options_from_argv("check", argv, epilog=subcommands_epilog())
    if opts.pgbench_scripts:
        raise UsageError("check runs a workload's consistency conditions; --pgbench-script scripts have none")
    if opts.engine == "sqlite" and not (opts.target.database and Path(opts.target.database).is_file()):
        raise UsageError("check --engine sqlite needs --db FILE, an existing database")
    program = load_program(opts.workload, opts.engine, opts.workload_options)
    if not program.extra.get("consistency"):
        raise UsageError(f"workload {program.name} defines no consistency conditions ([[consistency]])")
    conn = opts.conn_settings()
    check_ready(program, conn, opts.target.describe())
    try:
        results = run_checks(program, conn)
    except EngineError as exc:
        raise EngineError(f"consistency check failed to run: {str(exc).splitlines()[0]}") from None
    print_results(results, sys.stdout)
    failed = sum(1 for r in results if not r.passed)
    print(f"{len(results) - failed} of {len(results)} checks passed", file=sys.stdout)
    return 1 if failed else 0
