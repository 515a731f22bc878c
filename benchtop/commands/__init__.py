"""The command line: `benchtop [run] ...` and its subcommands, one module
each.  Every failure a user can cause ends in one line on stderr starting
with "benchtop: error:" and a non-zero exit code, never a traceback."""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from benchtop.commands.exits import EXIT_ERROR, reporting_errors
from benchtop.errors import caller_signal_handlers, raise_on_sigterm
from benchtop.target.secrets import scrub_argv

# subcommand -> (module, function taking the remaining arguments); modules are
# imported on use, so `benchtop report` never loads the engine's TUI and a
# headless run never loads textual
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("benchtop.commands.run", "main"),
    "prepare": ("benchtop.commands.prepare", "prepare_main"),
    "cleanup": ("benchtop.commands.prepare", "cleanup_main"),
    "monitor": ("benchtop.commands.monitor", "main"),
    "scenario": ("benchtop.commands.scenario", "main"),
    "knee": ("benchtop.commands.knee", "main"),
    "ab": ("benchtop.commands.ab", "main"),
    "report": ("benchtop.commands.report", "main"),
    "replay": ("benchtop.commands.replay", "main"),
    "check": ("benchtop.commands.check", "main"),
    "restore": ("benchtop.commands.restore", "main"),
    "capture": ("benchtop.commands.capture", "main"),
    "workload": ("benchtop.commands.workload", "main"),
}

# what `benchtop --help` says of each subcommand (tests check it names them all)
SUMMARIES: dict[str, str] = {
    "run": "a benchmark run (the default: `benchtop ...` is `benchtop run ...`)",
    "prepare": "create and load a workload's tables, or fileio's files",
    "cleanup": "drop them again",
    "check": "a workload's consistency conditions (TPC-C)",
    "monitor": "watch ProxySQL, PgBouncer, MySQL, PostgreSQL read-only, no load",
    "scenario": "run the steps of a scenario file (thread sweeps, rate steps)",
    "knee": "search the threads (or rate) with the most throughput under a p99 limit",
    "ab": "is B really faster than A? interleaved rounds of both and a confidence interval",
    "report": "compare results folders: a table, HTML and PNG plots",
    "replay": "play back a recorded monitor session",
    "restore": "put back the settings a killed run left changed on a server",
    "capture": "what a server runs over a window (statements, rates, values), read-only",
    "workload": "workload files made from other things: from-capture DIR",
}


def subcommands_epilog() -> str:
    """The list of subcommands for the end of a help text."""
    width = max(map(len, SUMMARIES))
    lines = ["subcommands (benchtop SUBCOMMAND --help for each):"]
    lines += [f"  {name:<{width}}  {text}" for name, text in SUMMARIES.items()]
    return "\n".join(lines)


def command(name: str) -> Callable[[list[str]], int]:
    module, function = SUBCOMMANDS[name]
    fn: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
    return fn


# the commands that take a run's options, and so sysbench 0.5's spellings of them
_RUN_LIKE = ("run", "prepare", "cleanup", "check", "knee")


def _dispatch(argv: list[str]) -> int:
    name, rest = (argv[0], argv[1:]) if argv and argv[0] in SUBCOMMANDS else ("run", argv)
    if name in _RUN_LIKE:
        # imported here, not above: it loads the workload compiler (0.2-0.3 s on a busy host), and until
        # main() has scrubbed argv a password flag is readable in the process list
        from benchtop.commands.sysbench05 import translate as translate_sysbench05

        rest, note = translate_sysbench05(rest)
        if note:
            print(f"benchtop: note: {note}", file=sys.stderr)
    return command(name)(rest)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        scrub_argv()
        # a SIGTERM before a run's own handling (a prepare, the embedded
        # database's load) unwinds: cleanups run and the command says what it left
        raise_on_sigterm()
    try:
        # the process's own handlers stay till exit; an in-process caller's come back
        with nullcontext() if argv is None else caller_signal_handlers():
            code = reporting_errors("benchtop", lambda: _dispatch(args))
        if argv is None:
            # What is alive now lives until exit: the interpreter's last
            # collections over it cost a run ~50 ms of CPU for nothing
            # (bench/vs_peers.py counts the whole process)
            gc.freeze()
        return code
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): nothing left to tell it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
