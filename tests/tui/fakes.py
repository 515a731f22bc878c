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
from benchtop.record.controller import Controller, Notice, Sample
from benchtop.record.knee import KneeView
from benchtop.record.samples import ERROR_KINDS, IntervalStats, RunSummary, TimelineEvent
from benchtop.record.workers import Workers
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
        loop_threads: int = 0,
        duration_s: float = 120.0,
        report_interval: float = 3600.0,
        sample_delay: float = 0.0,
        finish_after: int | None = None,
        warmup: int = 0,
        presets: tuple[str, ...] | None = None,
        error: str | None = None,
        groups: tuple[tuple[str, int, float], ...] = (),
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
        self.knee_view: KneeView | None = None  # what a knee search shows
        self.error = error  # the engine failure the finishing sample reports
        self.history: list[IntervalStats] = [make_interval(i, threads, rate) for i in range(preload)]
        self.timeline: list[TimelineEvent] = [TimelineEvent(t, k, x) for t, k, x in events]
        self.samples = 0
        self.stopped_reason: str | None = None
        self.hurried = False
        self.calls: list[tuple[str, Any]] = []
        self._threads = threads
        self._loop_threads = loop_threads  # as --connections THREADS --threads LOOP_THREADS
        self._rate = rate
        self._paused = False
        self._preset = -1
        self._groups = {name: [threads_, rate_] for name, threads_, rate_ in groups}
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

    def load_ended(self) -> bool:
        return False

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

    @property
    def groups(self) -> list[tuple[str, int, float]]:
        return [(name, int(v[0]), float(v[1])) for name, v in self._groups.items()]

    def set_group_threads(self, name: str, n: int) -> None:
        self.calls.append(("group_threads", (name, n)))
        self._groups[name][0] = n
        self._event("threads", f"{name} threads {n}")

    def set_group_rate(self, name: str, rate: float) -> None:
        self.calls.append(("group_rate", (name, rate)))
        self._groups[name][1] = rate
        self._event("rate", f"{name} rate {rate:g}/s")

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
    def workers(self) -> Workers:
        return Workers(self._threads, self._loop_threads)

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
    def knee(self) -> KneeView | None:
        return self.knee_view

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

    def final_sample(self) -> Sample | None:
        return None

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
    "stats": [{"database": "sbtest", "xact_per_s": 812.5, "query_per_s": 16250.0, "avg_wait_time_us": 420}],
    "client_states": {"active": 5, "waiting": 2},
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


# ---------------------------------------------------------------- one poll of each source under load,
# shaped like the real sources' panels (tests/realdb checks the real ones)

_LONG_QUERY = "SELECT c FROM sbtest1 WHERE id BETWEEN 5001 AND 5100 ORDER BY c /* long report */ " + "AND k > 0 " * 12

