"""Entry points of the interactive mode."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from benchtop.record.controller import Controller
from benchtop.record.samples import RunSummary
from benchtop.screens.app import BenchtopApp
from benchtop.sources.base import Source
from benchtop.sources.poller import Poller, as_poller


def run_tui(
    controller: Controller,
    sources: Sequence[Source | Poller] | None = None,
    save_dir: Path | None = None,
    source_interval: float = 2.0,
) -> RunSummary | None:
    """Run the dashboard on a started controller until the run ends or the
    user quits; returns the RunSummary (None when nothing was measured).

    `sources` are Source objects (polled every `source_interval` s through a
    SourcePoller made here and closed at the end) or ready Pollers (left open for
    their owner).  The caller prints the summary afterwards, once the
    terminal is back to normal.
    """
    given = list(sources or ())
    pollers = [as_poller(s, source_interval) for s in given]
    summary: RunSummary | None = None
    app = BenchtopApp(controller, pollers, save_dir)
    try:
        summary = app.run()
    finally:
        for original, poller in zip(given, pollers):
            if poller is not original:
                poller.close()
        if summary is None:
            # ctrl+q, a crash, or a stop that failed inside the app: stop() is idempotent.
            # A crash is not the user's quit: the summary and the exit status say the run failed.
            crashed = app.return_code not in (None, 0)
            summary = controller.stop("error: the dashboard failed (its error is printed above)" if crashed else "quit")
    return summary


def monitor_tui(pollers: Sequence[Poller], args: argparse.Namespace) -> int:
    """`benchtop monitor` without --headless (benchtop.commands.monitor's RunTui)."""
    out = getattr(args, "out", None)
    BenchtopApp(None, pollers, save_dir=Path(out) if out else None,
                source_interval=getattr(args, "interval", 2.0)).run()
    return 0
