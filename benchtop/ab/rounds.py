"""The rounds of a comparison: each runs A and B once, in an order drawn at
random per round (so a drift of the host, a cache warming or a neighbour
starting falls on either side alike), each side's server settings applied
just before its run and restored just after it (so the other side, the
next round and whatever follows the comparison find the server as it
was).  The runs are the caller's: `run_side(side, round)` returns the
side's figures, or None when a stop signal cut the run short.  In a duet
(A and B on two targets) a round is one pair run at the same time:
`run_pair(sides, round)` gets both, in the order drawn (the order their
runs are set up in), with both sides' settings applied around it."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Protocol

from benchtop.ab.sides import Side
from benchtop.ab.stats import look_confidence
from benchtop.stopping import StopFlag


@dataclass(frozen=True, slots=True)
class SideFigures:
    """What one side's run measured after its warm-up (its summary), and
    what limited it (the verdict of the run's steady stretch)."""

    folder: str  # the run's results folder, relative to the comparison's
    tps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    cpu_us_per_txn: float | None  # the client's CPU per transaction (None: not measured)
    errors: int
    limit: str | None = None
    evidence: str = ""
    ran_s: float | None = None  # sides that took turns: the seconds it ran (its tps is over them)

    def to_dict(self) -> dict[str, object]:
        turns = {"ran_s": self.ran_s} if self.ran_s is not None else {}
        return {"folder": self.folder, "tps": round(self.tps, 2), "p50_ms": self.p50_ms, "p95_ms": self.p95_ms,
                "p99_ms": self.p99_ms, "cpu_us_per_txn": self.cpu_us_per_txn, "errors": self.errors,
                "limit": self.limit, "evidence": self.evidence, **turns}


@dataclass(frozen=True, slots=True)
class Round:
    index: int  # from 1
    order: tuple[str, str]  # ("b", "a"): B ran first
    a: SideFigures
    b: SideFigures

    @property
    def tps_ratio(self) -> float:
        return self.b.tps / self.a.tps if self.a.tps > 0 else float("nan")

    def to_dict(self) -> dict[str, object]:
        ratio = self.tps_ratio
        return {"round": self.index, "order": list(self.order), "a": self.a.to_dict(), "b": self.b.to_dict(),
                "tps_ratio": None if ratio != ratio else round(ratio, 4)}


@dataclass(frozen=True, slots=True)
class Plan:
    """How many rounds: `rounds` (None with --until-confident alone: no
    count), or until the TPS verdict is decided within `max_time_s`."""

    rounds: int | None
    round_time_s: float
    until_confident: bool = False
    resolution: float = 0.02
    max_time_s: float = 600.0
    duet: bool = False  # each round runs A and B at the same time (benchtop.ab.duet)
    turn_s: float = 0.0  # > 0: within a round the sides take turns this long (benchtop.ab.turns)

    @property
    def takes_turns(self) -> bool:
        """The sides of a round take turns (a duet's run at once)."""
        return self.turn_s > 0 and not self.duet


class Settings(Protocol):
    """A server's settings control (benchtop.target.settings.SettingsControl)."""

    def apply(self, settings: Mapping[str, object]) -> list[str]: ...
    def restore(self) -> list[str]: ...


class RoundRunner:
    """Runs rounds of `sides` ("a" and "b") until the plan is done, `decided()`
    says the comparison is decided (--until-confident) or `stop` is set.
    `settings_of(side)`: the control that applies that side's settings
    (None: the side sets none).  `on_round` gets each finished round.
    `run_pair`: a duet's rounds, both sides at once (then `run_side` is
    not called)."""

    def __init__(self, sides: Mapping[str, Side], plan: Plan, run_side: Callable[[Side, int], SideFigures | None],
                 settings_of: Callable[[Side], Settings | None], stop: StopFlag,
                 decided: Callable[[list[Round], float], bool] = lambda rounds, confidence: False,
                 on_round: Callable[[Round], None] = lambda r: None, rng: random.Random | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 run_pair: Callable[[tuple[Side, Side], int], Mapping[str, SideFigures] | None] | None = None) -> None:
        self.sides = sides
        self.plan = plan
        self.run_side = run_side
        self.run_pair = run_pair
        self.settings_of = settings_of
        self.stop = stop
        self.decided = decided
        self.on_round = on_round
        self.rng = rng or random.Random()
        self.clock = clock
        self.rounds: list[Round] = []
        self.stopped_by = ""
        self.horizon: int | None = None  # --until-confident: the most rounds it may look after

    def run(self) -> list[Round]:
        started = self.clock()
        longest = 0.0
        while not self.stopped_by:
            self.stopped_by = self._why_stop(self.clock() - started, longest)
            if self.stopped_by:
                break
            t0 = self.clock()
            done = self._round(len(self.rounds) + 1)
            if done is None:
                self.stopped_by = self.stop.reason or "stopped"
                break
            took = self.clock() - t0
            if self.plan.until_confident and self.horizon is None:
                # the rounds that fit in --max-time at the first one's length: the looks its error is spread over
                fit = math.ceil(self.plan.max_time_s / took) if took > 0 else 6
                self.horizon = max(6, min(fit, self.plan.rounds) if self.plan.rounds is not None else fit)
            longest = max(longest, took)
            self.rounds.append(done)
            self.on_round(done)
        return self.rounds

    def _why_stop(self, elapsed: float, longest: float) -> str:
        plan = self.plan
        if self.stop.event.is_set():
            return self.stop.reason or "stopped"
        if plan.rounds is not None and len(self.rounds) >= plan.rounds:
            return "rounds"
        if plan.until_confident:
            if self.rounds and self.decided(self.rounds, look_confidence(len(self.rounds), self.horizon)):
                return "confident"
            if elapsed + longest > plan.max_time_s:
                return "max-time"
        return ""

    def _round(self, index: int) -> Round | None:
        order = ("a", "b") if self.rng.random() < 0.5 else ("b", "a")
        if self.run_pair is not None:
            return self._pair(index, order, self.run_pair)
        figures: dict[str, SideFigures] = {}
        for name in order:
            if self.stop.event.is_set():
                return None
            side = self.sides[name]
            measured = self._run_with_settings(side, index)
            if measured is None:
                return None
            figures[name] = measured
        return Round(index, order, figures["a"], figures["b"])

    def _pair(self, index: int, order: tuple[str, str],
              run_pair: Callable[[tuple[Side, Side], int], Mapping[str, SideFigures] | None]) -> Round | None:
        if self.stop.event.is_set():
            return None
        pair = (self.sides[order[0]], self.sides[order[1]])
        with ExitStack() as restores:
            for side in pair:
                control = self.settings_of(side) if side.settings else None
                if control is not None:
                    restores.callback(control.restore)  # registered first: a failed apply is undone too
                    control.apply(dict(side.settings))
            figures = run_pair(pair, index)
        if figures is None:
            return None
        return Round(index, order, figures["a"], figures["b"])

    def _run_with_settings(self, side: Side, index: int) -> SideFigures | None:
        control = self.settings_of(side) if side.settings else None
        if control is None:
            return self.run_side(side, index)
        try:
            control.apply(dict(side.settings))
            return self.run_side(side, index)
        finally:
            control.restore()
