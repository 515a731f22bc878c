"""`benchtop prepare ...` and `benchtop cleanup ...`: create and load a
workload's tables (or fileio's files), and drop them again."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchtop.commands import subcommands_epilog
from benchtop.commands.exits import EXIT_OK
from benchtop.errors import UsageError
from benchtop.options.run_options import RunOptions, options_from_argv
from benchtop.workload import load_program
from benchtop.workload.fileio import cleanup_files, prepare_files
from benchtop.workload.prepare import cleanup, prepare


def _options(cmd: str, argv: Sequence[str]) -> RunOptions:
    opts = options_from_argv(cmd, argv, epilog=subcommands_epilog())
    if opts.pgbench_scripts:
        raise UsageError(f"{cmd} does not apply to --pgbench-script: its tables are pgbench's "
                         "(pgbench -i, or benchtop prepare --workload tpcb)")
    if opts.engine == "sqlite" and not opts.target.database:
        raise UsageError(f"{cmd} --engine sqlite needs --db FILE")
    return opts


def prepare_main(argv: Sequence[str]) -> int:
    opts = _options("prepare", argv)
    if opts.fileio is not None:
        prepare_files(opts.fileio)
    else:
        program = load_program(opts.workload, opts.engine, opts.workload_options)
        prepare(program, opts.conn_settings(), max(1, opts.threads), out=sys.stderr)
    return EXIT_OK


def cleanup_main(argv: Sequence[str]) -> int:
    opts = _options("cleanup", argv)
    if opts.fileio is not None:
        cleanup_files(opts.fileio)
    else:
        cleanup(load_program(opts.workload, opts.engine, opts.workload_options), opts.conn_settings())
    return EXIT_OK
