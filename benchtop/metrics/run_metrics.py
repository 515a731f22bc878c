"""A run's metrics: cumulative counters and the latency histogram, added up
from the counted intervals as the run loop samples them and set to the
summary's totals when the run ends (so the last scrape equals summary.json).

Prometheus's `rate()` wants counters that only grow: warm-up intervals are
left out, as they are from the summary."""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence, TypeVar

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)

from benchtop.engine.histogram import Histogram, bucket_bounds
from benchtop.record.controller import Controller, Sample
from benchtop.record.delegate import DelegatingController
from benchtop.record.samples import IntervalStats, RunSummary

# le edges of benchtop_latency_seconds: ten per decade, 1 µs .. 100 s, each
# summed from the engine's finer buckets (their upper edges at or below it)
LATENCY_EDGES_S: tuple[float, ...] = tuple(round(10 ** (e / 10), 12) for e in range(-60, 21))


@dataclass(frozen=True)
class LatencyTotals:
    """A histogram as Prometheus carries it: counts per engine bucket, and
    the sum of the latencies in seconds."""

    hist: Histogram = field(default_factory=Histogram.empty)
    sum_s: float = 0.0

    def plus(self, hist: Histogram, avg_ms: float) -> LatencyTotals:
        return LatencyTotals(self.hist + hist, self.sum_s + avg_ms / 1000.0 * hist.total)

    def cumulative(self) -> list[tuple[str, float]]:
        """(le, cumulative count) for every edge and +Inf."""
        counts = [0] * len(LATENCY_EDGES_S)
        _, highs = bucket_bounds()
        for i, c in enumerate(self.hist.counts):
            if c:
                at = bisect.bisect_left(LATENCY_EDGES_S, highs[i] / 1e9)
                if at < len(counts):
                    counts[at] += c
        out, running = [], 0
        for edge, c in zip(LATENCY_EDGES_S, counts):
            running += c
            out.append((repr(edge), float(running)))
        out.append(("+Inf", float(self.hist.total)))
        return out


@dataclass(frozen=True)
class RunTotals:
    """Everything a scrape reports, one immutable value swapped in whole."""

    transactions: float = 0.0
    reads: float = 0.0
    writes: float = 0.0
    other: float = 0.0
    reconnects: float = 0.0
    errors: dict[str, float] = field(default_factory=dict)
    by_type: dict[str, float] = field(default_factory=dict)
    by_group: dict[str, float] = field(default_factory=dict)
    by_host: dict[tuple[str, str], float] = field(default_factory=dict)
    latency: LatencyTotals = field(default_factory=LatencyTotals)
    service: LatencyTotals = field(default_factory=LatencyTotals)
    threads: int = 0
    rate_target: float = 0.0
    group_knobs: dict[str, tuple[int, float]] = field(default_factory=dict)
    host_threads: dict[tuple[str, str], int] = field(default_factory=dict)
    queue: float = 0.0
    concurrency: float = 0.0
    tps: float = 0.0
    finished: bool = False


K = TypeVar("K")


def _added(total: dict[K, float], more: dict[K, float]) -> dict[K, float]:
    out = dict(total)
    for k, v in more.items():
        out[k] = out.get(k, 0.0) + v
    return out