MYSQL_PANELS: dict[str, Any] = {
    "settings": {"version": "10.11.19-MariaDB-0+deb12u1", "innodb_buffer_pool_size": 536870912,
                 "innodb_flush_log_at_trx_commit": 1, "crash_safe": True, "unsafe_because": []},
    "threads": {"running": 9, "connected": 41},
    "status_rates": {"questions_per_s": 18250.0, "commits_per_s": 912.0, "com_select_per_s": 12700.0,
                     "slow_queries_per_s": 0.0},
    "innodb": {"checkpoint_age_bytes": 50331648, "checkpoint_age_pct": 62.5, "redo_capacity_bytes": 80530636,
               "dirty_pages_pct": 12.4, "pages_flushed_per_s": 340.0, "redo_bytes_per_s": 4718592.0,
               "buffer_pool_hit_ratio": 0.99912, "buffer_pool_hit_ratio_total": 0.9995,
               "history_list_length": 1830, "row_lock_waits_per_s": 2.0},
    "waits": [
        {"event": "wait/io/file/innodb/innodb_log_file", "ms_per_s": 310.5, "count_per_s": 912.0, "avg_us": 340.5},
        {"event": "wait/synch/mutex/innodb/trx_sys_mutex", "ms_per_s": 40.25, "count_per_s": 5200.0, "avg_us": 7.7},
        {"event": "wait/io/file/innodb/innodb_data_file", "ms_per_s": 12.0, "count_per_s": 80.0, "avg_us": 150.0},
    ],
    "processlist": [
        {"id": 7, "user": "app", "host": "10.0.0.5:51234", "db": "sbtest", "command": "Query", "time_s": 42.318,
         "state": "Sending data", "query": _LONG_QUERY},
        {"id": 12, "user": "sbtest", "host": "127.0.0.1:40112", "db": "sbtest", "command": "Query", "time_s": 0.004,
         "state": "Updating", "query": "UPDATE sbtest3 SET k=k+1 WHERE id=5012"},
        {"id": 13, "user": "sbtest", "host": "127.0.0.1:40113", "db": "sbtest", "command": "Query", "time_s": 3.5,
         "state": "Waiting for row lock", "query": "UPDATE sbtest1 SET c='x' WHERE id=10"},
        {"id": 14, "user": "sbtest", "host": "127.0.0.1:40114", "db": "sbtest", "command": "Sleep", "time_s": 120.0,
         "state": "", "query": None},
    ],
    "top_statements": [
        {"schema": "sbtest", "digest": "d1", "calls_per_s": 12700.0, "total_ms_per_s": 1520.0, "avg_ms": 0.1197,
         "rows_examined_per_s": 12700.0, "rows_sent_per_s": 12700.0, "query": "SELECT `c` FROM `sbtest1` WHERE `id` = ?"},
        {"schema": "sbtest", "digest": "d2", "calls_per_s": 912.0, "total_ms_per_s": 840.5, "avg_ms": 0.9216,
         "rows_examined_per_s": 912.0, "rows_sent_per_s": 0.0, "query": "UPDATE `sbtest3` SET `k` = `k` + ? WHERE `id` = ?"},
        {"schema": "sbtest", "digest": "d3", "calls_per_s": 91.0, "total_ms_per_s": 2210.0, "avg_ms": 24.3,
         "rows_examined_per_s": 9100.0, "rows_sent_per_s": 9100.0,
         "query": "SELECT `c` FROM `sbtest1` WHERE `id` BETWEEN ? AND ? ORDER BY `c`"},
    ],
    "locks": [
        {"waiting_id": 13, "waiting_query": "UPDATE sbtest1 SET c='x' WHERE id=10", "wait_s": 3,
         "blocking_id": 21, "blocking_query": None, "blocking_command": "Sleep", "blocking_idle_s": 30,
         "blocking_trx_age_s": 31, "lock_table": "`sbtest`.`sbtest1`", "lock_index": "PRIMARY", "lock_mode": "X"},
    ],
    "binlog": Missing("binary log off", "log_bin is OFF: no binlog size, rate or rotations to show"),
}  # fmt: skip

