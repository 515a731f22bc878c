"""The comparison as the dashboard draws it (benchtop.record.ab), kept up
to date from the rounds and from the runs' intervals, which arrive from
the runs' threads (two at once in a duet)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from benchtop.ab.result import comparisons
from benchtop.ab.rounds import Plan, Round
from benchtop.ab.stats import look_confidence, verdict_text
from benchtop.record.ab import AbLive, AbPoint, AbView
from benchtop.record.controller import Sample

NOTHING_YET = "no round finished yet"


class Progress:
    """Hands `publish` a new view whenever a round ends, a side's run
    starts or reads an interval, and when the comparison ends."""

    def __init__(self, title: str, plan: Plan, publish: Callable[[AbView], None] = lambda view: None,
                 note: str = "") -> None:
        self.plan = plan
        self.publish = publish
        self._lock = threading.Lock()
        self._view = AbView(title, plan.rounds if not plan.until_confident else None, plan.duet, plan.resolution,
                            verdict=NOTHING_YET, note=note)
        self._live: dict[str, AbLive] = {}

    def view(self) -> AbView:
        with self._lock:
            return self._current()

    def _current(self) -> AbView:
        return replace(self._view, live=tuple(self._live[name] for name in sorted(self._live)))

    def _changed(self) -> None:
        with self._lock:
            view = self._current()
        self.publish(view)

    def rounds_done(self, rounds: Sequence[Round], horizon: int | None = None) -> None:
        """The rounds so far (the last one just finished) and their statistics
        (`horizon`: --until-confident's, benchtop.ab.stats.look_confidence)."""
        tps = comparisons(rounds, self.plan.resolution, look_confidence(len(rounds), horizon)).get("tps")
        points = tuple(AbPoint(r.index, r.order, r.a.tps, r.b.tps) for r in rounds)
        with self._lock:
            self._view = replace(self._view, rounds=points, verdict=verdict_text(tps, self.plan.resolution)
                                 if tps is not None else NOTHING_YET,
                                 ratio=tps.ratio if tps else None, ci_low=tps.ci_low if tps else None,
                                 ci_high=tps.ci_high if tps else None,
                                 confidence=tps.confidence if tps else self._view.confidence)
            self._live.clear()
        self._changed()

    def side_read(self, side: str, sample: Sample | None) -> None:
        """A side's run started its warm-up (None) or read a counted interval."""
        with self._lock:
            index = len(self._view.rounds) + 1
            # sides taking turns: each run lasts both turns' time, and an interval's rate is over it all
            turns = self.plan.takes_turns
            of = self.plan.round_time_s * (2 if turns else 1)
            if sample is None:
                self._live[side] = AbLive(side, index, 0.0, of)
            else:
                iv = sample.interval
                self._live[side] = AbLive(side, index, sample.t, of, None if turns else iv.tps,
                                          iv.latency_ms.get("p99"))
        self._changed()

    def ended(self, reason: str) -> None:
        with self._lock:
            self._view = replace(self._view, ended=reason or "ended")
            self._live.clear()
        self._changed()
