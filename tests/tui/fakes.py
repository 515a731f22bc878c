"""Deterministic stand-ins for a run controller and a Source: fixed interval
sequences, no clocks, no randomness, so screens render the same every run."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from benchtop.engine.histogram import Histogram
from benchtop.run.protocol import Controller, Notice, Sample
from benchtop.run.samples import ERROR_KINDS, IntervalStats, RunSummary, TimelineEvent
from benchtop.sources.base import Missing, Source, SourceError, SourceSnapshot


def _bimodal_ns(n: int, main_ms: float, tail_ms: float, tail_share: float) -> list[int]:
    """n latencies on two log-normal-ish humps, by fixed quantiles (no RNG)."""
    values = []
    n_tail = int(n * tail_share)
    for k in range(n - n_tail):
        z = math.sin((k + 0.5) / (n - n_tail) * math.pi - math.pi / 2)  # -1..1, denser at the ends
        values.append(int(main_ms * 1e6 * math.exp(0.45 * z)))
    for k in range(n_tail):
        z = math.sin((k + 0.5) / max(n_tail, 1) * math.pi - math.pi / 2)
        values.append(int(tail_ms * 1e6 * math.exp(0.25 * z)))
    return values


def make_interval(i: int, threads: int = 8, rate: float = 0.0, paused: bool = False) -> IntervalStats:
    """Interval i (ending at t=i+1): throughput rising with a wobble, a
    latency hump near 2 ms and a small stall hump near 40 ms."""
    tps = 0.0 if paused else 900 + 300 * math.sin(i / 6) + 10 * i
    if rate > 0:
        tps = min(tps, rate)
    n = int(tps / 4)  # a quarter of the transactions keeps the fixtures quick
    lat_values = _bimodal_ns(n, 2.0 + (i % 10) / 10, 40.0, 0.03 if i % 7 else 0.10)
    lat = Histogram.from_values_ns(lat_values)
    svc = Histogram.from_values_ns([v * 3 // 4 for v in lat_values]) if rate > 0 else lat
    pct = lat.percentiles_ms([50.0, 95.0, 99.0])
    spct = svc.percentiles_ms([50.0, 95.0, 99.0])
    lat_ms = {
        "p50": pct[50.0],
        "p95": pct[95.0],
        "p99": pct[99.0],
        "max": lat.max_ns() / 1e6,
        "avg": pct[50.0],
    }
    svc_ms = {
        "p50": spct[50.0],
        "p95": spct[95.0],
        "p99": spct[99.0],
        "max": svc.max_ns() / 1e6,
        "avg": spct[50.0],
    }
    return IntervalStats(
        t=float(i + 1),
        dt=1.0,
        threads=threads,
        rate_target=rate,
        paused=paused,
        transactions=int(tps),
        tps=tps,
        qps=tps * 20,
        reads_per_s=tps * 14,
        writes_per_s=tps * 4,
        other_per_s=tps * 2,
        errors_per_s=0.0,
        reconnects_per_s=0.0,
        errors={k: 0 for k in ERROR_KINDS},
        latency_ms=lat_ms,
        service_latency_ms=svc_ms,
        queue=(i % 5) * 0.4 if rate > 0 else 0.0,
        concurrency=threads * 0.6 if rate > 0 else 0.0,
        latency=lat,
        service=svc,
    )


class FakeRunController:
    """The controller protocol over a fixed sequence of intervals.

    `preload` intervals are already in `history` when the UI opens; each
    sample() returns the next one (after `sample_delay` seconds).  The first
    `warmup` samples are warm-up: not counted, and kept out of `history`.
    With `finish_after`, the run reports finished after that many samples,
    failed with `error` if one is given.
    """

    def __init__(
        self,
        preload: int = 40,
        threads: int = 8,
        rate: float = 0.0,
        duration_s: float = 120.0,
        report_interval: float = 3600.0,
        sample_delay: float = 0.0,
        finish_after: int | None = None,
        warmup: int = 0,
        presets: tuple[str, ...] | None = None,
        error: str | None = None,
        events: tuple[tuple[float, str, str], ...] = (
            (10.0, "threads", "threads 8"),
            (25.0, "mark", "mark 1"),
        ),
    ) -> None:
        self.label = "sqlite:///tmp/bench.db oltp_read_write"
        self.workload = "oltp_read_write"
        self.target = "sqlite:///tmp/bench.db"
        self.duration_s = duration_s
        self.report_interval = report_interval
        self.sample_delay = sample_delay
        self.finish_after = finish_after
        self.warmup = warmup
        self.presets = presets
        self.error = error  # the engine failure the finishing sample reports
        self.history: list[IntervalStats] = [make_interval(i, threads, rate) for i in range(preload)]
        self.timeline: list[TimelineEvent] = [TimelineEvent(t, k, x) for t, k, x in events]
        self.samples = 0
        self.stopped_reason: str | None = None
        self.hurried = False
        self.calls: list[tuple[str, Any]] = []
        self._threads = threads
        self._rate = rate
        self._paused = False
        self._preset = -1
        self._lock = threading.Lock()

    def start(self) -> None:
        self.calls.append(("start", None))

    def sample(self) -> Sample:
        if self.sample_delay:
            time.sleep(self.sample_delay)
        with self._lock:
            iv = make_interval(len(self.history), self._threads, self._rate, self._paused)
            self.samples += 1
            counted = self.samples > self.warmup
            if counted:
                self.history.append(iv)
            finished = self.finish_after is not None and self.samples >= self.finish_after
        reason = (f"error: {self.error}" if self.error else "time") if finished else ""
        return Sample(iv, counted, t=iv.t, finished=finished, reason=reason)

    def notices(self) -> list[Notice]:
        return []

    def ends_at(self) -> float | None:
        return None

    def deadline(self) -> float | None:
        return None

    def _event(self, kind: str, text: str) -> None:
        self.timeline.append(TimelineEvent(self.elapsed, kind, text))

    def set_threads(self, n: int) -> None:
        self.calls.append(("threads", n))
        self._threads = n
        self._event("threads", f"threads {n}")

    def set_rate(self, rate: float) -> None:
        self.calls.append(("rate", rate))
        self._rate = rate
        self._event("rate", f"rate {rate:g}/s" if rate > 0 else "rate unlimited")

    def set_paused(self, paused: bool) -> None:
        self.calls.append(("paused", paused))
        self._paused = paused
        self._event("pause" if paused else "resume", "paused" if paused else "resumed")

    def mark(self, text: str) -> None:
        self.calls.append(("mark", text))
        self._event("mark", text)

    def note(self, kind: str, text: str) -> None:
        self._event(kind, text)

    def cycle_instrumentation(self) -> str | None:
        if not self.presets:
            return None
        self._preset = (self._preset + 1) % len(self.presets)
        name = self.presets[self._preset]
        self._event("instrumentation", f"instrumentation {name}")
        return name

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def elapsed(self) -> float:
        return self.history[-1].t if self.history else 0.0

    @property
    def remaining(self) -> float | None:
        return max(0.0, self.duration_s - self.elapsed) if self.duration_s > 0 else None

    @property
    def errors_total(self) -> int:
        return 0

    @property
    def reconnects_total(self) -> int:
        return 0

    def _summary(self, reason: str) -> RunSummary:
        lat = Histogram.empty()
        for iv in self.history:
            lat = lat + iv.latency
        n = sum(iv.transactions for iv in self.history)
        pct = lat.percentiles_ms([50.0, 95.0, 99.0])
        lat_ms = {
            "p50": pct[50.0],
            "p95": pct[95.0],
            "p99": pct[99.0],
            "min": lat.min_ns() / 1e6,
            "max": lat.max_ns() / 1e6,
            "avg": pct[50.0],
        }
        return RunSummary(
            time_s=self.elapsed,
            threads=self._threads,
            rate=self._rate,
            transactions=n,
            rollbacks=0,
            reads=n * 14,
            writes=n * 4,
            other=n * 2,
            errors={k: 0 for k in ERROR_KINDS},
            reconnects=0,
            connects=self._threads,
            connect_ms_avg=1.0,
            latency_ms=lat_ms,
            service_latency_ms=lat_ms,
            latency=lat,
            service=lat,
            stopped_by=reason,
        )

    def hurry(self) -> None:
        self.hurried = True

    def stop(self, reason: str = "") -> RunSummary:
        if self.stopped_reason is None:
            self.stopped_reason = reason
        return self._summary(self.stopped_reason)

    def save(self, prefix: Path) -> list[Path]:
        p1 = prefix.with_suffix(".summary.json")
        p1.write_text(json.dumps(self._summary("saved while running").to_dict()))
        p2 = prefix.with_suffix(".intervals.jsonl")
        p2.write_text("".join(json.dumps(iv.to_dict()) + "\n" for iv in self.history))
        return [p1, p2]


def _satisfies_protocol(c: FakeRunController) -> Controller:
    """mypy checks this module: the fake must keep up with the protocol."""
    return c


class FakeSource(Source):
    """A Source whose polls come from a list: a SourceSnapshot's panels dict,
    or an exception instance to raise (a lost connection)."""

    kind = "pgbouncer"

    def __init__(self, name: str, script: list[Any], timeout_s: float = 1.0, kind: str | None = None) -> None:
        super().__init__(name, None, timeout_s)  # type: ignore[arg-type]
        if kind is not None:
            # real sources fix their kind per class; this one stands in for any
            self.kind = kind  # type: ignore[misc]
        self.script = list(script)
        self.polls = 0
        self.connects = 0

    def connect(self) -> None:
        self.connects += 1

    def poll(self) -> SourceSnapshot:
        step = self.script[min(self.polls, len(self.script) - 1)]
        self.polls += 1
        if isinstance(step, Exception):
            raise step
        return SourceSnapshot(
            name=self.name,
            kind=self.kind,
            t=1_700_000_000.0,
            ok=True,
            poll_ms=1.5,
            panels=step,
        )

    def close(self) -> None:
        pass


POOLS_PANELS: dict[str, Any] = {
    "pools": [
        {
            "database": "sbtest",
            "user": "sbtest",
            "cl_active": 4,
            "cl_waiting": 2,
            "sv_active": 2,
            "sv_idle": 0,
            "maxwait": 0.25,
            "pool_mode": "transaction",
        },
        {
            "database": "pgbouncer",
            "user": "pgbouncer",
            "cl_active": 1,
            "cl_waiting": 0,
            "sv_active": 0,
            "sv_idle": 0,
            "maxwait": 0.0,
            "pool_mode": "statement",
        },
    ],
    "stats": {"sbtest": {"xact_per_s": 812.5, "query_per_s": 16250.0, "avg_wait_time_us": 420}},
    "clients": {"active": 5, "waiting": 2},
    "wal_bytes_per_s": 1048576.0,
    "config": Missing(
        "SHOW CONFIG needs the admin user",
        "add the user to admin_users in pgbouncer.ini",
    ),
}


def lost() -> SourceError:
    return SourceError("connection lost: server closed the connection")


PG_PANELS: dict[str, Any] = {
    "wal_bytes_per_s": 2_500_000.0,
    "checkpoints": {"timed": 3, "requested": 1, "buffers_written_per_s": 120.0},
    "cache_hit_ratio": {"interval": 0.998, "cumulative": 0.995},
    "sessions": {"active": 4, "idle": 2, "total": 6},
}
