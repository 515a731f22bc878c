"""A round whose sides take turns: both sides' runs are open at once and
one runs while the other is paused, a short turn each, until both runs end.
A neighbour that starts, a cache that warms or a drift of the host then
falls on both sides within the same second, not on one side's whole run,
which is what widened the intervals of rounds run one side after the other
on a shared host.  Each side's rate is its transactions over the time it
ran in its measured window (`Turns.ran_s`).  A turn's length is drawn at
random around the one asked: whatever else recurs on the host or in
benchtop (the monitor's poll every 2 s, the readings each second) then
falls on either side alike, where turns of a fixed length put it at the
same side's turn every time."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

# a side's turn: short against the swings of a neighbour's load (a hog and a syncing writer beside the
# check's read-only load moved a side's rate by half between one second and the next), long against a
# transaction (one in flight when its side pauses ends during the other's turn)
TURN_S = 0.1
JITTER = 0.5  # a turn lasts TURN_S times 1 +- JITTER, drawn per turn


class Pausable(Protocol):
    def set_paused(self, paused: bool) -> None: ...


@dataclass(frozen=True, slots=True)
class Span:
    """One stretch a side ran: monotonic start and end, and the process's
    CPU seconds read at each."""

    start: float
    end: float
    cpu_start: float = 0.0
    cpu_end: float = 0.0

    def inside(self, start: float, end: float) -> float:
        """Seconds of it within [start, end]."""
        return max(0.0, min(self.end, end) - max(self.start, start))


@dataclass
class Turns:
    """When each side ran."""

    spans: dict[str, list[Span]] = field(default_factory=dict)

    def ran_s(self, side: str, start: float, end: float) -> float:
        """Seconds `side` ran within [start, end].

        >>> Turns({"a": [Span(0.0, 0.5), Span(1.0, 1.5)]}).ran_s("a", 0.25, 1.25)
        0.5
        """
        return sum(span.inside(start, end) for span in self.spans.get(side, ()))

    def cpu_s(self, side: str, start: float, end: float) -> float:
        """The process's CPU seconds during `side`'s turns within [start,
        end] (a turn the window cuts counts its share): the paused side's
        workers sleep, so it is the running side's load and both runs'
        readings, which the order of the turns shares out alike.

        >>> Turns({"a": [Span(0.0, 1.0, 10.0, 10.4)]}).cpu_s("a", 0.5, 2.0)
        0.2
        """
        return round(sum((span.cpu_end - span.cpu_start) * span.inside(start, end) / (span.end - span.start)
                         for span in self.spans.get(side, ()) if span.end > span.start), 9)


def turn_order(n: int) -> list[int]:
    """The sides' turns, repeated: each in order, then back (A B B A).  Over
    its period every side's turns sit on either side of a steady drift and
    once at each phase of a disturbance that recurs every two turns, where
    A B A B with turns of half a second put benchtop's reading each second
    at the start of the same side's turn every time: that side measured
    about 10% slower in a test with no difference between them.  (A period
    of four turns can still meet a disturbance at one phase: the turns'
    random lengths see to those.)

    >>> turn_order(2)
    [0, 1, 1, 0]
    """
    return [*range(n), *reversed(range(n))]


def turn_lengths(turn_s: float, rng: random.Random) -> Iterator[float]:
    """Each turn's seconds: `turn_s` times 1 +- JITTER, drawn uniformly."""
    while True:
        yield turn_s * rng.uniform(1 - JITTER, 1 + JITTER)


def take_turns(engines: Mapping[str, Pausable], turn_s: float, done: threading.Event,
               clock: Callable[[], float] = time.monotonic, cpu: Callable[[], float] = time.process_time,
               rng: random.Random | None = None) -> Turns:
    """Gives `engines` (in their order: the first runs first) turns of
    about `turn_s` (drawn from `rng`) in `turn_order` until `done` is set;
    the others are paused from the call on, so call it before their runs
    start.  A side is paused before the next is resumed: the two never run
    at once."""
    lengths = turn_lengths(turn_s, rng or random.Random())
    names = list(engines)
    order = turn_order(len(names))
    turns = Turns({name: [] for name in names})
    for name in names[1:]:
        engines[name].set_paused(True)
    step, began = 0, clock()
    current, since, cpu_since = names[order[0]], began, cpu()
    boundary = began + next(lengths)

    def ended(now: float) -> None:
        turns.spans[current].append(Span(since, now, cpu_since, cpu()))

    while not done.wait(max(0.0, boundary - clock())):
        step += 1
        boundary += next(lengths)
        following = names[order[step % len(order)]]
        if following == current:  # its next turn follows on: it runs on
            continue
        engines[current].set_paused(True)
        ended(clock())
        engines[following].set_paused(False)
        current, since, cpu_since = following, clock(), cpu()
    ended(clock())
    return turns
