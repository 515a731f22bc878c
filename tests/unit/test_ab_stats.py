"""The A/B statistics against scipy on fixed samples: the interval's ends
are where scipy's exact two-sided Wilcoxon signed-rank test of the shifted
log-ratios crosses 0.05, the p-value is scipy's, the estimate is the
median of the Walsh averages; verdicts and the round loop's order and
settings handling."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from benchtop.ab.result import AbResult
from benchtop.ab.rounds import Plan, Round, RoundRunner, SideFigures
from benchtop.ab.sides import parse_side
from benchtop.ab.stats import Outcome, compare, critical_rank, hodges_lehmann, shift_interval, signed_rank_p
from benchtop.stopping import StopFlag

# log-ratios of ten rounds, and of six (the fewest with a 95% interval)
TEN = [0.031, 0.052, -0.012, 0.044, 0.027, 0.061, 0.008, 0.039, -0.004, 0.049]
SIX = [-0.21, -0.18, -0.25, -0.19, -0.23, -0.16]


def exact_p(x: list[float], shift: float) -> float:
    return float(stats.wilcoxon(np.asarray(x) - shift, method="exact").pvalue)


@pytest.mark.parametrize("sample", [TEN, SIX, [0.3, -0.1, 0.05, 0.2, -0.02, 0.11, 0.07, -0.04]])
def test_the_interval_ends_where_scipys_exact_test_starts_to_reject(sample: list[float]) -> None:
    bounds = shift_interval(sample)
    assert bounds is not None
    lo, hi = bounds
    eps = 1e-9
    assert exact_p(sample, lo - eps) <= 0.05 < exact_p(sample, lo + eps)
    assert exact_p(sample, hi + eps) <= 0.05 < exact_p(sample, hi - eps)


def test_fewer_than_six_rounds_have_no_95_percent_interval() -> None:
    # five rounds all one way: scipy's smallest two-sided p is 2/32
    assert exact_p(SIX[:5], 0.0) == pytest.approx(0.0625)
    assert critical_rank(5) == 0 and shift_interval(SIX[:5]) is None
    assert critical_rank(6) == 1 and shift_interval(SIX) == (min(SIX), max(SIX))


def test_the_estimate_and_p_value_are_the_hodges_lehmann_median_and_scipys() -> None:
    walsh = [(TEN[i] + TEN[j]) / 2 for i in range(10) for j in range(i, 10)]
    assert hodges_lehmann(TEN) == pytest.approx(float(np.median(walsh)))
    assert signed_rank_p(TEN) == pytest.approx(stats.wilcoxon(TEN).pvalue)
    assert signed_rank_p([0.0] * 6) == 1.0


def test_a_clear_difference_has_its_sign_and_an_interval_excluding_one() -> None:
    a = [1000.0] * 6
    b = [1000.0 * math.exp(x) for x in SIX]
    tps = compare(a, b, higher_is_faster=True, resolution=0.02)
    assert tps.verdict is Outcome.B_SLOWER
    assert tps.ci_high is not None and tps.ci_high < 1.0
    assert tps.ratio == pytest.approx(math.exp(hodges_lehmann(SIX)))
    # the same ratios as latency: lower is faster
    assert compare(a, b, higher_is_faster=False, resolution=0.02).verdict is Outcome.B_FASTER
    assert compare([1000.0] * 10, [1000.0 * math.exp(x) for x in TEN], True, 0.02).verdict is Outcome.B_FASTER


def test_no_difference_needs_the_interval_within_the_resolution() -> None:
    noise = [0.004, -0.003, 0.002, -0.001, 0.003, -0.004, 0.001, -0.002]
    a = [500.0] * len(noise)
    b = [500.0 * math.exp(x) for x in noise]
    assert compare(a, b, True, resolution=0.02).verdict is Outcome.NO_DIFFERENCE
    wide = compare(a, [500.0 * math.exp(10 * x) for x in noise], True, resolution=0.02)
    assert wide.verdict is Outcome.UNDECIDED and wide.more_rounds is not None and wide.more_rounds > 0
    assert wide.ci_low is not None and wide.ci_high is not None and wide.ci_low < 1 < wide.ci_high


def test_zero_counts_have_no_interval() -> None:
    none = compare([0.0] * 6, [0.0] * 6, False, 0.02, counts=True)
    assert none.verdict is Outcome.NO_DIFFERENCE and none.ratio is None and none.ci_low is None
    some = compare([0.0, 2.0, 0.0, 0.0, 0.0, 0.0], [1.0, 3.0, 0.0, 0.0, 0.0, 0.0], False, 0.02, counts=True)
    assert some.verdict is Outcome.UNDECIDED and some.ratio == 2.0 and some.p_value is None


def test_rounds_that_measured_nothing_decide_nothing() -> None:
    """A round too short for its run to count anything measures 0 tps on
    both sides: that is no measurement, never a difference or none."""
    for a, b in (([0.0] * 6, [0.0] * 6), ([0.0, 0.0], [0.0, 0.0]), ([], [])):
        for higher_is_faster in (True, False):
            c = compare(a, b, higher_is_faster, 0.02)
            assert c.verdict is Outcome.UNDECIDED and c.ratio is None and c.reason, (a, c)
    assert compare([0.0] * 6, [0.0] * 6, True, 0.02).reason == (
        "12 of 12 runs measured 0 (round 1 A, round 1 B, round 2 A, round 2 B, ...): no ratio to compare")
    one = compare([1000.0] * 6, [1000.0] * 5 + [0.0], True, 0.02)
    assert one.verdict is Outcome.UNDECIDED and one.reason.startswith("1 of 12 runs measured 0 (round 6 B)")
    rounds = [Round(i + 1, ("a", "b"), _figures("a", 0.0), _figures("b", 0.0)) for i in range(6)]
    result = AbResult({}, Plan(6, 0.5), rounds, "rounds", 1)
    assert {k: c.verdict for k, c in result.metrics.items()} == dict.fromkeys(
        ("tps", "p50_ms", "p95_ms", "p99_ms", "errors"), Outcome.UNDECIDED)
    assert result.metrics["errors"].reason.startswith("tps: 12 of 12 runs measured 0")
    assert result.verdict is Outcome.UNDECIDED
    assert result.text() == ("undecided: 12 of 12 runs measured 0 (round 1 A, round 1 B, round 2 A, round 2 B, ...): "
                             "no ratio to compare (6 rounds)")
    ab = result.to_dict()["ab"]
    assert ab["verdict"] == "undecided" and ab["metrics"]["tps"]["reason"].startswith("12 of 12 runs measured 0")


def _figures(name: str, tps: float) -> SideFigures:
    return SideFigures(name, tps, 1.0, 2.0, 3.0, None, 0)


class FakeSettings:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def apply(self, settings: dict[str, object]) -> list[str]:
        self.log.append(f"apply {settings}")
        return []

    def restore(self) -> list[str]:
        self.log.append("restore")
        return []


def test_rounds_draw_their_order_and_restore_settings_around_each_side() -> None:
    sides = {"a": parse_side("a", ""), "b": parse_side("b", "--set sync_binlog=0")}
    log: list[str] = []

    def run_side(side, index: int) -> SideFigures:
        log.append(f"run {side.name}{index}")
        return _figures(f"round-{index:02d}-{side.name}", 100.0)

    settings = FakeSettings(log)
    runner = RoundRunner(sides, Plan(8, 1.0), run_side, lambda side: settings, StopFlag(), rng=random.Random(7))
    rounds = runner.run()
    assert [r.index for r in rounds] == list(range(1, 9)) and runner.stopped_by == "rounds"
    orders = {r.order for r in rounds}
    assert orders == {("a", "b"), ("b", "a")}  # both orders drawn in eight rounds of this seed
    for r in rounds:  # B's setting only around B's run, restored before A's
        i = log.index(f"run b{r.index}")
        assert log[i - 1] == "apply {'sync_binlog': 0}" and log[i + 1] == "restore"
        assert log[log.index(f"run a{r.index}") - 1] != "apply {'sync_binlog': 0}"


def test_a_stop_ends_the_rounds_and_still_restores() -> None:
    sides = {"a": parse_side("a", "--set x=1"), "b": parse_side("b", "--set x=2")}
    log: list[str] = []
    stop = StopFlag()

    def run_side(side, index: int) -> SideFigures | None:
        if index == 2:
            stop.set("signal SIGTERM", 15)
            return None
        return _figures(side.name, 10.0)

    runner = RoundRunner(sides, Plan(5, 1.0), run_side, lambda side: FakeSettings(log), stop)
    assert len(runner.run()) == 1 and runner.stopped_by == "signal SIGTERM"
    assert log.count("restore") == log.count("apply {'x': 1}") + log.count("apply {'x': 2}") == 3


def test_until_confident_stops_once_decided() -> None:
    sides = {"a": parse_side("a", ""), "b": parse_side("b", "")}
    runner = RoundRunner(sides, Plan(None, 1.0, until_confident=True), lambda s, i: _figures(s.name, 1.0),
                         lambda s: None, StopFlag(), decided=lambda rounds, confidence: len(rounds) >= 7)
    assert len(runner.run()) == 7 and runner.stopped_by == "confident"


def test_until_confident_judges_each_look_at_a_higher_confidence() -> None:
    """Rounds of 10 s within --max-time 300: the error is spread over 30 looks, each judged stricter than 95%,
    and the result's intervals are the last look's."""
    from benchtop.ab.result import AbResult
    from benchtop.ab.stats import look_confidence

    now = [0.0]

    def ten_seconds(side: object, index: int) -> SideFigures:
        now[0] += 5.0
        return _figures("a", 1000.0 + index)

    seen: list[float] = []

    def decided(rounds: list, confidence: float) -> bool:
        seen.append(confidence)
        return len(rounds) >= 9

    sides = {"a": parse_side("a", ""), "b": parse_side("b", "")}
    runner = RoundRunner(sides, Plan(None, 1.0, until_confident=True, max_time_s=300.0), ten_seconds,
                         lambda s: None, StopFlag(), decided=decided, clock=lambda: now[0])
    assert len(runner.run()) == 9 and runner.horizon == 30
    assert seen == [look_confidence(n, 30) for n in range(1, 10)] and all(c > 0.98 for c in seen)
    result = AbResult(sides, runner.plan, runner.rounds, runner.stopped_by, 1, runner.horizon)
    assert result.tps.confidence == result.confidence == look_confidence(9, 30)
    assert result.to_dict()["ab"]["confidence"] == round(look_confidence(9, 30), 5)
    # counted in advance: one look, at 95%
    assert AbResult(sides, Plan(9, 1.0), runner.rounds, "rounds", 1).tps.confidence == 0.95


def test_the_result_answers_a_regression_check() -> None:
    """What a test suite asserts (the benchtop_ab fixture's value): B at 97%
    of A's TPS and 2% over A's p99 in every round is no regression beyond 5%,
    but is one beyond 1%; with no round there is nothing to rule out."""
    from benchtop.ab.result import AbResult
    from benchtop.ab.rounds import Round

    sides = {"a": parse_side("a", ""), "b": parse_side("b", "--threads 2")}
    rounds = [Round(i, ("a", "b"), SideFigures("a", 1000.0 + i, 1.0, 2.0, 3.0 + i / 100, None, 0),
                    SideFigures("b", 0.97 * (1000.0 + i), 1.0, 2.0, 1.02 * (3.0 + i / 100), None, 0))
              for i in range(1, 7)]
    result = AbResult(sides, Plan(6, 1.0), rounds, "rounds", 1)
    assert result.tps.ratio == pytest.approx(0.97) and result.tps.ci_low == pytest.approx(0.97)
    assert result.tps.no_regression_beyond(0.05) and not result.tps.no_regression_beyond(0.01)
    assert result.p99.ratio == pytest.approx(1.02) and not result.p99.higher_is_faster
    assert result.p99.no_regression_beyond(0.05) and not result.p99.no_regression_beyond(0.01)
    assert result.verdict is Outcome.B_SLOWER and result.complete
    assert result.to_dict()["ab"]["metrics"]["tps"]["ci_low"] == round(result.tps.ci_low, 4)
    empty = AbResult(sides, Plan(6, 1.0), [], "signal SIGTERM", 1)
    assert empty.tps.verdict is Outcome.UNDECIDED and empty.tps.ratio is None and not empty.complete
    assert not empty.tps.no_regression_beyond(0.5)
    with pytest.raises(KeyError, match="no metric 'p42'"):
        result.metric("p42")
