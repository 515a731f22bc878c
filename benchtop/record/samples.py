"""Immutable values that flow from the engine to the screens and files.

`EngineSample` is one cumulative reading of the engine; `IntervalStats` is the
difference between two readings (what one report line shows); `RunSummary`
is the whole run (or one scenario step).  Screens and writers only read these.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from benchtop.engine.histogram import Histogram
from benchtop.engine.sample import CONNECT_UNANSWERED, ENDED, ERROR_KINDS, EngineSample, GroupSample
from benchtop.record.costs import IntervalCosts, RunCosts
from benchtop.record.workers import Workers

DEFAULT_PERCENTILES = (50.0, 95.0, 99.0)


def pct_key(p: float) -> str:
    """50 -> 'p50', 99.9 -> 'p999', 99.99 -> 'p9999'."""
    text = f"{p:g}".replace(".", "")
    return f"p{text}"


def _latency_figures(h: Histogram, ns_sum: int, ps: list[float]) -> dict[str, float]:
    p = h.percentiles_ms(ps)
    out = {pct_key(x): p[x] for x in ps}
    out["max"] = h.max_ns() / 1e6
    out["avg"] = ns_sum / h.total / 1e6 if h.total else 0.0
    return out


@dataclass(frozen=True, slots=True)
class GroupStats:
    """One thread group over an interval, a step or a whole run."""

    name: str
    threads: int
    rate: float  # target; 0 = closed loop
    transactions: int
    tps: float
    errors: int
    latency_ms: dict[str, float]
    service_latency_ms: dict[str, float]
    queue: float
    latency: Histogram = field(repr=False)
    service: Histogram = field(repr=False)
    tps_intervals: dict[str, float] = field(default_factory=dict)  # avg, p5, p95 of interval tps (summaries)

    @classmethod
    def between(cls, prev: GroupSample, cur: GroupSample, dt: float, percentiles: tuple[float, ...],
                threads: int | None = None) -> "GroupStats":
        lat, svc = cur.latency - prev.latency, cur.service - prev.service
        ps = sorted(set(DEFAULT_PERCENTILES) | set(percentiles))
        dt = max(dt, 1e-9)
        return cls(
            name=cur.name,
            threads=cur.threads_running if threads is None else threads,
            rate=cur.rate,
            transactions=lat.total,
            tps=lat.total / dt,
            errors=max(0, cur.errors - prev.errors),
            latency_ms=_latency_figures(lat, cur.latency_ns_sum - prev.latency_ns_sum, ps),
            service_latency_ms=_latency_figures(svc, cur.service_ns_sum - prev.service_ns_sum, ps),
            queue=max(0.0, (cur.queue_ns - prev.queue_ns) / (dt * 1e9)),
            latency=lat,
            service=svc,
        )

    def without_histograms(self) -> "GroupStats":
        empty = Histogram.empty()
        return replace(self, latency=empty, service=empty)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "threads": self.threads,
            "rate": self.rate,
            "tps": round(self.tps, 2),
            "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()},
            "service_latency_ms": {k: round(v, 3) for k, v in self.service_latency_ms.items()},
        }
        if self.errors:
            d["errors"] = self.errors
        if self.rate > 0:
            d["queue"] = round(self.queue, 3)
        if self.tps_intervals:
            d["tps_over_intervals"] = {k: round(v, 2) for k, v in self.tps_intervals.items()}
        return d


def groups_between(prev: EngineSample, cur: EngineSample, percentiles: tuple[float, ...],
                   summary: bool = False) -> tuple[GroupStats, ...]:
    dt = cur.t - prev.t
    old = {g.name: g for g in prev.groups}
    # a stopped engine's groups run no threads: its last interval is labelled with the threads set
    target = summary or cur.state in ENDED
    return tuple(GroupStats.between(old[g.name], g, dt, percentiles, g.threads_target if target else None)
                 for g in cur.groups if g.name in old)


def op_latencies(prev: EngineSample, cur: EngineSample, ps: list[float]) -> dict[str, dict[str, float]]:
    """Latency per query kind between two readings (fileio's read, write and
    fsync), for kinds that ran: count, the percentiles and max in ms."""
    out: dict[str, dict[str, float]] = {}
    for name, now in cur.query_latency.items():
        before = prev.query_latency.get(name)
        h = now - before if before is not None else now
        if not h.total:
            continue
        pct = h.percentiles_ms(ps)
        out[name] = {"count": h.total, **{pct_key(p): round(pct[p], 3) for p in ps},
                     "max": round(h.max_ns() / 1e6, 3)}
    return out


@dataclass(frozen=True, slots=True)
class IntervalStats:
    """What happened between two samples: one report line."""

    t: float  # end of the interval, seconds since start
    dt: float
    threads: int  # the workers running: threads, or on event loops (loop_threads) connections
    rate_target: float
    paused: bool
    transactions: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    errors_per_s: float
    reconnects_per_s: float
    errors: dict[str, int]
    latency_ms: dict[str, float]  # p50, p95, p99, max (+ any requested percentile), avg
    service_latency_ms: dict[str, float]
    queue: float  # average tickets due but not started over the interval
    concurrency: float  # average busy workers over the interval
    latency: Histogram = field(repr=False)
    service: Histogram = field(repr=False)
    txn_by_type: tuple[int, ...] = ()
    groups: tuple[GroupStats, ...] = ()
    # what the interval cost the host per transaction, and the client's CPU
    # (measured by benchtop.run.costs); None when not measured
    costs: IntervalCosts | None = None
    # p50/p95/p99 per transaction type over the interval (workloads with several types)
    txn_latency_ms: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    op_latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)  # see op_latencies
    connected: int = -1  # running workers holding a connection at the interval's end (-1: not known)
    connect_failures: int = 0  # connection attempts refused in the interval
    loop_threads: int = 0  # --connections: the event-loop threads carrying the `threads` connections

    @property
    def rate_mode(self) -> bool:
        return self.rate_target > 0

    @property
    def workers(self) -> Workers:
        return Workers(self.threads, self.loop_threads)

    def without_histograms(self) -> "IntervalStats":
        """The same figures without the two per-interval histograms (38 KB
        each): what a long history keeps, so memory stays flat for hours."""
        empty = Histogram.empty()
        return replace(self, latency=empty, service=empty, groups=tuple(g.without_histograms() for g in self.groups))

    @classmethod
    def between(
        cls, prev: EngineSample, cur: EngineSample, percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    ) -> "IntervalStats":
        dt = max(cur.t - prev.t, 1e-9)
        lat = cur.latency - prev.latency
        svc = cur.service - prev.service
        n = lat.total
        ps = sorted(set(DEFAULT_PERCENTILES) | set(percentiles))
        lat_p = lat.percentiles_ms(ps)
        svc_p = svc.percentiles_ms(ps)
        lat_ms = {pct_key(p): lat_p[p] for p in ps}
        svc_ms = {pct_key(p): svc_p[p] for p in ps}
        lat_ms["max"] = lat.max_ns() / 1e6
        svc_ms["max"] = svc.max_ns() / 1e6
        lat_ms["avg"] = (cur.latency_ns_sum - prev.latency_ns_sum) / n / 1e6 if n else 0.0
        svc_ms["avg"] = (cur.service_ns_sum - prev.service_ns_sum) / n / 1e6 if n else 0.0
        errors = {k: max(0, cur.errors.get(k, 0) - prev.errors.get(k, 0)) for k in ERROR_KINDS}
        dt_ns = dt * 1e9
        return cls(
            t=cur.t,
            dt=dt,
            threads=cur.threads_running,
            rate_target=cur.rate,
            paused=cur.paused,
            transactions=n,
            tps=n / dt,
            qps=(cur.queries - prev.queries) / dt,
            reads_per_s=(cur.reads - prev.reads) / dt,
            writes_per_s=(cur.writes - prev.writes) / dt,
            other_per_s=(cur.other - prev.other) / dt,
            errors_per_s=sum(v for k, v in errors.items() if k != "fatal") / dt,
            reconnects_per_s=(cur.reconnects - prev.reconnects) / dt,
            errors=errors,
            latency_ms=lat_ms,
            service_latency_ms=svc_ms,
            queue=max(0.0, (cur.queue_ns - prev.queue_ns) / dt_ns),
            concurrency=max(0.0, (cur.busy_ns - prev.busy_ns) / dt_ns),
            latency=lat,
            service=svc,
            txn_by_type=tuple(max(0, a - b) for a, b in zip(cur.txn_by_type, prev.txn_by_type)),
            groups=groups_between(prev, cur, percentiles),
            op_latency_ms=op_latencies(prev, cur, ps),
            # workers that ran out of --events have hung up: no count of what the server admitted
            connected=cur.connected if cur.state not in ("stopping", "stopped") else -1,
            connect_failures=max(0, cur.connect_failures - prev.connect_failures),
            loop_threads=cur.loop_threads,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON Lines interval object."""
        lat = {k: round(v, 3) for k, v in self.latency_ms.items() if k != "avg"}
        out: dict[str, Any] = {
            "type": "interval",
            "t": round(self.t, 3),
            **self.workers.to_dict(),
            "transactions": self.transactions,
            "tps": round(self.tps, 2),
            "qps": round(self.qps, 2),
            "reads": round(self.reads_per_s, 2),
            "writes": round(self.writes_per_s, 2),
            "other": round(self.other_per_s, 2),
            "errors_per_s": round(self.errors_per_s, 2),
            "reconnects_per_s": round(self.reconnects_per_s, 2),
            "latency_ms": lat,
        }
        if self.connected >= 0:
            out["connected"] = self.connected
        if self.connect_failures:
            out["connect_failures"] = self.connect_failures
        if self.txn_latency_ms:
            out["txn_latency_ms"] = {k: dict(v) for k, v in self.txn_latency_ms.items()}
        if self.costs is not None:
            out["per_op"] = self.costs.per_op.to_dict()
            out["client_cpu"] = self.costs.client_cpu.to_dict()
        if self.op_latency_ms:
            out["op_latency_ms"] = self.op_latency_ms
        if self.paused:
            out["paused"] = True
        if self.rate_mode:
            out["rate"] = self.rate_target
            out["queue"] = round(self.queue, 3)
            out["concurrency"] = round(self.concurrency, 3)
            out["service_latency_ms"] = {
                k: round(v, 3) for k, v in self.service_latency_ms.items() if k != "avg"
            }
        if self.groups:
            out["groups"] = {g.name: g.to_dict() for g in self.groups}
        return out


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A whole run, or one step of a scenario."""

    time_s: float
    threads: int
    rate: float
    transactions: int
    rollbacks: int
    reads: int
    writes: int
    other: int
    errors: dict[str, int]
    reconnects: int
    connects: int
    connect_ms_avg: float
    latency_ms: dict[str, float]  # min, avg, max, p50, p95, p99, p999 (+ requested)
    service_latency_ms: dict[str, float]
    latency: Histogram = field(repr=False)
    service: Histogram = field(repr=False)
    txn_types: dict[str, int] = field(default_factory=dict)
    stopped_by: str = ""  # "", "time", "events", "signal", "error: ...", "stop-if: ..."
    # per transaction type (workloads with several): {"name": {"p50":..,"p95":..,"p99":..,"max":..,"avg":..}}
    txn_latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    groups: tuple[GroupStats, ...] = ()
    unfinished: int = 0  # transactions the end cut short (not in the counts)
    # per_op, by_type, sizes, totals, client_cpu, host (measured by benchtop.run.costs); None when not measured
    costs: RunCosts | None = None
    op_latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)  # see op_latencies
    hosts: tuple[HostSummary, ...] = ()  # a cluster run: each load host's share of the totals
    connect_failures: int = 0  # connection attempts refused or unanswered
    loop_threads: int = 0  # --connections: the event-loop threads (then `threads` counts connections)
    connections_served: int = 0  # connections that completed at least one transaction
    connected_max: int = -1  # the most workers connected at once in an interval (-1: not known)
    connected_min: int = -1  # the fewest workers connected at an interval's end (-1: not known)
    aborted_reason: str = ""  # why the first client aborted (a pgbench script's failed expression)
    refused_reason: str = ""  # the server's word on the latest refused connection attempt
    lost_reason: str = ""  # why the latest of the lost connections was lost
    initial_connection_ms: float = 0.0  # the start's connections, before the measured time (pgbench's figure)

    @property
    def workers(self) -> Workers:
        return Workers(self.threads, self.loop_threads)

    @property
    def queries(self) -> int:
        return self.reads + self.writes + self.other

    @property
    def tps(self) -> float:
        return self.transactions / self.time_s if self.time_s > 0 else 0.0

    @property
    def qps(self) -> float:
        return self.queries / self.time_s if self.time_s > 0 else 0.0

    @property
    def error_count(self) -> int:
        return sum(v for k, v in self.errors.items() if k != "fatal")

    @classmethod
    def between(
        cls,
        first: EngineSample,
        last: EngineSample,
        percentiles: tuple[float, ...] = DEFAULT_PERCENTILES,
        txn_names: tuple[str, ...] = (),
        stopped_by: str = "",
    ) -> "RunSummary":
        lat = last.latency - first.latency
        svc = last.service - first.service
        n = lat.total
        ps = sorted(set(DEFAULT_PERCENTILES) | {99.9} | set(percentiles))
        lp = lat.percentiles_ms(ps)
        sp = svc.percentiles_ms(ps)
        whole = first.t == 0 and first.transactions == 0
        lat_ms = {pct_key(p): lp[p] for p in ps}
        svc_ms = {pct_key(p): sp[p] for p in ps}
        lat_ms["min"] = (last.latency_ns_min if whole else lat.min_ns()) / 1e6
        # max is the histogram's, as in intervals, per type and latency.hlog (the
        # README says so): an exact one here could be below a per-type max
        lat_ms["max"] = lat.max_ns() / 1e6
        lat_ms["avg"] = (last.latency_ns_sum - first.latency_ns_sum) / n / 1e6 if n else 0.0
        svc_ms["min"] = svc.min_ns() / 1e6
        svc_ms["max"] = svc.max_ns() / 1e6
        svc_ms["avg"] = (last.service_ns_sum - first.service_ns_sum) / n / 1e6 if n else 0.0
        connects = last.connects - first.connects
        by_type = [max(0, a - b) for a, b in zip(last.txn_by_type, first.txn_by_type)]
        return cls(
            time_s=max(last.t - first.t, 0.0),
            threads=last.threads_target,
            rate=last.rate,
            transactions=n,
            rollbacks=last.rollbacks - first.rollbacks,
            reads=last.reads - first.reads,
            writes=last.writes - first.writes,
            other=last.other - first.other,
            errors={k: max(0, last.errors.get(k, 0) - first.errors.get(k, 0)) for k in ERROR_KINDS},
            reconnects=last.reconnects - first.reconnects,
            connects=connects,
            connect_ms_avg=(last.connect_ns_sum - first.connect_ns_sum) / connects / 1e6 if connects else 0.0,
            latency_ms=lat_ms,
            service_latency_ms=svc_ms,
            latency=lat,
            service=svc,
            txn_types={name: by_type[i] for i, name in enumerate(txn_names) if i < len(by_type)},
            stopped_by=stopped_by,
            groups=groups_between(first, last, tuple(ps), summary=True),
            op_latency_ms=op_latencies(first, last, ps),
            # cut short at the end, or still stuck in a transaction when abandoned
            unfinished=(last.unfinished - first.unfinished
                        + (last.in_flight if last.state in ENDED else 0)),
            connect_failures=max(0, last.connect_failures - first.connect_failures),
            refused_reason=last.connect_error if last.connect_failures > first.connect_failures else "",
            lost_reason=last.lost_error if last.errors.get("lost_connection", 0) > first.errors.get("lost_connection", 0)
            else "",
            aborted_reason=last.error if last.errors.get("client_aborted", 0) > first.errors.get("client_aborted", 0)
            else "",
            loop_threads=last.loop_threads,
            connections_served=last.connections_served,
        )

    @property
    def _refused_why(self) -> str:
        if not self.refused_reason:
            return "max_connections? access denied? down?"
        if self.refused_reason.startswith(CONNECT_UNANSWERED):
            return self.refused_reason  # the engine's account: the server said nothing
        return f"the server said: {self.refused_reason}"

    @property
    def _refused(self) -> str:
        if self.refused_reason.startswith(CONNECT_UNANSWERED):
            return f"{self.connect_failures} connection attempts were never answered"
        return f"the server refused {self.connect_failures} connection attempts"

    @property
    def warnings(self) -> list[str]:
        """What makes the figures mean less than they seem: fewer workers than
        asked (refused connections, clients a failed script aborted)."""
        out = []
        aborted = self.errors.get("client_aborted", 0)
        if 0 <= self.connected_max < self.threads and (self.connect_failures or not aborted):
            out.append(f"only {self.connected_max} of {self.threads} workers were connected at once: {self._refused} "
                       f"({self._refused_why}); "
                       f"the results are for {self.connected_max} workers")
        elif self.connect_failures and 0 <= self.connected_min < self.threads:
            # all were connected at first, then the server refused them (a
            # restart with another password, max_connections lowered)
            out.append(f"{self._refused} and some intervals ran with "
                       f"as few as {self.connected_min} of {self.threads} workers connected ({self._refused_why}): "
                       "those intervals measure fewer workers")
        if aborted:
            out.append(f"{aborted} of {self.threads} clients aborted, as pgbench aborts a client whose script fails"
                       + (f" ({self.aborted_reason})" if self.aborted_reason else "")
                       + "; the results are for the clients left")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON summary object; histogram counts add up to `transactions`."""
        return {
            "type": "summary",
            "transactions": self.transactions,
            "queries": self.queries,
            "reads": self.reads,
            "writes": self.writes,
            "other": self.other,
            "errors": self.error_count,
            "errors_by_kind": {k: v for k, v in self.errors.items() if v},
            "rollbacks": self.rollbacks,
            "reconnects": self.reconnects,
            "connects": self.connects,
            "connect_ms_avg": round(self.connect_ms_avg, 3),
            "initial_connection_ms": round(self.initial_connection_ms, 3),
            "connect_failures": self.connect_failures,
            **({"connect_error": self.refused_reason} if self.refused_reason else {}),
            **({"lost_error": self.lost_reason} if self.lost_reason else {}),
            **({"connected": self.connected_max} if self.connected_max >= 0 else {}),
            **({"connected_min": self.connected_min} if 0 <= self.connected_min < self.threads else {}),
            **({"warnings": self.warnings} if self.warnings else {}),
            "time_s": round(self.time_s, 3),
            **self.workers.to_dict(),
            "connections_served": self.connections_served,
            "rate": self.rate,
            "tps": round(self.tps, 2),
            "qps": round(self.qps, 2),
            "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()},
            "service_latency_ms": {k: round(v, 3) for k, v in self.service_latency_ms.items()},
            "txn_types": self.txn_types,
            **({"txn_latency_ms": self.txn_latency_ms} if self.txn_latency_ms else {}),
            **({"groups": {g.name: g.to_dict() for g in self.groups}} if self.groups else {}),
            **({"op_latency_ms": self.op_latency_ms} if self.op_latency_ms else {}),
            "unfinished": self.unfinished,
            "stopped_by": self.stopped_by,
            **(self.costs.to_dict() if self.costs is not None else {}),
            "histogram": [{"le_ms": le, "count": c} for le, c in self.latency.coarse()],
            **({"hosts": [h.to_dict() for h in self.hosts],
                "hosts_reporting": sum(1 for h in self.hosts if h.lost_at is None)} if self.hosts else {}),
        }


