"""One live run through the probes a KneeSearch asks for: the engine starts
once on the prepared data and keeps its workers; between probes only the
threads (or the arrival rate) change, as the TUI's keys change them, so the
server sees no reconnect storm.  Each probe reads the run every
`timing.interval_s` until its ProbeMeter says it is steady."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from benchtop.knee.probe import ProbeMeter, ProbeTiming
from benchtop.knee.search import KneeSearch, Probe
from benchtop.run.protocol import Sample
from benchtop.run.samples import RunSummary


class Steered(Protocol):
    """What the runner needs of a run (RunController has it)."""

    def start(self) -> None: ...
    def sample(self) -> Sample: ...
    def stop(self, reason: str = "") -> RunSummary: ...
    def set_threads(self, n: int) -> None: ...
    def set_rate(self, rate: float) -> None: ...
    def note(self, kind: str, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class KneeOutcome:
    summary: RunSummary
    reason: str  # why the search ended
    elapsed_s: float
    failed: str | None = None  # the run's error, when it ended the search


class KneeRunner:
    def __init__(self, ctl: Steered, search: KneeSearch, timing: ProbeTiming,
                 on_probe: Callable[[int, Probe, KneeSearch], None] | None = None,
                 stop: threading.Event | None = None, warmup_s: float = 0.0, budget_s: float = 0.0) -> None:
        """`warmup_s`: load before the first probe counts; `budget_s`: the
        whole search ends after this long (0: no limit)."""
        self.ctl = ctl
        self.search = search
        self.timing = timing
        self.on_probe = on_probe
        self.stop_event = stop or threading.Event()
        self.warmup_s = warmup_s
        self.budget_s = budget_s
        self.started = 0.0

    def run(self) -> KneeOutcome:
        search, rate = self.search, self.search.settings.rate
        x = search.next()
        self.started = time.monotonic()
        self.ctl.start()
        failed = None
        reason = ""
        try:
            if x is not None and self.warmup_s > 0:
                failed = self._hold(self.warmup_s)
            while x is not None and failed is None:
                if self.stop_event.is_set():
                    reason = "stopped"
                    break
                if self.budget_s and time.monotonic() - self.started >= self.budget_s:
                    reason = "the time budget is spent"
                    break
                if rate:
                    self.ctl.set_rate(x)
                else:
                    self.ctl.set_threads(int(x))
                self.ctl.note("mark", f"knee probe {len(search.probes) + 1}: "
                              + (f"rate {x:g}/s" if rate else f"{int(x)} threads"))
                self.ctl.sample()  # the probe's intervals start at the change
                probe, failed = self._measure(x)
                if probe is None:
                    reason = reason or ("stopped" if failed is None else "")
                    break
                search.record(probe)
                if self.on_probe is not None:
                    self.on_probe(len(search.probes), probe, search)
                x = search.next()
        finally:
            reason = reason or (f"error: {failed}" if failed else search.reason)
            summary = self.ctl.stop(reason if not failed else f"error: {failed}")
        return KneeOutcome(summary, reason, time.monotonic() - self.started, failed)

    def _measure(self, x: float) -> tuple[Probe | None, str | None]:
        meter = ProbeMeter(x, self.timing)
        next_at = time.monotonic() + self.timing.interval_s
        while True:
            if self.stop_event.wait(max(0.0, next_at - time.monotonic())):
                return None, None
            next_at += self.timing.interval_s
            s = self.ctl.sample()
            if s.failed:
                return None, s.failed
            iv = s.interval
            errors = sum(v for k, v in iv.errors.items() if k != "fatal")
            if meter.add(iv.dt, iv.transactions, errors, iv.latency):
                return meter.result(), None

    def _hold(self, seconds: float) -> str | None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.stop_event.wait(min(self.timing.interval_s, max(0.0, end - time.monotonic()))):
                return None
            s = self.ctl.sample()
            if s.failed:
                return s.failed
        return None