PG_TOP_PANELS: dict[str, Any] = {
    "settings": {"server_version": "15.18", "checkpoint_timeout": 300, "max_wal_size_bytes": 1073741824,
                 "synchronous_commit": "on", "fsync": "on"},
    "checkpoints": {"timed": 3, "requested": 1, "timed_per_h": 12.0, "requested_per_h": 0.0,
                    "buffers_written_per_s": 120.0, "write_time_ms_per_s": 35.0, "sync_time_ms_per_s": 2.0,
                    "buffers_clean_per_s": 10.0, "maxwritten_clean": 0, "buffers_alloc_per_s": 55.0,
                    "buffers_backend_per_s": 1.0},
    "wal": {"wal_records_per_s": 9000.0, "wal_fpi_per_s": 120.0, "wal_buffers_full_per_s": 0.0,
            "wal_write_per_s": 800.0, "wal_sync_per_s": 790.0},
    "wal_bytes_per_s": 2_500_000.0,
    "cache_hit_ratio": {"interval": 0.998, "cumulative": 0.995},
    "database": {"name": "sbtest", "size_bytes": 262144000, "growth_bytes_per_s": 16384.0, "commits_per_s": 790.0,
                 "rollbacks_per_s": 0.0, "tup_inserted_per_s": 790.0, "tup_updated_per_s": 1580.0,
                 "tup_deleted_per_s": 790.0, "temp_bytes_per_s": 0.0, "deadlocks_per_s": 0.0},
    "sessions": {"active": 4, "idle": 2, "idle in transaction": 1, "total": 7},
    "wait_events": [{"type": "Lock", "event": "transactionid", "count": 1}],
    "autovacuum_workers": 1,
    "activity": [
        {"pid": 4242, "user": "app", "db": "sbtest", "application": "report", "client": "10.0.0.9", "state": "active",
         "wait_event_type": None, "wait_event": None, "xact_age_s": 61.2, "query_age_s": 61.2, "state_age_s": 61.2,
         "blocked_by": [], "query": _LONG_QUERY},
        {"pid": 4250, "user": "sbtest", "db": "sbtest", "application": "benchtop", "client": "127.0.0.1",
         "state": "active", "wait_event_type": "Lock", "wait_event": "transactionid", "xact_age_s": 5.0,
         "query_age_s": 4.9, "state_age_s": 4.9, "blocked_by": [4251], "query": "UPDATE sbtest1 SET k=k+1 WHERE id=10"},
        {"pid": 4251, "user": "sbtest", "db": "sbtest", "application": "psql", "client": "127.0.0.1",
         "state": "idle in transaction", "wait_event_type": "Client", "wait_event": "ClientRead", "xact_age_s": 30.0,
         "query_age_s": 29.0, "state_age_s": 29.0, "blocked_by": [], "query": "UPDATE sbtest1 SET c='y' WHERE id=10"},
        {"pid": 4260, "user": "sbtest", "db": "sbtest", "application": "", "client": "127.0.0.1", "state": "idle",
         "wait_event_type": "Client", "wait_event": "ClientRead", "xact_age_s": None, "query_age_s": 300.0,
         "state_age_s": 300.0, "blocked_by": [], "query": "COMMIT"},
    ],
    "top_statements": [
        {"user": "sbtest", "db": "sbtest", "queryid": 1, "calls_per_s": 9100.0, "total_ms_per_s": 610.0,
         "mean_ms": 0.067, "rows_per_s": 9100.0, "shared_blks_hit_per_s": 27300.0, "shared_blks_read_per_s": 12.0,
         "hit_pct": 99.96, "query": "SELECT c FROM sbtest1 WHERE id=$1"},
        {"user": "sbtest", "db": "sbtest", "queryid": 2, "calls_per_s": 790.0, "total_ms_per_s": 1210.0,
         "mean_ms": 1.53, "rows_per_s": 790.0, "shared_blks_hit_per_s": 4000.0, "shared_blks_read_per_s": 40.0,
         "hit_pct": 99.0, "query": "UPDATE sbtest1 SET k=k+1 WHERE id=$1"},
    ],
    "tables": [
        {"schema": "public", "table_name": "sbtest1", "blks_read": 52000, "blks_read_per_s": 52.0,
         "blks_hit_per_s": 31300.0, "hit_pct": 99.83, "seq_scan": 2, "idx_scan": 910000, "tup_changed": 50000,
         "live_rows": 100000, "dead_rows": 4200, "last_vacuum": "2026-11-23 02:50:01+00", "size_bytes": 25165824},
    ],
    "indexes": [
        {"schema": "public", "table_name": "sbtest1", "index_name": "sbtest1_pkey", "blks_read": 900,
         "blks_read_per_s": 3.0, "blks_hit_per_s": 18200.0, "hit_pct": 99.98, "scans": 910000, "size_bytes": 2260992},
    ],
    "vacuum": [
        {"pid": 4300, "db": "sbtest", "table_name": "sbtest1", "phase": "scanning heap", "heap_blks_total": 3072,
         "heap_blks_scanned": 1024, "heap_blks_vacuumed": 900, "index_vacuum_count": 0, "running_s": 12.5,
         "auto": True, "scanned_pct": 33.3},
    ],
}  # fmt: skip

PGB_PANELS: dict[str, Any] = {
    "version": "PgBouncer 1.18.0",
    "pools": POOLS_PANELS["pools"],
    "client_states": {"active": 5, "waiting": 2, "total": 7},
    "server_states": {"active": 2, "idle": 0, "used": 0, "total": 2},
    "stats": [
        {"database": "sbtest", "xact_per_s": 812.5, "query_per_s": 16250.0, "avg_xact_time_us": 2450.0,
         "avg_query_time_us": 120.0, "avg_wait_time_us": 420, "received_bytes_per_s": 1.2e6, "sent_bytes_per_s": 3.4e6},
    ],
    "clients": [
        {"user": "sbtest", "database": "sbtest", "state": "waiting", "addr": "127.0.0.1", "port": 40001,
         "connect_time": "2026-11-23 03:00:00 UTC", "request_time": "2026-11-23 03:00:09 UTC",
         "application_name": "benchtop", "wait_s": 0.25},
        {"user": "sbtest", "database": "sbtest", "state": "active", "addr": "127.0.0.1", "port": 40002,
         "connect_time": "2026-11-23 03:00:00 UTC", "request_time": "2026-11-23 03:00:10 UTC",
         "application_name": "benchtop", "wait_s": 0.0},
    ],
    "servers": [
        {"user": "sbtest", "database": "sbtest", "state": "active", "addr": "127.0.0.1", "port": 5432,
         "connect_time": "2026-11-23 02:59:00 UTC", "request_time": "2026-11-23 03:00:10 UTC",
         "application_name": "", "wait_s": 0.0},
    ],
}  # fmt: skip

