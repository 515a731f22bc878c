"""RunMetrics as a collector: counters from counted intervals only, the
summary's totals at the end, buckets summed from the engine's histogram."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from benchtop.engine.histogram import Histogram
from benchtop.errors import UsageError
from benchtop.metrics.endpoint import MetricsEndpoint
from benchtop.metrics.run_metrics import LATENCY_EDGES_S, LatencyTotals, RunMetrics
from benchtop.options.run_options import options_from_argv
from benchtop.record.controller import Sample
from benchtop.record.samples import IntervalStats, RunSummary
from tests.fixtures.local import free_port


def _interval(n: int, ms: float) -> IntervalStats:
    hist = Histogram.from_values_ns([int(ms * 1e6)] * n)
    return IntervalStats(t=1.0, dt=1.0, threads=4, rate_target=0.0, paused=False, transactions=n, tps=float(n),
                         qps=0.0, reads_per_s=10.0 * n, writes_per_s=0.0, other_per_s=0.0, errors_per_s=0.0,
                         reconnects_per_s=0.0, errors={"deadlock": 1}, latency_ms={"avg": ms}, service_latency_ms={},
                         queue=0.0, concurrency=4.0, latency=hist, service=hist, txn_by_type=(n,))


def _values(metrics: RunMetrics) -> dict[str, float]:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(metrics)
    out = {}
    for line in generate_latest(reg).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_warm_up_is_left_out_and_counted_intervals_add_up() -> None:
    m = RunMetrics("sqlite", "oltp_read_write", "sqlite:x", txn_names=("read_write",))
    m.add(Sample(_interval(50, 2.0), counted=False, t=0.0))
    m.add(Sample(_interval(100, 2.0), counted=True, t=1.0))
    m.add(Sample(_interval(300, 20.0), counted=True, t=2.0))
    v = _values(m)
    assert v["benchtop_transactions_total"] == 400
    assert v['benchtop_type_transactions_total{type="read_write"}'] == 400
    assert v['benchtop_errors_total{kind="deadlock"}'] == 2
    assert v['benchtop_queries_total{kind="read"}'] == 4000
    assert v["benchtop_threads"] == 4
    assert v["benchtop_latency_seconds_count"] == 400
    assert v["benchtop_latency_seconds_sum"] == pytest.approx(100 * 0.002 + 300 * 0.02)
    # 2 ms and 20 ms fall at or under the edges just above them, and not under the ones below
    le_2ms = [e for e in LATENCY_EDGES_S if e >= 0.002][0]
    le_20ms = [e for e in LATENCY_EDGES_S if e >= 0.02][0]
    assert v[f'benchtop_latency_seconds_bucket{{le="{le_2ms!r}"}}'] == 100
    assert v[f'benchtop_latency_seconds_bucket{{le="{le_20ms!r}"}}'] == 400
    assert v['benchtop_latency_seconds_bucket{le="+Inf"}'] == 400
    assert v["benchtop_run_finished"] == 0


def test_buckets_are_cumulative_and_end_at_the_total() -> None:
    hist = Histogram.from_values_ns([1_000, 50_000, 3_000_000, 3_000_000, 10**12])
    buckets = LatencyTotals().plus(hist, 1.0).cumulative()
    counts = [c for _, c in buckets]
    assert counts == sorted(counts) and buckets[-1] == ("+Inf", 5.0)
    assert counts[-2] == 4  # 1000 s is past the last edge: only +Inf holds it


def test_listen_address_and_linger_are_checked_where_they_enter() -> None:
    with pytest.raises(UsageError, match="HOST:PORT"):
        options_from_argv("run", ["--metrics-listen", "nowhere:port"])
    with pytest.raises(UsageError, match="--metrics-linger"):
        options_from_argv("run", ["--metrics-linger", "inf"])
    opts = options_from_argv("run", ["--metrics-listen", ":9187"])
    assert (opts.metrics_listen, opts.metrics_linger_s) == (":9187", 5.0)


def test_a_port_in_use_is_one_line() -> None:
    port = free_port()
    first = MetricsEndpoint(f"127.0.0.1:{port}", [])
    try:
        with pytest.raises(UsageError, match="cannot listen there"):
            MetricsEndpoint(f"127.0.0.1:{port}", [])
    finally:
        first.close()


def test_finish_sets_the_summary_totals() -> None:
    m = RunMetrics("sqlite", "w", "t")
    m.add(Sample(_interval(10, 1.0), counted=True, t=1.0))
    iv = _interval(12, 1.0)
    s = RunSummary(time_s=2.0, threads=4, rate=0.0, transactions=12, rollbacks=0, reads=120, writes=0, other=0,
                   errors={"deadlock": 1}, reconnects=0, connects=4, connect_ms_avg=1.0,
                   latency_ms={"avg": 1.0}, service_latency_ms={"avg": 1.0}, latency=iv.latency,
                   service=iv.service, txn_types={"t": 12})
    m.finish(s)
    v = _values(m)
    assert v["benchtop_transactions_total"] == 12 and v["benchtop_run_finished"] == 1
    assert v["benchtop_latency_seconds_count"] == 12
