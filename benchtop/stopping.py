"""How a stop request reaches a running loop: SIGINT or SIGTERM sets a
`StopFlag` that the headless loop, a knee search or the /metrics endpoint
reads on its next tick; a second one hurries the end."""

from __future__ import annotations

import signal
import threading
from typing import Callable


class StopFlag:
    """Set by SIGINT/SIGTERM; the loop ends the run cleanly on its next tick.
    A second signal calls the `on_hurry` callbacks: stop waiting, end now."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason = ""
        self.signum: int | None = None  # the signal that set it, if one did
        self._hurry: list[Callable[[], None]] = []

    def set(self, reason: str, signum: int | None = None) -> None:
        if not self.event.is_set():
            self.reason, self.signum = reason, signum
            self.event.set()
            return
        for hurry in self._hurry:
            hurry()

    def on_hurry(self, callback: Callable[[], None]) -> None:
        self._hurry.append(callback)

    def install(self) -> None:
        def handler(signum: int, _frame: object) -> None:
            self.set(f"signal {signal.Signals(signum).name}", signum)

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, handler)
            except ValueError:  # not the main thread (e.g. under a test runner)
                pass
