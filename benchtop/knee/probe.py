"""When one probe has measured enough: its throughput and its p99 are both
steady, or it has run for the longest a probe may (then it is marked not
steady).  The probe's successive parts (sub-intervals of about equal
transactions) must agree: their TPS within the tolerance of one another
(besides the interval TPS's coefficient of variation over the last few
readings under a threshold), and their p99s too, on enough transactions for
a p99 at all (50 above it: 5,000).  Under a p99 limit "within the tolerance"
is of the limit for a p99 below it: only a difference that large can move
the answer.  A p99 that drifts (a queue building at an arrival rate the
server just misses, a neighbour taking the CPU) keeps the probe going until
its maximum time.  The first `settle_s` after the setting changed (new
workers connecting, queues draining) is not counted."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from benchtop.engine.histogram import Histogram
from benchtop.knee.search import Probe

# the percentile the knee's limit is on
PERCENTILE = 99.0
# a p99 stands on this many transactions above it
TAIL = 50


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
    min_transactions: int = round(TAIL / (1 - PERCENTILE / 100))  # 5,000
    parts: int = 3  # successive sub-intervals whose p99s must agree
    tolerance: float = 0.10  # ... within this share of the lowest

    def check(self) -> None:
        for name in ("interval_s", "min_s", "max_s", "cv", "tolerance"):
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
        if self.parts < 2:
            raise ValueError("the p99's steadiness needs at least 2 parts")


def cv_of(values: list[float]) -> float:
    """Coefficient of variation (population): 0 for constant values, inf without a mean.

    >>> cv_of([100.0, 100.0]), round(cv_of([90.0, 110.0]), 3)
    (0.0, 0.1)
    """
    mean = statistics.fmean(values) if values else 0.0
    return statistics.pstdev(values) / mean if mean > 0 else math.inf


@dataclass(frozen=True, slots=True)
class Reading:
    dt: float
    transactions: int
    latency: Histogram


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
    readings: list[Reading] = field(default_factory=list)
    limit_ms: float | None = None  # the search's p99 limit: a probe clearly over it need not wait to steady

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
        self.readings.append(Reading(dt, transactions, latency))
        return self.steady or self.over_limit or self.counted_s >= self.timing.max_s

    @property
    def over_limit(self) -> bool:
        """Over the p99 limit on enough transactions, its latest part too: a
        queue that builds will not come back under by waiting (a second
        measurement is the search's to ask for)."""
        t, limit = self.timing, self.limit_ms
        if limit is None or self.counted_s < t.min_s - 1e-9 or self.transactions < t.min_transactions:
            return False
        parts = self.parts()
        return bool(parts) and parts[-1][1] > limit and self.latency.percentiles_ms([PERCENTILE])[PERCENTILE] > limit

    @property
    def cv(self) -> float:
        window = self.tps[-self.timing.window:]
        return cv_of(window) if len(window) >= 2 else math.inf

    def parts(self) -> list[tuple[float, float]]:
        """(TPS, p99 ms) of the probe's successive parts: its readings cut
        where the running count passes each share of the transactions (fewer
        parts than asked while there are fewer readings)."""
        total, n = self.transactions, self.timing.parts
        if total <= 0 or len(self.readings) < n:
            return []
        out: list[tuple[float, float]] = []
        dt, count, hist, seen = 0.0, 0, Histogram.empty(), 0
        for r in self.readings:
            dt, count, hist = dt + r.dt, count + r.transactions, hist + r.latency
            seen += r.transactions
            if seen >= total * (len(out) + 1) / n - 1e-9 and hist.total:
                out.append((count / dt, hist.percentiles_ms([PERCENTILE])[PERCENTILE]))
                dt, count, hist = 0.0, 0, Histogram.empty()
        return out

    @property
    def steady(self) -> bool:
        t = self.timing
        if not (self.counted_s >= t.min_s - 1e-9 and len(self.tps) >= t.window
                and self.transactions >= t.min_transactions and self.cv <= t.cv):
            return False
        parts = self.parts()
        if len(parts) < t.parts:
            return False
        # the probe's TPS is its mean over every part: they must agree, not only the last readings
        tps = [x for x, _ in parts]
        if min(tps) <= 0 or max(tps) > (1 + t.tolerance) * min(tps):
            return False
        p99s = [p for _, p in parts]
        # within the tolerance of the p99, or of the limit when the p99 is under it: 6 and 7 us
        # apart under a 5 ms limit cannot move the answer, 4.5 and 7.5 ms under 20 ms can
        scale = max(min(p99s), self.limit_ms or 0.0)
        return scale > 0 and max(p99s) - min(p99s) <= t.tolerance * scale

    def result(self) -> Probe:
        p99 = self.latency.percentiles_ms([PERCENTILE])[PERCENTILE] if self.latency.total else math.inf
        tps = self.transactions / self.counted_s if self.counted_s > 0 else 0.0
        parts = self.parts()
        return Probe(self.x, tps, p99, self.transactions, self.errors, self.counted_s,
                     self.cv if math.isfinite(self.cv) else 0.0, self.steady,
                     tps_parts=tuple(round(t, 2) for t, _ in parts), p99_parts=tuple(round(p, 3) for _, p in parts))
