"""Polling a source safely: never two polls at once, never longer than a
deadline, never an exception out; a lost connection becomes a failed
snapshot and reconnect attempts with exponential backoff.

Each `SourcePoller` owns one worker thread that runs the source's blocking calls,
so the caller (a Textual thread worker or the headless loop) waits at most
the deadline even when the server is SIGSTOPped.  On a missed deadline the
poller asks the source to `interrupt()` its socket (if it can), which turns
a read stuck on a hung server into a prompt "connection lost".
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from benchtop.sources.base import Source, SourceError, SourceSnapshot


class Poller(Protocol):
    """What a monitor UI needs of a poller: the seam between the sources and
    whoever shows their snapshots (SourcePoller, a recorder's TappedPoller,
    replay's ReplayPoller)."""

    interval: float

    @property
    def name(self) -> str: ...

    @property
    def where(self) -> str: ...  # the server's host:port, "" when unknown (a recording)

    def poll(self) -> SourceSnapshot: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class PollerStats:
    polls: int = 0
    failures: int = 0
    reconnects: int = 0  # successful ones
    last_poll_ms: float = 0.0


class SourcePoller:
    """`poll()` returns a snapshot within `deadline_s` (+ a short grace)."""

    def __init__(
        self,
        source: Source,
        interval: float = 2.0,
        deadline_s: float | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 10.0,
        grace_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.interval = interval
        self.deadline_s = deadline_s if deadline_s is not None else max(source.timeout_s, 0.1) + 0.5
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.grace_s = grace_s  # after interrupt(), how long the worker gets to notice
        self.stats = PollerStats()
        self._clock = clock
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"poll:{source.name}")
        self._pending: cf.Future[SourceSnapshot] | None = None
        self._connected = False
        self._backoff = backoff_initial_s
        self._retry_at = 0.0
        self._last_error = ""
        self._closed = False

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def where(self) -> str:
        return self.source.where

    @property
    def connected(self) -> bool:
        return self._connected

    # -- the work done on the worker thread

    def _work(self) -> SourceSnapshot:
        if not self._connected:
            # Not try_reconnect(): its bool would lose the reason the user needs to see.
            self.source.close()
            self.source.connect()
            self._connected = True
            self.stats.reconnects += 1
            self._backoff = self.backoff_initial_s
        return self.source.poll()

    # -- the caller's side

    def connect(self) -> None:
        """First connection, raising SourceError (bad DSN, wrong password...)
        so the caller can refuse to start with a one-line message."""
        fut = self._pool.submit(self.source.connect)
        try:
            fut.result(timeout=self.deadline_s + self.grace_s)
        except cf.TimeoutError:
            raise SourceError(f"{self.source.target.describe()}: no answer within {self.deadline_s:g}s") from None
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - a source bug is still one line for the user
            raise SourceError(f"{self.source.target.describe()}: {type(exc).__name__}: {exc}") from None
        self._connected = True

    def start(self) -> None:
        """Begin a poll in the background (no-op if one is still running or a
        reconnect is backing off); collect it with `result()`."""
        if self._pending is not None or self._closed:
            return
        if not self._connected and self._clock() < self._retry_at:
            return
        self._pending = self._pool.submit(self._work)

    def result(self, deadline: float | None = None) -> SourceSnapshot:
        """The snapshot of the poll begun by `start()`, waiting until the
        monotonic time `deadline` at most; never raises."""
        t0 = self._clock()
        deadline = t0 + self.deadline_s if deadline is None else deadline
        fut = self._pending
        if fut is None:
            if not self._connected:
                wait = max(self._retry_at - self._clock(), 0.0)
                return self._failed(f"{self._last_error or 'disconnected'}; retrying in {wait:.1f}s", count=False)
            return self._failed("no poll was started", count=False)
        try:
            snap = fut.result(timeout=max(deadline - self._clock(), 0.0))
        except cf.TimeoutError:
            self.source.interrupt()
            try:
                fut.result(timeout=self.grace_s)
            except cf.TimeoutError:
                # Still stuck: keep the future so no second poll overlaps it.
                return self._lost(f"no answer within {self.deadline_s:g}s", keep_pending=True)
            except Exception:  # noqa: BLE001 - whatever the interrupted poll raised, it is lost
                pass
            return self._lost(f"no answer within {self.deadline_s:g}s")
        except SourceError as exc:
            return self._lost(str(exc))
        except Exception as exc:  # noqa: BLE001 - a source bug must not kill the monitor
            return self._lost(f"{type(exc).__name__}: {exc}")
        self._pending = None
        self.stats.polls += 1
        self.stats.last_poll_ms = snap.poll_ms
        return snap

    def poll(self) -> SourceSnapshot:
        """start() + result(): one bounded, non-overlapping poll."""
        self.start()
        return self.result()

    def run(
        self,
        on_snapshot: Callable[[SourceSnapshot], None],
        should_stop: Callable[[], bool],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Poll every `interval` until `should_stop()`, handing each snapshot
        to `on_snapshot`; made for a Textual thread worker:
        `poller.run(lambda s: self.post_message(SourcePolled(s)), lambda: worker.is_cancelled)`.
        A late poll shifts the schedule instead of causing a burst of catch-up polls."""
        next_at = self._clock()
        while not should_stop():
            on_snapshot(self.poll())
            next_at = max(next_at + self.interval, self._clock())
            # Short naps, so a cancelled worker stops within ~0.1 s.
            while not should_stop() and (left := next_at - self._clock()) > 0:
                sleep(min(left, 0.1))

    def _lost(self, error: str, keep_pending: bool = False) -> SourceSnapshot:
        if not keep_pending:
            self._pending = None
        if self._connected:
            self._connected = False
            self._backoff = self.backoff_initial_s
        else:
            self._backoff = min(self._backoff * 2, self.backoff_max_s)
        self._retry_at = self._clock() + self._backoff
        self._last_error = error
        return self._failed(error)

    def _failed(self, error: str, count: bool = True) -> SourceSnapshot:
        if count:
            self.stats.failures += 1
        return self.source.failed_snapshot(error)

    def interrupt(self) -> None:
        """Unblock a poll in flight (from another thread): it ends as lost."""
        if self._pending is not None and not self._pending.done():
            self.source.interrupt()

    def close(self) -> None:
        """Stop the worker; closes the source once any stuck poll ends."""
        if self._closed:
            return
        self._closed = True
        self.interrupt()
        self._pool.submit(self.source.close)
        self._pool.shutdown(wait=False, cancel_futures=False)


def poll_all(pollers: list[SourcePoller], deadline_s: float | None = None) -> list[SourceSnapshot]:
    """Poll every source at once and collect them by a shared deadline, so a
    hung server delays the others by at most that deadline."""
    for p in pollers:
        p.start()
    start = time.monotonic()
    out = []
    for p in pollers:
        limit = start + (deadline_s if deadline_s is not None else p.deadline_s)
        out.append(p.result(limit))
    return out


def as_poller(source: Source | Poller, interval: float) -> Poller:
    """Sources are polled through a SourcePoller (bounded, never raising, with
    reconnect backoff); pollers pass through unchanged."""
    return SourcePoller(source, interval=interval) if isinstance(source, Source) else source
