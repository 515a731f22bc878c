"""The knee stepper over a run's readings: a time budget spent as the search
finishes leaves it complete; spent before, the search is cut short; the
answer held to confirm it runs its whole time."""

from __future__ import annotations

from types import SimpleNamespace

from benchtop.engine.histogram import Histogram
from benchtop.knee.probe import ProbeTiming
from benchtop.knee.runner import KneeStepper
from benchtop.knee.search import KneeSearch, SearchSettings

LAT = Histogram.from_values_ns([100_000] * 100)
TIMING = ProbeTiming(interval_s=0.5, settle_s=0.0, min_s=1.0, max_s=2.0)


class Knobs:
    def __init__(self) -> None:
        self.threads: list[int] = []

    def set_threads(self, n: int) -> None:
        self.threads.append(n)

    def set_rate(self, rate: float) -> None:
        raise AssertionError("a threads search")

    def note(self, kind: str, text: str) -> None:
        pass


def reading() -> SimpleNamespace:
    interval = SimpleNamespace(dt=0.5, transactions=5000, errors={}, latency=LAT)
    return SimpleNamespace(failed=None, interval=interval)


def drive(high: int) -> KneeSearch:
    search = KneeSearch(SearchSettings(low=1, high=high, p99_limit_ms=5.0))
    stepper = KneeStepper(Knobs(), search, TIMING, budget_s=1e-6)  # spent by the end of the first probe
    stepper.begin()
    while not stepper.feed(reading()):  # type: ignore[arg-type]  # what the stepper reads of a Sample
        pass
    return search


def test_a_budget_spent_as_the_search_finishes_leaves_it_complete() -> None:
    search = drive(high=1)
    assert len(search.probes) == 1 and search.to_dict()["complete"] is True
    assert search.reason == "the bracket is within the tolerance"


def test_a_budget_spent_before_the_search_finishes_cuts_it_short() -> None:
    search = drive(high=8)
    assert len(search.probes) == 1 and search.to_dict()["complete"] is False


def test_the_answer_is_held_for_the_confirmation_whatever_its_steadiness() -> None:
    """A probe ends once steady (here after its 4-reading window, 2 s); held to confirm the answer, the
    setting runs the whole confirm_s."""
    search = KneeSearch(SearchSettings(low=1, high=1, p99_limit_ms=5.0, confirm_s=3.0))
    knobs = Knobs()
    stepper = KneeStepper(knobs, search, TIMING)
    stepper.begin()
    while not stepper.feed(reading()):  # type: ignore[arg-type]  # what the stepper reads of a Sample
        pass
    assert [p.time_s for p in search.probes] == [2.0, 3.0] and knobs.threads == [1, 1]
    assert search.held == [1.0] and search.reason == "the answer kept the limits when held for 3 s"
