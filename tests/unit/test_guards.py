"""--stop-if conditions: parsing, durations, source-fed metrics."""

from __future__ import annotations

import math

import pytest

from benchtop.engine.histogram import Histogram
from benchtop.record.samples import ERROR_KINDS, IntervalStats
from benchtop.run.guards import Guard, parse_condition
from benchtop.sources.base import Missing, SourceSnapshot


def make_iv(t: float, lat_ms: float = 1.0, n: int = 100, errors: int = 0, dt: float = 1.0,
            paused: bool = False) -> IntervalStats:
    lat = Histogram.from_values_ns([int(lat_ms * 1e6)] * n)
    errs = {k: 0 for k in ERROR_KINDS}
    errs["deadlock"] = errors
    return IntervalStats(
        t=t, dt=dt, threads=4, rate_target=0.0, paused=paused, transactions=n, tps=n / dt, qps=n * 10 / dt,
        reads_per_s=0.0, writes_per_s=0.0, other_per_s=0.0, errors_per_s=errors / dt, reconnects_per_s=0.0,
        errors=errs, latency_ms={"p99": lat_ms, "avg": lat_ms}, service_latency_ms={}, queue=0.0,
        concurrency=0.0, latency=lat, service=lat,
    )


def snap(kind: str, **panels: object) -> SourceSnapshot:
    return SourceSnapshot(name=kind, kind=kind, t=0.0, ok=True, panels=panels)


@pytest.mark.parametrize(
    "spec, metric, op, threshold, unit, for_s",
    [
        ("p99>50ms for 10s", "p99", ">", 50.0, "ms", 10.0),
        ("p95 > 5ms", "p95", ">", 5.0, "ms", 0.0),
        ("p99.9>2s", "p99.9", ">", 2000.0, "ms", 0.0),
        ("errors>1%", "errors", ">", 1.0, "%", 0.0),
        ("errors>=5", "errors", ">=", 5.0, "/s", 0.0),
        ("tps<100 for 30s", "tps", "<", 100.0, "/s", 30.0),
        ("tps<100 for 2m", "tps", "<", 100.0, "/s", 120.0),
        ("max>500us", "max", ">", 0.5, "ms", 0.0),
        ("pool_wait>1s", "pool_wait", ">", 1000.0, "ms", 0.0),
        ("replica_lag>10s", "replica_lag", ">", 10000.0, "ms", 0.0),
        ("checkpoint_age>80%", "checkpoint_age", ">", 80.0, "%", 0.0),
    ],
)
def test_parse_accepts_the_documented_grammar(spec, metric, op, threshold, unit, for_s):
    c = parse_condition(spec)
    assert (c.metric, c.op, c.threshold, c.unit, c.for_s) == (metric, op, threshold, unit, for_s)


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("p99", "expected METRIC OP VALUE"),
        ("latency>5ms", "unknown metric 'latency'"),
        ("p99>50", "takes a time"),
        ("tps<100ms", "a number per second"),
        ("checkpoint_age>80", "a percentage"),
        ("p99>5ms for 10 parsecs", "unknown duration unit"),
        ("p99>5ms for 10y", "unknown duration unit"),
        ("p120>5ms", "between 0 and 100"),
        ("", "expected METRIC"),
    ],
)
def test_bad_specs_are_one_line_value_errors(spec, fragment):
    with pytest.raises(ValueError) as info:
        Guard.parse([spec])
    msg = str(info.value)
    assert fragment in msg
    assert "\n" not in msg


def test_condition_without_for_fires_on_first_interval():
    g = Guard.parse(["p99>50ms"])
    assert g.check(make_iv(1.0, lat_ms=10)) is None
    why = g.check(make_iv(2.0, lat_ms=80))
    assert why is not None and why.startswith("p99>50ms") and "ms" in why


def test_for_duration_needs_an_unbroken_streak():
    g = Guard.parse(["p99>50ms for 3s"])
    assert g.check(make_iv(1.0, lat_ms=80)) is None
    assert g.check(make_iv(2.0, lat_ms=80)) is None
    assert g.check(make_iv(3.0, lat_ms=10)) is None  # streak broken
    assert g.check(make_iv(4.0, lat_ms=80)) is None
    assert g.check(make_iv(5.0, lat_ms=80)) is None
    # intervals a few ms short still count as 3 s
    assert g.check(make_iv(5.995, lat_ms=80, dt=0.995)) is not None