PROXYSQL_PANELS: dict[str, Any] = {
    "connection_pool": [
        {"hostgroup": 0, "srv_host": "10.0.0.1", "srv_port": 3306, "status": "ONLINE", "ConnUsed": 2, "ConnFree": 8,
         "ConnUsed_pct": 20.0, "ConnOK_per_s": 1.0, "ConnERR_per_s": 0.0, "Queries_per_s": 200.0,
         "Bytes_data_sent_per_s": 16000.0, "Bytes_data_recv_per_s": 80000.0, "Latency_us": 150},
        {"hostgroup": 1, "srv_host": "10.0.0.2", "srv_port": 3306, "status": "SHUNNED", "ConnUsed": 0, "ConnFree": 0,
         "ConnUsed_pct": 0.0, "ConnOK_per_s": 0.0, "ConnERR_per_s": 3.0, "Queries_per_s": 0.0,
         "Bytes_data_sent_per_s": 0.0, "Bytes_data_recv_per_s": 0.0, "Latency_us": 0},
    ],
    "global": {"ProxySQL_Uptime": 3725, "Client_Connections_connected": 16, "Server_Connections_connected": 24,
               "Questions": 15000, "Slow_queries": 1, "ConnPool_get_conn_success": 100,
               "Query_Cache_Entries": 0, "Queries_backends_bytes_sent": 1040000},
    "global_rates": {"Questions": 999.0, "Slow_queries": 0.0, "ConnPool_get_conn_success": 10.0,
                     "Queries_backends_bytes_sent": 72400.0},
    "pool_wait": {"proxy_time_pct": 10.0, "backend_time_ms_per_s": 663.0, "immediate_pct": 90.0,
                  "get_conn_failure_per_s": 0.0},
    "commands": [
        {"Command": "SELECT", "Total_cnt": 15200, "Total_Time_us": 6840000, "cnt_per_s": 956.0, "avg_us": 450.0,
         "avg_us_total": 450.0, "interval_time_us": 430200,
         "buckets": {"cnt_100us": 100, "cnt_500us": 700, "cnt_1ms": 120, "cnt_5ms": 30, "cnt_1s": 6, "cnt_INFs": 0}},
        {"Command": "UPDATE", "Total_cnt": 1900, "Total_Time_us": 3800000, "cnt_per_s": 120.0, "avg_us": 2000.0,
         "avg_us_total": 2000.0, "interval_time_us": 240000, "buckets": {}},
    ],
    "processlist": [
        {"SessionID": 11, "user": "sbtest", "db": "sbtest", "cli_host": "127.0.0.1", "hostgroup": 0,
         "srv_host": "10.0.0.1", "command": "Query", "time_ms": 12, "info": "UPDATE sbtest1 SET k=k+1 WHERE id=7"},
        {"SessionID": 12, "user": "sbtest", "db": "sbtest", "cli_host": "127.0.0.1", "hostgroup": None,
         "srv_host": None, "command": "Sleep", "time_ms": 5000, "info": None},
    ],
    "query_rules": [
        {"rule_id": 2, "hits": 8800, "hits_per_s": 865.0, "active": 1, "match_digest": "^SELECT",
         "destination_hostgroup": 1, "apply": 1},
    ],
    "digest_top": [
        {"hostgroup": 0, "schemaname": "sbtest", "username": "sbtest", "digest": "0x1",
         "digest_text": "UPDATE sbtest1 SET k=k+? WHERE id=?", "count_per_s": 101.0, "avg_us": 2000.0,
         "time_ms_per_s": 202.0},
    ],
    "hostgroup_waits": Missing("stats_mysql_hostgroup_connection_pool not present in this ProxySQL build",
                               "per-hostgroup pool wait times need a build with it (PROXYSQL31)"),
}  # fmt: skip