class RunMetrics:
    """The collector of one run (registered on a MetricsEndpoint): `add()`
    each counted interval, `finish()` with the summary."""

    def __init__(self, engine: str, workload: str, target: str, txn_names: Sequence[str] = ()) -> None:
        self.info = {"engine": engine, "workload": workload, "target": target}
        self.txn_names = tuple(txn_names)
        self._lock = threading.Lock()
        self._totals = RunTotals()
        self._started = time.time()

    @property
    def totals(self) -> RunTotals:
        with self._lock:
            return self._totals

    def add(self, sample: Sample) -> None:
        """One reading of the run: counted intervals add to the counters,
        every reading sets the gauges (a warm-up shows its threads too)."""
        iv = sample.interval
        with self._lock:
            t = self._totals
            t = replace(t, threads=iv.threads, rate_target=iv.rate_target, queue=iv.queue,
                        concurrency=iv.concurrency, tps=iv.tps,
                        group_knobs={g.name: (g.threads, g.rate) for g in iv.groups},
                        host_threads={(h.host, h.node): h.threads for h in sample.hosts})
            if sample.counted:
                t = self._counted(t, iv, sample)
            self._totals = t

    def _counted(self, t: RunTotals, iv: IntervalStats, sample: Sample) -> RunTotals:
        types = dict(zip(self.txn_names, map(float, iv.txn_by_type)))
        return replace(
            t,
            transactions=t.transactions + iv.transactions,
            reads=t.reads + iv.reads_per_s * iv.dt,
            writes=t.writes + iv.writes_per_s * iv.dt,
            other=t.other + iv.other_per_s * iv.dt,
            reconnects=t.reconnects + iv.reconnects_per_s * iv.dt,
            errors=_added(t.errors, {k: float(v) for k, v in iv.errors.items() if v}),
            by_type=_added(t.by_type, types),
            by_group=_added(t.by_group, {g.name: float(g.transactions) for g in iv.groups}),
            by_host=_added(t.by_host, {(h.host, h.node): float(h.transactions) for h in sample.hosts}),
            latency=t.latency.plus(iv.latency, iv.latency_ms.get("avg", 0.0)),
            service=t.service.plus(iv.service, iv.service_latency_ms.get("avg", 0.0)),
        )

    def finish(self, summary: RunSummary | None) -> None:
        """The summary's totals replace the sums of intervals (they also hold
        the part of the last interval no line printed)."""
        with self._lock:
            t = replace(self._totals, finished=True, tps=0.0, concurrency=0.0, queue=0.0)
            if summary is not None:
                s = summary
                t = replace(
                    t,
                    transactions=float(s.transactions), reads=float(s.reads), writes=float(s.writes),
                    other=float(s.other), reconnects=float(s.reconnects),
                    errors={k: float(v) for k, v in s.errors.items() if v or k in t.errors},
                    by_type={k: float(v) for k, v in s.txn_types.items()} or t.by_type,
                    by_group={g.name: float(g.transactions) for g in s.groups} or t.by_group,
                    by_host={(h.host, h.node): float(h.transactions) for h in s.hosts} or t.by_host,
                    latency=LatencyTotals().plus(s.latency, s.latency_ms.get("avg", 0.0)),
                    service=LatencyTotals().plus(s.service, s.service_latency_ms.get("avg", 0.0)),
                )
            self._totals = t

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        t = self.totals
        info = InfoMetricFamily("benchtop_run", "What runs: engine, workload and target (never a password)")
        info.add_metric([], self.info)
        yield info
        yield GaugeMetricFamily("benchtop_run_start_time_seconds", "When the run started (Unix time)",
                                value=self._started)
        yield GaugeMetricFamily("benchtop_run_finished", "1 once the run has ended (the totals are the summary's)",
                                value=float(t.finished))
        yield CounterMetricFamily("benchtop_transactions", "Transactions completed (warm-up excluded)",
                                  value=t.transactions)
        q = CounterMetricFamily("benchtop_queries", "Statements run, by kind (sysbench's read/write/other)",
                                labels=["kind"])
        for kind, v in (("read", t.reads), ("write", t.writes), ("other", t.other)):
            q.add_metric([kind], v)
        yield q
        e = CounterMetricFamily("benchtop_errors", "Errors by kind (deadlocks, lock waits, lost connections, ...)",
                                labels=["kind"])
        for kind, v in sorted(t.errors.items()):
            e.add_metric([kind], v)
        yield e
        yield CounterMetricFamily("benchtop_reconnects", "Connections made again during the run", value=t.reconnects)
        yield from self._labelled(t)
        for name, doc, lat in (("benchtop_latency_seconds", "Transaction latency from the intended start "
                                "(coordinated-omission corrected in open loop)", t.latency),
                               ("benchtop_service_latency_seconds", "Transaction latency from the actual start",
                                t.service)):
            yield HistogramMetricFamily(name, doc, buckets=lat.cumulative(), sum_value=lat.sum_s)
        yield GaugeMetricFamily("benchtop_threads", "Worker threads now", value=float(t.threads))
        yield GaugeMetricFamily("benchtop_rate_target", "Open-loop arrival rate asked for, per second (0: closed loop)",
                                value=t.rate_target)
        yield GaugeMetricFamily("benchtop_queue", "Open loop: transactions due but not started (interval average)",
                                value=t.queue)
        yield GaugeMetricFamily("benchtop_concurrency", "Busy workers (interval average)", value=t.concurrency)

    def _labelled(self, t: RunTotals) -> Iterator[Metric]:
        by_type = CounterMetricFamily("benchtop_type_transactions", "Transactions by the workload's transaction type",
                                      labels=["type"])
        for name, v in t.by_type.items():
            by_type.add_metric([name], v)
        yield by_type
        by_group = CounterMetricFamily("benchtop_group_transactions", "Transactions by thread group", labels=["group"])
        for name, v in t.by_group.items():
            by_group.add_metric([name], v)
        yield by_group
        knobs = GaugeMetricFamily("benchtop_group_threads", "Worker threads of a thread group", labels=["group"])
        rates = GaugeMetricFamily("benchtop_group_rate_target", "Arrival rate of a thread group (0: closed loop)",
                                  labels=["group"])
        for name, (threads, rate) in t.group_knobs.items():
            knobs.add_metric([name], float(threads))
            rates.add_metric([name], rate)
        yield knobs
        yield rates
        hosts = CounterMetricFamily("benchtop_host_transactions", "Transactions by load host (a cluster run)",
                                    labels=["host", "node"])
        for (host, node), v in t.by_host.items():
            hosts.add_metric([host, node], v)
        yield hosts
        host_threads = GaugeMetricFamily("benchtop_host_threads", "Worker threads of a load host (a cluster run)",
                                         labels=["host", "node"])
        for (host, node), n in t.host_threads.items():
            host_threads.add_metric([host, node], float(n))
        yield host_threads


class MeteredController(DelegatingController):
    """A Controller that hands every reading and the summary to RunMetrics on
    the way through: the loops (headless, TUI, scenario) stay as they are.
    The rest is the inner controller's, unchanged."""

    def __init__(self, inner: Controller, metrics: RunMetrics) -> None:
        self.inner = inner
        self.metrics = metrics

    @property
    def _ctl(self) -> Controller:
        return self.inner

    def sample(self) -> Sample:
        s = self.inner.sample()
        self.metrics.add(s)
        return s

    def stop(self, reason: str = "") -> RunSummary | None:
        summary = self.inner.stop(reason)
        self.metrics.finish(summary)
        return summary
