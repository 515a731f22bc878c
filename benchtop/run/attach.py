"""What a benchmark run attaches besides the engine: monitor sources polled
beside the load (recorded to monitor.jsonl, fed to --stop-if guards and to
the TUI) and the instrumentation control behind `--instrumentation` / key `i`."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable

from benchtop.record.folder import MONITOR, ResultsWriter
from benchtop.record.monitor import MonitorRecord
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.os import OSSource
from benchtop.sources.proc_table import LatestPass
from benchtop.sources.poller import Poller, SourcePoller
from benchtop.sources.registry import build_sources, is_local, source_class
from benchtop.target import Target
from benchtop.target.instrumentation import InstrumentationControl, InstrumentationError
from benchtop.target.leftovers import admin_target

RESTORE_WAIT_S = 2.0  # for the server to take back instrumentation at the end


class InstrumentationCycler:
    """Cycles presets on key `i`; restores the server's own state at the end."""

    def __init__(self, control: Any) -> None:
        self.control = control
        self.presets = list(control.presets)
        self._i = -1

    def apply(self, preset: str) -> str:
        self.control.apply(preset)
        if preset in self.presets:
            self._i = self.presets.index(preset)
        return preset

    def cycle(self) -> str:
        self._i = (self._i + 1) % len(self.presets)
        return self.apply(self.presets[self._i])

    def restore(self, wait_s: float = RESTORE_WAIT_S) -> None:
        """Put the server's instrumentation back, waiting `wait_s` at most: a
        hung server must not hold the end of the run (it is said instead)."""
        def work() -> None:
            try:
                self.control.restore()
            except InstrumentationError as exc:
                print(f"benchtop: warning: {exc}", file=sys.stderr)
            finally:
                self.control.close()

        t = threading.Thread(target=work, daemon=True, name="instrumentation-restore")
        t.start()
        t.join(wait_s)
        if t.is_alive():
            print(f"benchtop: warning: instrumentation not restored: the server did not answer within {wait_s:g} s; "
                  f"check performance_schema setup / pg settings by hand", file=sys.stderr)


def make_instrumentation(target: Target, admin_dsn: str | None) -> InstrumentationCycler | None:
    """Instrumentation needs rights the benchmark user rarely has
    (UPDATE on performance_schema, ALTER SYSTEM): --admin-dsn names them."""
    if target.kind not in ("mysql", "postgresql"):
        return None
    return InstrumentationCycler(InstrumentationControl(admin_target(target, admin_dsn)))


STOP_WAIT_S = 1.5  # for the pollers' threads at the end of a run, all together


class MonitorRecorder:
    """Polls sources in background threads while the load runs.  Each
    snapshot is recorded (monitor.jsonl) and handed to the listeners; the
    latest per source is kept for guards and the summary."""

    def __init__(self, pollers: list[SourcePoller], writer: ResultsWriter | None = None) -> None:
        self.pollers = pollers
        self.writer = writer
        self.latest: dict[str, SourceSnapshot] = {}
        self.listeners: list[Callable[[SourceSnapshot], None]] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _on(self, snap: SourceSnapshot) -> None:
        with self._lock:
            self.latest[snap.name] = snap
        if self.writer:
            self.writer.append(MONITOR, MonitorRecord(snap.t, (snap,)).to_dict())
        for fn in list(self.listeners):
            fn(snap)

    def tapped(self) -> list[Poller]:
        """The pollers for a UI that polls them itself: each snapshot it gets
        is also recorded and handed to the listeners (so no second polling)."""
        return [TappedPoller(p, self._on) for p in self.pollers]

    def start(self) -> None:
        for p in self.pollers:
            t = threading.Thread(target=p.run, args=(self._on, self._stop.is_set), daemon=True,
                                 name=f"monitor:{p.name}")
            t.start()
            self._threads.append(t)

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Ends the polling within `wait_s` in all, whatever the servers do:
        polls in flight are interrupted (their sockets shut down) first."""
        if self._stop.is_set():
            return
        self._stop.set()
        for p in self.pollers:
            p.interrupt()
        deadline = time.monotonic() + wait_s
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self.pollers:
            p.close()


class TappedPoller:
    """A poller whose snapshots also go to `tap`."""

    def __init__(self, poller: SourcePoller, tap: Callable[[SourceSnapshot], None]) -> None:
        self._poller = poller
        self._tap = tap

    @property
    def name(self) -> str:
        return self._poller.name

    @property
    def where(self) -> str:
        return self._poller.where

    @property
    def interval(self) -> float:
        return self._poller.interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self._poller.interval = seconds

    def interrupt(self) -> None:
        self._poller.interrupt()

    def close(self) -> None:
        self._poller.close()

    def poll(self) -> SourceSnapshot:
        snap = self._poller.poll()
        self._tap(snap)
        return snap

    def run(self, on_snapshot: Callable[[SourceSnapshot], None], should_stop: Callable[[], bool],
            sleep: Callable[[float], None] = time.sleep) -> None:
        def both(snap: SourceSnapshot) -> None:
            self._tap(snap)
            on_snapshot(snap)

        self._poller.run(both, should_stop, sleep)


def build_pollers(target: Target, extra: list[tuple[str, str]], interval: float, with_target: bool,
                  per_process: bool = True, shared: LatestPass | None = None) -> list[SourcePoller]:
    """Sources for a run: the target itself (unless --no-monitor) and any
    --proxysql/--pgbouncer given.  A source that cannot connect now is kept:
    its poller reconnects with backoff and shows the outage.  `per_process`:
    a screen shows each of the server's processes (Source.per_process).
    `shared`: the run's passes over /proc, for the host's source."""
    specs = list(extra)
    sources = build_sources(specs, timeout_s=min(5.0, max(1.0, interval)), per_process=per_process)
    if with_target and target.kind in ("mysql", "postgresql"):
        sources.insert(0, source_class(target.kind)(target.kind, target, min(5.0, max(1.0, interval)),
                                                    per_process=per_process))
    if with_target and any(is_local(s.target) for s in sources):
        server_port = (target.effective_port if target.kind in ("mysql", "postgresql") and is_local(target)
                       and not target.socket else None)
        sources.append(OSSource(timeout_s=1.0, server_port=server_port, per_process=per_process, shared=shared))
    return [SourcePoller(s, interval=interval) for s in sources]
