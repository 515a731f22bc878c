"""Entry points of the interactive mode."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchtop.screens.app import BenchtopApp
from benchtop.screens.monitor import as_poller


def run_tui(
    controller: Any,
    sources: Sequence[Any] | None = None,
    save_dir: Path | None = None,
    source_interval: float = 2.0,
) -> Any:
    """Run the dashboard on a started RunController until the run ends or
    the user quits; returns the RunSummary (None without a controller).

    `sources` are Source objects (polled every `source_interval` s through a
    Poller made here and closed at the end) or ready Pollers (left open for
    their owner).  The caller prints `controller.summary_text()` afterwards,
    once the terminal is back to normal.
    """
    given = list(sources or ())
    pollers = [as_poller(s, source_interval) for s in given]
    summary = None
    try:
        summary = BenchtopApp(controller, pollers, save_dir).run()
    finally:
        for original, poller in zip(given, pollers):
            if poller is not original:
                poller.close()
        if controller is not None and summary is None:
            # ctrl+q, a crash, or a stop that failed inside the app: stop() is idempotent.
            summary = controller.stop("quit")
    return summary


def monitor_tui(pollers: list[Any], args: argparse.Namespace) -> int:
    """`benchtop monitor` without --headless (benchtop.commands.monitor's RunTui)."""
    BenchtopApp(None, pollers, source_interval=getattr(args, "interval", 2.0)).run()
    return 0
