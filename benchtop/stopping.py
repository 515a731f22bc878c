"""How a stop request reaches a running loop: SIGINT or SIGTERM sets a
`StopFlag` that the headless loop, a knee search or the /metrics endpoint
reads on its next tick; a second one hurries the end."""

from __future__ import annotations

import os
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
        """SIGINT and SIGTERM set this flag from now on (through the process's relay)."""
        relay = _SignalRelay.get()
        relay.flag = self
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, relay.handler)
            except ValueError:  # not the main thread (e.g. under a test runner)
                pass


class _SignalRelay:
    """The process's stop signals, passed on by a thread of their own.

    A Python signal handler runs in the main thread between two of its
    bytecodes; one that set the flag's Event there took the lock that
    Event.wait holds as its timeout returns, and a signal landing in that
    window waited for it for good: the headless loop waits on the flag every
    tick, and SIGTERM froze a run.  The handler only writes the signal's
    number to a pipe; this thread sets the flag.  One per process, as signal
    handlers are."""

    _made: "_SignalRelay | None" = None
    _making = threading.Lock()

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self.flag: StopFlag | None = None
        threading.Thread(target=self._pass_on, name="benchtop-signals", daemon=True).start()

    @classmethod
    def get(cls) -> "_SignalRelay":
        with cls._making:
            if cls._made is None:
                cls._made = cls()
            return cls._made

    @classmethod
    def forget(cls) -> None:
        """In a forked child: the relay's thread stayed in the parent, so its own install() makes a new one."""
        cls._made = None
        cls._making = threading.Lock()

    def handler(self, signum: int, _frame: object) -> None:
        try:
            os.write(self._write, bytes([signum]))
        except BlockingIOError:
            pass  # a full pipe: more signals than anyone reads are pending already

    def _pass_on(self) -> None:
        while True:
            for signum in os.read(self._read, 64):
                flag = self.flag
                if flag is not None:
                    flag.set(f"signal {signal.Signals(signum).name}", signum)


os.register_at_fork(after_in_child=_SignalRelay.forget)