def test_tps_below_and_paused_intervals_do_not_count():
    g = Guard.parse(["tps<100 for 2s"])
    assert g.check(make_iv(1.0, n=50)) is None
    assert g.check(make_iv(2.0, n=50, paused=True)) is None  # a pause breaks the streak
    assert g.check(make_iv(3.0, n=50)) is None
    assert "tps<100 for 2s" in (g.check(make_iv(4.0, n=50)) or "")


def test_errors_percent_is_errors_per_transaction():
    g = Guard.parse(["errors>1%"])
    assert g.check(make_iv(1.0, n=1000, errors=10)) is None  # exactly 1%
    assert g.check(make_iv(2.0, n=1000, errors=11)) is not None
    g = Guard.parse(["errors>1%"])
    assert "all failed" in (g.check(make_iv(1.0, n=0, errors=3)) or "")


def test_source_metrics_fail_at_parse_time_without_their_source():
    with pytest.raises(ValueError, match=r"needs PgBouncer stats: add --pgbouncer DSN$"):
        Guard.parse(["pool_wait>1s"])
    with pytest.raises(ValueError, match=r"--engine postgres without --no-monitor"):
        Guard.parse(["replica_lag>10s"], sources=["mysql"])
    with pytest.raises(ValueError, match=r"--engine mysql without --no-monitor"):
        Guard.parse(["checkpoint_age>80%"], sources=["postgresql"])
    deferred = Guard.parse(["pool_wait>1s"], sources=None)
    assert deferred.needs_sources == ("pgbouncer",)
    with pytest.raises(ValueError):
        deferred.attach(["mysql"])


def test_pool_wait_reads_pgbouncer_pools():
    g = Guard.parse(["pool_wait>1s"], sources=["pgbouncer"])
    g.observe(snap("pgbouncer", pools=[{"database": "sbtest", "maxwait": 0, "maxwait_us": 300000}]))
    assert g.check(make_iv(1.0)) is None
    g.observe(snap("pgbouncer", pools=[{"database": "sbtest", "maxwait": 1, "maxwait_us": 500000},
                                       {"database": "pgbouncer", "maxwait": 9, "maxwait_us": 0}]))
    why = g.check(make_iv(2.0))
    assert why is not None and "1.5 s" in why


def test_replica_lag_and_checkpoint_age():
    g = Guard.parse(["replica_lag>10s", "checkpoint_age>80%"], sources=["postgresql", "mysql"])
    g.observe(snap("postgresql", replication=Missing("no replicas")))
    g.observe(snap("mysql", innodb={"checkpoint_age_pct": 40.0}))
    assert g.check(make_iv(1.0)) is None
    g.observe(snap("postgresql", replication=[{"replay_lag_s": 2.0}, {"replay_lag_s": 12.5}]))
    assert "replica_lag>10s" in (g.check(make_iv(2.0)) or "")
    g = Guard.parse(["checkpoint_age>80%"], sources=["mysql"])
    g.observe(snap("mysql", innodb={"checkpoint_age_pct": 85.2}))
    assert "85.2%" in (g.check(make_iv(1.0)) or "")
    # a failed poll leaves the metric unknown: no stop on stale data
    g.observe(SourceSnapshot(name="mysql", kind="mysql", t=0.0, ok=False, error="down"))
    assert g.check(make_iv(2.0)) is None


def test_percentile_comes_from_the_interval_histogram():
    g = Guard.parse(["p999>5ms"])
    iv = make_iv(1.0, lat_ms=1.0, n=999)
    lat = iv.latency + Histogram.from_values_ns([int(20e6)] * 2)
    iv2 = make_iv(1.0, lat_ms=1.0, n=1001)
    object.__setattr__(iv2, "latency", lat)
    assert g.check(iv2) is not None
    assert math.isclose(iv.latency.percentile_ns(99.9) / 1e6, 1.0, rel_tol=0.01)
