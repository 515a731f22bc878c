"""A probe's measurement: the settling interval is left out, a steady probe
ends at its minimum time, a noisy one at its maximum, and a long stall while
the setting changes does not end it."""

from __future__ import annotations

from benchtop.engine.histogram import Histogram
from benchtop.knee.probe import ProbeMeter, ProbeTiming

LAT = Histogram.from_values_ns([100_000] * 99 + [5_000_000])  # p99 at 0.1 ms, one slow one


def feed(meter: ProbeMeter, tps: list[float], dt: float = 0.5) -> int:
    for i, v in enumerate(tps):
        if meter.add(dt, int(v * dt), 0, LAT):
            return i + 1
    return 0


def test_steady_probe_ends_at_its_minimum_time() -> None:
    meter = ProbeMeter(8, ProbeTiming(interval_s=0.5, settle_s=0.5, min_s=2.0, max_s=8.0, cv=0.05))
    n = feed(meter, [50.0] + [10000.0] * 20)  # the first interval settles (new workers connecting)
    assert n == 5
    p = meter.result()
    assert p.steady and p.time_s == 2.0 and p.tps == 10000.0 and p.x == 8
    assert p.tps_parts == (10000.0,) * 3 and len(p.p99_parts) == 3
    assert 0.09 < p.p99_ms < 0.11


def test_noisy_probe_ends_at_its_maximum_time() -> None:
    meter = ProbeMeter(4, ProbeTiming(interval_s=0.5, settle_s=0.5, min_s=1.0, max_s=3.0, cv=0.05))
    n = feed(meter, [1000.0, 500.0] * 20)
    assert n == 7
    p = meter.result()
    assert not p.steady and p.time_s == 3.0 and p.cv > 0.3


def test_a_stall_while_settling_is_not_the_probe() -> None:
    meter = ProbeMeter(2, ProbeTiming(interval_s=0.5, settle_s=0.5, min_s=1.0, max_s=2.0))
    assert not meter.add(4.0, 100, 0, LAT)  # one long interval across the change: left out, not the end
    assert meter.counted_s == 0
    assert feed(meter, [10000.0] * 10) == 4


def test_a_steady_probe_waits_for_enough_transactions_for_its_p99() -> None:
    # 200 tps in 0.25 s readings: steady at once, but a p99 needs a thousand transactions (five seconds)
    meter = ProbeMeter(1, ProbeTiming(interval_s=0.25, settle_s=0.0, min_s=1.0, max_s=8.0, cv=0.05,
                                      min_transactions=1000))
    n = feed(meter, [200.0] * 40, dt=0.25)
    assert n == 20
    p = meter.result()
    assert p.steady and p.transactions == 1000 and p.time_s == 5.0


def tail_at(p99_ms: float, n: int) -> Histogram:
    """n transactions, 2% of them at `p99_ms` (the p99), the rest at a tenth of it."""
    k = max(1, n // 50)
    return Histogram.from_values_ns([int(p99_ms * 1e5)] * (n - k) + [int(p99_ms * 1e6)] * k)


def test_a_p99_that_drifts_keeps_a_steady_tps_probe_going_and_unsteady() -> None:
    # an arrival rate met in full (TPS flat) while its p99 climbs: once TPS alone called it steady at 1 s
    timing = ProbeTiming(interval_s=0.5, settle_s=0.0, min_s=1.0, max_s=6.0, cv=0.05)
    meter = ProbeMeter(2000, timing)
    ended = 0
    for i in range(12):
        if meter.add(0.5, 1000, 0, tail_at(2.0 + 2.0 * i, 100)):
            ended = i + 1
            break
    p = meter.result()
    assert ended == 12 and not p.steady and p.cv == 0.0
    assert p.p99_parts[0] < p.p99_parts[-1] and p.tps_parts == (2000.0,) * 3
    # with the search's limit, a probe over it on enough transactions ends without waiting for the maximum
    meter = ProbeMeter(2000, timing, limit_ms=10.0)
    assert next(i for i in range(12) if meter.add(0.5, 1000, 0, tail_at(2.0 + 2.0 * i, 100))) < 11
    assert meter.result().p99_ms > 10.0


def test_a_p99_needs_5000_transactions_and_agreeing_parts() -> None:
    assert ProbeTiming().min_transactions == 5000  # 50 above the p99
    meter = ProbeMeter(4, ProbeTiming(interval_s=0.5, settle_s=0.0, min_s=1.0, max_s=10.0, cv=0.05))
    n = feed(meter, [2000.0] * 20)  # 1,000 per reading: steady TPS, the p99 waits for the count
    assert n == 5 and meter.result().steady and meter.transactions == 5000


def test_a_p99_moving_far_under_the_limit_is_steady() -> None:
    # 6 us growing 4% a reading: unsteady on its own, steady under a 5 ms limit it cannot approach
    timing = ProbeTiming(interval_s=0.5, settle_s=0.0, min_s=1.0, max_s=6.0, cv=0.05)
    for limit, ends in ((None, 12), (5.0, 5)):
        meter = ProbeMeter(2, timing, limit_ms=limit)
        assert next(i + 1 for i in range(12) if meter.add(0.5, 1000, 0, tail_at(0.006 * (1 + 0.04 * i), 100))) == ends
        assert meter.result().steady is (limit is not None)


def test_a_probe_whose_parts_disagree_on_tps_is_not_steady_by_its_last_readings() -> None:
    # the first second at 60% (a neighbour's burst), then flat: the last window's cv is 0 two seconds on
    timing = ProbeTiming(interval_s=0.5, settle_s=0.0, min_s=1.0, max_s=6.0, cv=0.05)
    meter = ProbeMeter(2, timing)
    n = feed(meter, [6000.0] * 2 + [10000.0] * 20)
    p = meter.result()
    assert n == 12 and not p.steady and p.cv == 0.0
    assert p.tps_parts == (8400.0, 10000.0, 10000.0)  # the first part still 16% short at the longest
