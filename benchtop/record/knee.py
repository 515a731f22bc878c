"""A knee search as the dashboard draws it: a snapshot of its probes, its
best setting and its fitted curve, made by benchtop.knee (which sits above
this record and owns the search) and read by the knee chart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True, slots=True)
class KneePoint:
    """One finished probe."""

    x: float  # threads, or the arrival rate (transactions/s)
    tps: float
    p99_ms: float
    feasible: bool  # within the p99 and error limits


@dataclass(frozen=True, slots=True)
class KneeView:
    """The search so far, taken whole at one moment (the search goes on in a
    worker thread while the screen draws)."""

    low: float  # the searched range
    high: float
    rate: bool  # the setting is the arrival rate, not threads
    p99_limit_ms: float | None
    probes: tuple[KneePoint, ...]
    best: KneePoint | None  # the feasible probe with the highest throughput
    # the fitted curve's throughput at a setting; None before a fit (or for a rate search)
    throughput: Callable[[float], float] | None = None
    peak: float | None = None  # the fit's peak, None when there is none within reach of the range
    limit_crossing: float | None = None  # where the fit expects the p99 limit to break
