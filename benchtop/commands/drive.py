"""One run of a session driven to its end, the same way for `run`, `knee`
and `scenario` (as locust's Environment drives its runners): the /metrics
endpoint, the headless loop or the TUI as RunOptions.headless decided, then
the command's last lines (the results folder, a write failure) and its exit
status.  Each command keeps only what is its own: the run's validity and
analysis, the knee's probes and answer, the scenario's steps.

It lives with the commands because it joins what the session cannot import:
the metrics endpoint and the screens (the TUI is imported only when used, so
headless runs never load textual)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from benchtop.commands.exits import EXIT_ERROR, EXIT_FAILED_RUN, EXIT_OK
from benchtop.errors import Interrupted
from benchtop.metrics import served
from benchtop.record.controller import Controller
from benchtop.record.samples import RunSummary
from benchtop.run.headless import LinePrinter, run_headless
from benchtop.session import RunSession
from benchtop.stopping import StopFlag


def on_terminal(out: TextIO) -> bool:
    """`out` is this process's stdout and a terminal: where the TUI can open."""
    return out is sys.stdout and sys.stdout.isatty()


class Drive:
    """Drives `session`'s run; `out` takes what a command prints (interval
    lines, the summary), `prog` names the command in its error lines.
    `stop`: the flag signals set (a command running several sessions, as
    the A/B comparison, keeps one across them); default: the run's own."""

    def __init__(self, session: RunSession, out: TextIO, prog: str = "benchtop", stop: StopFlag | None = None) -> None:
        self.session = session
        self.out = out
        self.prog = prog
        self.stop = stop or StopFlag()

    def run(self, ctl: Controller, printer: LinePrinter, txn_names: Sequence[str] = (), banner: str = "",
            ended: Callable[[RunSummary | None], None] | None = None) -> RunSummary | None:
        """Runs `ctl` headless (the monitor recording, `banner` then
        `printer`'s lines) or in the TUI, with the metrics endpoint serving
        throughout; `ended` gets the summary while the endpoint still serves
        its final values.  Returns the summary (None: nothing measured)."""
        session, opts = self.session, self.session.options
        self.stop.install()
        with served(opts, ctl, txn_names, self.stop) as live:
            if opts.headless:
                session.recorder.start()
                if banner:
                    print(banner, file=self.out)
                    print("", file=self.out, flush=True)
                summary = run_headless(live, printer, self.stop)
            else:
                # the TUI is imported only here: headless runs never load textual
                from benchtop.screens.launch import run_tui

                live.start()
                writer = session.writer
                summary = run_tui(live, sources=session.tapped_pollers() or None,
                                  save_dir=writer.folder if writer else Path.cwd())
            if ended is not None:
                ended(summary)
        return summary

    def end(self, failed: str | None, printed: str = "summary", cut_short: str = "") -> int:
        """The command's last lines and exit status, once the session has
        closed its files (every write error is known): the results folder,
        or the write failure (what was `printed` above is complete all the
        same); then `failed`, the error that ended the run, if one did.
        `cut_short` is why a command whose answer needs its whole run (the
        knee's search) ended first; when that was a signal, the exit status
        is the signal's (143 for SIGTERM) after what was printed."""
        writer = self.session.writer
        if writer and writer.failed:
            print(f"{self.prog}: error: {writer.failed} (the {printed} printed above is complete)", file=sys.stderr)
        elif writer:
            # JSON Lines keep stdout to one object per line
            print(f"results: {writer.folder}", file=sys.stderr if self.session.options.json else self.out, flush=True)
        if failed:
            print(f"{self.prog}: error: {failed}", file=sys.stderr)
            return EXIT_FAILED_RUN
        if writer and writer.failed:
            return EXIT_ERROR
        if cut_short and cut_short == self.stop.reason and self.stop.signum is not None:
            # an answer a signal cut short is not the answer: scripts must not take it for one
            stopped = Interrupted(self.stop.signum)
            print(f"{self.prog}: interrupted ({stopped.signal_name}): the {printed} above is the best so far",
                  file=sys.stderr)
            return stopped.exit_code
        return EXIT_OK
