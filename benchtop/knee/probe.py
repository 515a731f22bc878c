"""When one probe has measured enough: its interval throughputs are steady
(coefficient of variation over the last few intervals under a threshold)
and enough transactions were counted for a p99, or it has run for the
longest a probe may.  The first `settle_s` after the
setting changed (new workers connecting, queues draining) is not counted."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from benchtop.engine.histogram import Histogram
from benchtop.knee.search import Probe


@dataclass(frozen=True, slots=True)
class ProbeTiming:
    # Short readings: a steady setting shows it within a second on the
    # workloads measured (bench/knee_vs_sweep.py), and every second a probe
    # holds past that is a second the search spends where a sweep spends ten.
    interval_s: float = 0.25  # readings within a probe
    settle_s: float = 0.25  # not counted after a change
    min_s: float = 1.0  # counted time before a probe may end
    max_s: float = 6.0  # a probe ends here, steady or not
    cv: float = 0.05  # steady: the interval TPS's coefficient of variation over the window is below this
    window: int = 4  # intervals the steadiness is judged over
    # a p99 needs a tail to stand on: ten transactions beyond it
    min_transactions: int = 1000

    def check(self) -> None:
        for name in ("interval_s", "min_s", "max_s", "cv"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"the probe's {name} must be a positive number, not {value:g}")
        if not (math.isfinite(self.settle_s) and self.settle_s >= 0):
            raise ValueError(f"the probe's settle time must be 0 or more seconds, not {self.settle_s:g}")
        if self.max_s < self.min_s:
            raise ValueError(f"the longest probe ({self.max_s:g} s) is shorter than the shortest ({self.min_s:g} s)")
        if self.min_transactions < 0:
            raise ValueError(f"the probe's minimum transactions must be 0 or more, not {self.min_transactions}")
        if self.window < 2:
            raise ValueError("the steadiness window needs at least 2 intervals")


def cv_of(values: list[float]) -> float:
    """Coefficient of variation (population): 0 for constant values, inf without a mean.

    >>> cv_of([100.0, 100.0]), round(cv_of([90.0, 110.0]), 3)
    (0.0, 0.1)
    """
    mean = statistics.fmean(values) if values else 0.0
    return statistics.pstdev(values) / mean if mean > 0 else math.inf


@dataclass
class ProbeMeter:
    x: float
    timing: ProbeTiming
    elapsed_s: float = 0.0
    counted_s: float = 0.0
    transactions: int = 0
    errors: int = 0
    tps: list[float] = field(default_factory=list)
    latency: Histogram = field(default_factory=Histogram.empty)

    def add(self, dt: float, transactions: int, errors: int, latency: Histogram) -> bool:
        """One interval of the probe; True when the probe is done."""
        began = self.elapsed_s
        self.elapsed_s += dt
        if began < self.timing.settle_s - 1e-9 or dt <= 0:
            # an interval that began while the change settled is not the setting's own
            return False
        self.counted_s += dt
        self.transactions += transactions
        self.errors += errors
        self.tps.append(transactions / dt)
        self.latency = self.latency + latency
        return self.steady or self.counted_s >= self.timing.max_s

    @property
    def cv(self) -> float:
        window = self.tps[-self.timing.window:]
        return cv_of(window) if len(window) >= 2 else math.inf

    @property
    def steady(self) -> bool:
        return (self.counted_s >= self.timing.min_s - 1e-9 and len(self.tps) >= self.timing.window
                and self.transactions >= self.timing.min_transactions
                and self.cv <= self.timing.cv)

    def result(self) -> Probe:
        p99 = self.latency.percentiles_ms([99.0])[99.0] if self.latency.total else math.inf
        tps = self.transactions / self.counted_s if self.counted_s > 0 else 0.0
        return Probe(self.x, tps, p99, self.transactions, self.errors, self.counted_s,
                     self.cv if math.isfinite(self.cv) else 0.0, self.steady)
