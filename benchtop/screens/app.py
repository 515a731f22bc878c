"""The Textual application: which screen, global keys, and the one place
where failed workers are reported."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape
from textual import on
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from benchtop.record.controller import Controller
from benchtop.record.samples import RunSummary
from benchtop.screens.bench import BenchScreen
from benchtop.screens.monitor import MonitorScreen
from benchtop.sources.base import Source
from benchtop.sources.poller import Poller, as_poller


class BenchtopApp(App[RunSummary | None]):
    """`controller` drives a run (None: monitor-only); `sources` become tabs.
    The app returns the run's summary (None: monitor-only, or not summarised)."""

    CSS_PATH = ["styles/global.tcss", "styles/app.tcss"]
    TITLE = "benchtop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        # Like top: ctrl+c leaves (through the screen's quit, so a run is summarised).
        Binding("ctrl+c", "leave", "quit", show=False, priority=True, id="leave"),
    ]

    def __init__(
        self,
        controller: Controller | None = None,
        sources: Sequence[Source | Poller] | None = None,
        save_dir: Path | None = None,
        source_interval: float = 2.0,
    ) -> None:
        super().__init__()
        self.controller = controller
        self.pollers = [as_poller(s, source_interval) for s in sources or ()]
        self.save_dir = save_dir
        self._reported: set[str] = set()

    def get_default_screen(self) -> Screen:
        if self.controller is not None:
            return BenchScreen(self.controller, self.pollers, self.save_dir)
        return MonitorScreen(self.pollers, self.save_dir)

    def on_mount(self) -> None:
        # SIGTERM ends the run as q does (summary saved); a second one hurries it
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.action_leave)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests)
            pass

    def on_unmount(self) -> None:
        try:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def action_leave(self) -> None:
        screen = self.screen_stack[0] if self.screen_stack else None
        if isinstance(screen, BenchScreen):
            screen.action_quit_run()
        else:
            self.exit(None)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        worker = event.worker
        text = f"{worker.description} failed: {worker.error}"
        if worker.group == "stop":
            # The run could not be summarised here; run_tui tries once more.
            self.exit(None)
            return
        # A failing read repeats every interval: say it once.
        if text not in self._reported:
            self._reported.add(text)
            self.notify(escape(text), severity="error", timeout=6)