@dataclass(frozen=True, slots=True)
class HostSummary:
    """One load host's part of a cluster run (its transactions add up to the
    run's; its percentiles are its own)."""

    host: str  # h1, h2, ... in the order the hosts were placed
    node: str  # the node's address as Ray knows it
    threads: int
    transactions: int
    tps: float
    latency_ms: dict[str, float]
    errors: int
    lost_at: float | None = None  # run seconds when the host was lost
    lost_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "host": self.host, "node": self.node, "threads": self.threads,
            "transactions": self.transactions, "tps": round(self.tps, 2),
            "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()}, "errors": self.errors,
        }
        if self.lost_at is not None:
            out["lost_at"] = round(self.lost_at, 3)
            out["lost_reason"] = self.lost_reason
        return out


@dataclass(frozen=True, slots=True)
class HostInterval:
    """One load host's interval in a cluster run: a row beside the totals."""

    host: str
    node: str
    state: str  # "ok", "late" (no reading this interval) or "lost"
    threads: int
    transactions: int
    tps: float
    errors_per_s: float
    latency_ms: dict[str, float]  # p50, p95, p99, max
    connections: int
    cpu_pct: float  # the node's CPU busy, all cores (100 = every core busy)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "node": self.node, "state": self.state, "threads": self.threads,
                "transactions": self.transactions, "tps": round(self.tps, 2),
                "errors_per_s": round(self.errors_per_s, 2),
                "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()},
                "connections": self.connections, "cpu_pct": round(self.cpu_pct, 1)}


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    t: float
    kind: str  # threads, rate, pause, resume, mark, instrumentation, outage, note
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "event", "t": round(self.t, 3), "kind": self.kind, "text": self.text}
