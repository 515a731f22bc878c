"""A controller made of another that it passes through (a knee search's one
run, a scenario's running step, the metered run that /metrics reads):
`DelegatingController` hands every call of the controller protocol to that
inner controller, so a subclass writes only what differs (its readings,
notices, end, or what it shows)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Sequence

from benchtop.record.controller import Controller, Notice, Sample
from benchtop.record.knee import KneeView
from benchtop.record.samples import IntervalStats, RunSummary, TimelineEvent
from benchtop.record.workers import Workers


class DelegatingController(ABC):
    """The controller protocol (benchtop.record.controller), from `_ctl`."""

    @property
    @abstractmethod
    def _ctl(self) -> Controller:
        """The controller acted on now (read at each call: a scenario's changes between steps)."""

    # -- what it shows ------------------------------------------------------------
    @property
    def label(self) -> str:
        return self._ctl.label

    @property
    def target(self) -> str:
        return self._ctl.target

    @property
    def workload(self) -> str:
        return self._ctl.workload

    @property
    def report_interval(self) -> float:
        return self._ctl.report_interval

    @property
    def threads(self) -> int:
        return self._ctl.threads

    @property
    def workers(self) -> Workers:
        return self._ctl.workers

    @property
    def rate(self) -> float:
        return self._ctl.rate

    @property
    def paused(self) -> bool:
        return self._ctl.paused

    @property
    def groups(self) -> list[tuple[str, int, float]]:
        return self._ctl.groups

    @property
    def elapsed(self) -> float:
        return self._ctl.elapsed

    @property
    def remaining(self) -> float | None:
        return self._ctl.remaining

    def ends_at(self) -> float | None:
        return self._ctl.ends_at()

    def deadline(self) -> float | None:
        return self._ctl.deadline()

    def load_ended(self) -> bool:
        return self._ctl.load_ended()

    @property
    def knee(self) -> KneeView | None:
        return self._ctl.knee

    @property
    def errors_total(self) -> int:
        return self._ctl.errors_total

    @property
    def reconnects_total(self) -> int:
        return self._ctl.reconnects_total

    @property
    def history(self) -> Sequence[IntervalStats]:
        return self._ctl.history

    @property
    def timeline(self) -> Sequence[TimelineEvent]:
        return self._ctl.timeline

    # -- the run ------------------------------------------------------------------
    def start(self) -> None:
        self._ctl.start()

    def sample(self) -> Sample:
        return self._ctl.sample()

    def notices(self) -> list[Notice]:
        return self._ctl.notices()

    def stop(self, reason: str = "") -> RunSummary | None:
        return self._ctl.stop(reason)

    def final_sample(self) -> Sample | None:
        return self._ctl.final_sample()

    def hurry(self) -> None:
        self._ctl.hurry()

    # -- knobs --------------------------------------------------------------------
    def set_threads(self, n: int) -> None:
        self._ctl.set_threads(n)

    def set_rate(self, rate: float) -> None:
        self._ctl.set_rate(rate)

    def set_paused(self, paused: bool) -> None:
        self._ctl.set_paused(paused)

    def set_group_threads(self, name: str, n: int) -> None:
        self._ctl.set_group_threads(name, n)

    def set_group_rate(self, name: str, rate: float) -> None:
        self._ctl.set_group_rate(name, rate)

    def mark(self, text: str) -> None:
        self._ctl.mark(text)

    def note(self, kind: str, text: str) -> None:
        self._ctl.note(kind, text)

    def cycle_instrumentation(self) -> str | None:
        return self._ctl.cycle_instrumentation()

    def save(self, prefix: Path) -> list[Path]:
        return self._ctl.save(prefix)
