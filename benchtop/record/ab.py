"""An A/B comparison as the dashboard draws it: each finished round's TPS
of both sides, the interval of B/A so far with its verdict line, and what
the runs in progress read last.  Made by benchtop.ab (which owns the
rounds and the statistics) and read by the comparison's screen, which runs
a `Comparison` and is handed a new view whenever something changed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class AbPoint:
    """One finished round."""

    index: int  # from 1
    order: tuple[str, str]  # ("b", "a"): B ran first (a duet: set up first)
    a_tps: float
    b_tps: float

    @property
    def ratio(self) -> float | None:
        return self.b_tps / self.a_tps if self.a_tps > 0 else None


@dataclass(frozen=True, slots=True)
class AbLive:
    """A side's run in progress: its latest counted interval (none yet:
    it is warming up)."""

    side: str  # "a" or "b"
    round: int
    t: float  # counted seconds so far
    of: float  # the round's seconds
    tps: float | None = None  # None also when the sides take turns: a run's rate is then over both turns' time
    p99_ms: float | None = None

    @property
    def warming(self) -> bool:
        return self.tps is None and self.p99_ms is None


@dataclass(frozen=True, slots=True)
class AbView:
    """The comparison so far, taken whole at one moment."""

    title: str  # what is compared: the workload, the targets, each side's options
    planned: int | None  # rounds (None: until confident)
    duet: bool
    resolution: float
    rounds: tuple[AbPoint, ...] = ()
    ratio: float | None = None  # B/A of TPS, the Hodges-Lehmann estimate
    ci_low: float | None = None  # its interval (None before there are rounds enough)
    ci_high: float | None = None
    # the interval's: ab.stats.CONFIDENCE (the record sits below ab), higher at a look of --until-confident
    confidence: float = 0.95
    verdict: str = ""  # the verdict line so far
    live: tuple[AbLive, ...] = ()
    ended: str = ""  # why the comparison ended ("" while it runs)
    note: str = ""  # how the sides run, when it is not as asked (a duet halves the threads)


class Comparison(Protocol):
    """A comparison the screen runs: `run` (in a thread worker) runs every
    round, handing `publish` a new view whenever one is due, and returns
    when the comparison has ended; `stop` ends it early (the finished
    rounds are kept)."""

    def run(self, publish: Callable[[AbView], None]) -> None: ...
    def stop(self, reason: str) -> None: ...
