"""A round whose sides take turns: both sides' runs are open at once and
one runs while the other is paused, a short turn each, until both runs end.
A neighbour that starts, a cache that warms or a drift of the host then
falls on both sides within the same second, not on one side's whole run,
which is what widened the intervals of rounds run one side after the other
on a shared host.  Each side's rate is its transactions over the time it
ran in its measured window (`Turns.ran_s`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

TURN_S = 0.5  # a side's turn: short against the seconds a neighbour's load lasts, long against a transaction


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
    its period every side's turns sit once at each phase of a disturbance
    that recurs every two turns (benchtop's own readings each second,
    against turns of half a second) and on either side of a steady drift,
    where A B A B would put a reading at the start of the same side's turn
    every time: that side measured about 10% slower in a test with no
    difference between them.

    >>> turn_order(2)
    [0, 1, 1, 0]
    """
    return [*range(n), *reversed(range(n))]


def take_turns(engines: Mapping[str, Pausable], turn_s: float, done: threading.Event,
               clock: Callable[[], float] = time.monotonic, cpu: Callable[[], float] = time.process_time) -> Turns:
    """Gives `engines` (in their order: the first runs first) turns of
    `turn_s` in `turn_order` until `done` is set; the others are paused
    from the call on, so call it before their runs start.  A side is paused
    before the next is resumed: the two never run at once."""
    names = list(engines)
    order = turn_order(len(names))
    turns = Turns({name: [] for name in names})
    for name in names[1:]:
        engines[name].set_paused(True)
    step, began = 0, clock()
    current, since, cpu_since = names[order[0]], began, cpu()

    def ended(now: float) -> None:
        turns.spans[current].append(Span(since, now, cpu_since, cpu()))

    while not done.wait(max(0.0, began + (step + 1) * turn_s - clock())):
        step += 1
        following = names[order[step % len(order)]]
        if following == current:  # its next turn follows on: it runs on
            continue
        engines[current].set_paused(True)
        ended(clock())
        engines[following].set_paused(False)
        current, since, cpu_since = following, clock(), cpu()
    ended(clock())
    return turns
