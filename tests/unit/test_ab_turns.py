"""Sides taking turns within a round (benchtop.ab.turns): the second is
paused before anything runs, the turns go A B B A, a side is paused before
the next resumes (never both at once), and the time each ran is what its
spans add up to within a window."""

from __future__ import annotations

import bisect
import itertools
import random
import threading

from benchtop.ab.settings import ab_settings
from benchtop.ab.turns import Span, Turns, take_turns, turn_lengths, turn_order


class _Engine:
    def __init__(self, name: str, log: list[tuple[str, bool]], running: set[str]) -> None:
        self.name, self.log, self.running = name, log, running

    def set_paused(self, paused: bool) -> None:
        self.log.append((self.name, paused))
        if paused:
            self.running.discard(self.name)
        else:
            assert not self.running, f"{self.name} resumed while {self.running} ran"
            self.running.add(self.name)


def test_turns_go_a_b_b_a_and_never_overlap() -> None:
    log: list[tuple[str, bool]] = []
    running = {"b", "a"}  # both engines start unpaused
    engines = {"b": _Engine("b", log, running), "a": _Engine("a", log, running)}
    running.discard("b")  # take_turns pauses the second: the first alone runs from the start
    done = threading.Event()

    def resumed_five(paused: bool, set_paused=engines["a"].set_paused) -> None:
        set_paused(paused)
        if sum(1 for _, p in log if not p) >= 5:
            done.set()  # by count, not a timer: a busy host may run the loop late, never fewer turns

    engines["a"].set_paused = resumed_five  # type: ignore[method-assign]
    turns = take_turns(engines, 0.04, done, rng=random.Random(7))
    assert log[0] == ("a", True)
    resumed = [name for name, paused in log[1:] if not paused]
    # b runs first; then each side's turns come in pairs (b a a b b a ...): one switch every two turns
    assert resumed[:4] == ["a", "b", "a", "b"], log
    spans = turns.spans
    assert spans["b"][0].start <= spans["a"][0].start
    assert all(span.cpu_end >= span.cpu_start for side in "ab" for span in spans[side])  # CPU read at each switch
    both = sorted(spans["a"] + spans["b"], key=lambda span: span.start)
    assert all(earlier.end <= later.start for earlier, later in zip(both, both[1:]))  # never both at once
    # the lengths drawn from the same seed: B's first turn alone, then A's two in a row (a waiting
    # thread wakes late on a busy host, never early: the upper bounds leave room for that)
    drawn = turn_lengths(0.04, random.Random(7))
    one, two = next(drawn), next(drawn) + next(drawn)
    first_b = spans["b"][0].end - spans["b"][0].start
    assert one - 0.002 < first_b < one + 0.25, (first_b, one, two)
    assert two - 0.002 < spans["a"][0].end - spans["a"][0].start < two + 0.25


def test_the_order_of_turns_balances_a_disturbance_every_two_turns() -> None:
    order = turn_order(2) * 3
    # a reading each second against turns of half a second lands on every other turn
    for phase in (0, 1):
        hit = [order[i] for i in range(phase, len(order), 2)]
        assert hit.count(0) == hit.count(1)


def _side_at(times: list[float], lengths: list[float]) -> list[int]:
    """Which side (0: the first) holds the turn at each of `times`."""
    ends = list(itertools.accumulate(lengths))
    order = turn_order(2)
    return [order[bisect.bisect_right(ends, t) % len(order)] for t in times]


def test_a_disturbance_every_two_seconds_falls_on_both_sides_alike() -> None:
    # the monitor polls every 2 s from the session's start: with fixed turns of 0.1 s (20 turns, 5 whole
    # periods of A B B A) every poll met the first side's turn, which read 2-3% slower in A/A comparisons
    polls = [0.05 + 2.0 * k for k in range(60)]
    fixed = _side_at(polls, [0.1] * 1300)
    assert fixed.count(0) == len(polls)
    lengths = list(itertools.islice(turn_lengths(0.1, random.Random(3)), 1300))
    assert all(0.05 <= x <= 0.15 for x in lengths) and abs(sum(lengths) / len(lengths) - 0.1) < 0.005
    drawn = _side_at(polls, lengths)
    assert 20 <= drawn.count(0) <= 40, drawn.count(0)


def test_the_time_a_side_ran_within_a_window() -> None:
    turns = Turns({"a": [Span(0.0, 0.5, 1.0, 1.2), Span(1.5, 2.5, 2.0, 2.4)], "b": [Span(0.5, 1.5, 1.2, 2.0)]})
    assert turns.ran_s("a", 0.0, 2.0) == 1.0
    assert turns.ran_s("b", 1.0, 3.0) == 0.5
    assert turns.ran_s("c", 0.0, 3.0) == 0.0
    # the process's CPU during a side's turns, a turn the window cuts counting its share
    assert abs(turns.cpu_s("a", 0.0, 2.0) - 0.4) < 1e-9  # all of the first turn, half the second


def test_turns_are_a_tenth_of_a_second_unless_set() -> None:
    assert ab_settings({}).plan.turn_s == 0.1
    assert ab_settings({"turn": "250ms"}).plan.turn_s == 0.25
    assert ab_settings({"turn": 0}).plan.turn_s == 0.0


def test_the_live_line_of_sides_taking_turns_shows_no_rate_over_both_turns() -> None:
    from benchtop.ab.rounds import Plan
    from benchtop.ab.view import Progress
    from benchtop.record.controller import Sample
    from benchtop.screens.widgets.ab_chart import live_text
    from tests.tui.fakes import make_interval

    progress = Progress("t", Plan(6, 3.0, turn_s=0.5))
    progress.side_read("a", Sample(make_interval(1), True, t=2.0))
    line = live_text(progress.view()).plain
    # a run's interval rate is over both sides' turns, half the side's own: not shown; its time is of 6 s
    assert line.startswith("round 1/6 · A 2/6 s p99 ") and "tps" not in line, line
    whole = Progress("t", Plan(6, 3.0))
    whole.side_read("a", Sample(make_interval(1), True, t=2.0))
    assert " 2/3 s " in live_text(whole.view()).plain and "tps" in live_text(whole.view()).plain
