"""What each operation cost, as engineers compute it by hand from vmstat,
iostat and the server's counters: host reads, KiB read and written, context
switches and CPU per transaction, WAL/redo bytes and the local server's CPU
per transaction, for every interval and for the run (and per transaction
type, apportioned: see APPORTIONED); the database's and
the server's size at the start and end; the run's totals (LSN difference,
checkpoints, rows changed); and the client's own CPU, with a warning when
the client, not the server, is what the result measures.

`CostMeter` takes the readings (cheap /proc reads on every interval; one
poll of the target at the run's start and end); the results are the values
of benchtop.record.costs that interval lines, summaries and summary.json carry.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from benchtop.engine.sample import EngineSample
from benchtop.record.costs import (
    ClientCpu,
    Growth,
    HostAdvice,
    IntervalCosts,
    RunCosts,
    Sizes,
    TypeCost,
    Work,
    log_name,
)
from benchtop.run.target_readings import (
    TargetReader,
    data_path,
    database_bytes,
    server_pid,
    sqlite_bytes,
    totals_between,
    wal_rate,
)
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import SETTINGS
from benchtop.sources.host_settings import host_flags, read_host_settings
from benchtop.sources.host_state import tree_counters, tree_reading
from benchtop.sources.os import OSCounters, read_counters, real_disks
from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_scan import ProcScan, scan
from benchtop.sources.proc_table import LatestPass, StatsPass, read_pass
from benchtop.sources.process import ProcessReading, clock_ticks, self_cpu_s
from benchtop.target import Target

CLIENT_CORE_PER_WORKER = 0.5  # more than this and the client is (part of) what is measured
HOST_SATURATED_PCT = 95.0


@dataclass(frozen=True, slots=True)
class HostReading:
    """Cumulative host, client and server-process counters at one instant."""

    t: float  # monotonic
    os: OSCounters | None
    client_cpu_s: float
    server: ProcessReading | None
    readings_cpu_s: float = 0.0  # the CPU this meter's readings of the server's processes took, so far


def type_service_s(prev: EngineSample, cur: EngineSample, types: int) -> list[float]:
    """Seconds the workers spent serving each of `types` transaction types
    between two samples: from each transaction's actual start, so an
    open-loop type's wait for its ticket (which costs the host nothing) does
    not draw the host's CPU and reads to it.  [] with one type, or a sample
    without the sums.
    """
    if types < 2 or len(cur.svc_ns_by_type) < types or len(prev.svc_ns_by_type) < types:
        return []
    return [max(c - p, 0) / 1e9 for c, p in zip(cur.svc_ns_by_type[:types], prev.svc_ns_by_type[:types])]


def work_between(prev: HostReading, cur: HostReading, wal_bytes: float | None = None) -> Work:
    seconds = max(cur.t - prev.t, 1e-9)
    server_cpu = None
    if prev.server is not None and cur.server is not None:
        server_cpu = max(cur.server.cpu_s - prev.server.cpu_s, 0.0)
    client = max(cur.client_cpu_s - prev.client_cpu_s, 0.0)
    if prev.os is None or cur.os is None:
        return Work(seconds, wal_bytes=wal_bytes, server_cpu_s=server_cpu, client_cpu_s=client, has_os=False)
    d = cur.os.delta(prev.os)
    ticks = clock_ticks()
    busy = sum(v for k, v in d.cpu.items() if k not in ("idle", "iowait")) / ticks
    idle = sum(v for k, v in d.cpu.items() if k in ("idle", "iowait")) / ticks
    return Work(seconds, float(d.reads), d.read_kb, d.write_kb, float(d.context_switches), busy, idle,
                wal_bytes, server_cpu, client)


def client_cpu(work: Work, ops: float, threads: int) -> ClientCpu:
    """The client's own CPU over `work`, and a warning when it may be the bottleneck.

    >>> client_cpu(Work(10.0, cpu_s=5.0, idle_s=15.0, client_cpu_s=8.0), 4000, 1).warning
    'the client used 0.80 of a core per worker (more than half): the result may measure benchtop, not the server'
    >>> client_cpu(Work(10.0, cpu_s=19.5, idle_s=0.5, client_cpu_s=1.0), 4000, 4).warning
    "the host's CPU was 97.5% busy: the result may measure the host's saturation, not the server"
    """
    cores = work.client_cpu_s / work.seconds if work.seconds > 0 else 0.0
    per_worker = cores / threads if threads > 0 else None
    busy = work.host_busy_pct
    warning = None
    if per_worker is not None and per_worker > CLIENT_CORE_PER_WORKER:
        warning = (f"the client used {per_worker:.2f} of a core per worker (more than half): "
                   "the result may measure benchtop, not the server")
    elif busy is not None and busy >= HOST_SATURATED_PCT:
        warning = f"the host's CPU was {busy:.1f}% busy: the result may measure the host's saturation, not the server"
    return ClientCpu(
        cpu_s=round(work.client_cpu_s, 3),
        per_op_us=round(1e6 * work.client_cpu_s / ops, 3) if ops > 0 else None,
        cores=round(cores, 3),
        per_worker_cores=None if per_worker is None else round(per_worker, 3),
        host_busy_pct=busy,
        warning=warning,
    )


class CostMeter:
    """Readings and results for one run.  `begin()` when counting starts,
    `interval()` on every reading, `count()` for each counted interval,
    `finish()` at the end.  `latest`: the target's newest monitor snapshot
    (for WAL per interval), when a recorder polls it.  `shared`: where each
    interval's pass over /proc is published for the OS monitor."""

    def __init__(self, engine: str, target: Target, latest: Callable[[], SourceSnapshot | None] | None = None,
                 probe_target: bool = True, shared: LatestPass | None = None) -> None:
        self.engine = engine
        self.target = target
        self._latest = latest or (lambda: None)
        self._reader = TargetReader(target) if probe_target else None
        try:
            self._disks = real_disks()
        except OSError:
            self._disks = None
        self._pid: int | None = None
        self._first: HostReading | None = None
        # the target's own snapshot as the run began (its settings give the run's validity)
        self.first_snapshot: SourceSnapshot | None = None
        self._type_work: list[Work] = []
        self._ops_by_type: list[int] = []
        self.server_settings: dict[str, str] | None = None
        self.monitor_settings: Mapping[str, Any] | None = None
        self.host_settings: dict[str, Any] = {}
        self._sqlite_start: int | None = None
        self._files = ProcFiles()
        self._shared = shared
        self._readings_s = 0.0
        # the newest pass over /proc of an interval's reading: the verdict's neighbours and waits read it too
        self.scan: ProcScan | None = None

    def _type_wal_sum(self) -> float:
        return sum(w.wal_bytes or 0.0 for w in self._type_work)

    # -- readings
    def read(self, memory: bool = True, taken: StatsPass | None = None) -> HostReading:
        """`taken`: a pass over /proc just made (else one is made)."""
        try:
            counters: OSCounters | None = read_counters(disks=self._disks)
        except (OSError, ValueError):
            counters = None
        server = None
        t0 = time.thread_time()
        if self._pid is not None and memory:  # the server's memory is reported at the start and the end only
            # the tree's CPU and memory alone: each process's io would be read for nothing
            stats = (taken or read_pass(self._files)).stats
            server = tree_reading(tree_counters(self._pid, stats, self._files, memory=True, io=False), self._pid)
        elif self._pid is not None:
            self.scan = scan(self._pid, files=self._files, taken=taken, shared=self._shared)
            server = self.scan.server
        self._readings_s += time.thread_time() - t0
        return HostReading(time.monotonic(), counters, self_cpu_s(), server, self._readings_s)

    def close(self) -> None:
        """Closes the /proc files kept open between readings."""
        self._files.close()

    def begin(self) -> HostReading:
        """The start of the measured run: the target's counters and settings,
        the host's settings, and the first host reading."""
        snap, settings = self._reader.read(with_settings=True) if self._reader else (None, None)
        self.first_snapshot = snap
        self.server_settings = settings
        self.monitor_settings = snap.panel(SETTINGS) if snap is not None else None
        mon = self.monitor_settings if isinstance(self.monitor_settings, Mapping) else None
        self._pid = server_pid(self.target, mon)
        self.host_settings = read_host_settings(data_path(self.engine, self.target, mon))
        self._sqlite_start = sqlite_bytes(self.target.database) if self.engine == "sqlite" else None
        taken = read_pass(self._files) if self._pid is not None else None
        self._first = self.read(taken=taken)
        if self._pid is not None:
            # the first interval's run-queue waits and neighbours count from here, as every later one's do from
            # the reading before (without it the first interval read 'network' for want of them): from the same
            # pass over /proc as the memory reading
            self.scan = scan(self._pid, files=self._files, taken=taken, shared=self._shared)
        return self._first

    @property
    def server_pid(self) -> int | None:
        """The local server's pid, once begin() found it."""
        return self._pid

    @property
    def started(self) -> bool:
        return self._first is not None

    def interval(self, prev: HostReading, cur: HostReading, transactions: int, threads: int) -> IntervalCosts:
        """An interval's costs: per op, and the client's CPU (and, for the
        verdict, the work and the OS counters' difference, which no line prints)."""
        work = self._work(prev, cur)
        os_delta = cur.os.delta(prev.os) if cur.os is not None and prev.os is not None else None
        return IntervalCosts(work.per_op(transactions), client_cpu(work, transactions, threads), work,
                             log_name(self.engine), os_delta)

    def _work(self, prev: HostReading, cur: HostReading) -> Work:
        rate = wal_rate(self._latest())
        wal = rate * (cur.t - prev.t) if rate is not None else None
        return work_between(prev, cur, wal)

    def count(self, work: Work, by_type: Sequence[int], busy_s: Sequence[float] = (),
              writes: Sequence[bool] = ()) -> None:
        """A counted interval's work, shared out to the transaction types
        (APPORTIONED): what was written to the types that write (`writes`,
        per type; unknown: all of them) by their transactions, the rest by
        the workers' service time per type when known, else by transactions."""
        if busy_s:  # the engine's per-type counters may have more slots than the workload has types
            by_type = by_type[: len(busy_s)]
        total = sum(by_type)
        if len(by_type) < 2 or total <= 0:
            return
        n = len(by_type)
        weights = list(busy_s[:n]) if len(busy_s) >= n and sum(busy_s[:n]) > 0 else [float(c) for c in by_type]
        weight_sum = sum(weights)
        writers = [bool(w) for w in writes[:n]] if len(writes) >= n else [True] * n
        write_weights = [float(c) if w else 0.0 for c, w in zip(by_type, writers)]
        if sum(write_weights) <= 0:  # no writing transaction ran (background writes): to what ran
            write_weights = [float(c) for c in by_type]
        write_sum = sum(write_weights)
        rest, written = work.split_writes()
        if not self._type_work:
            self._type_work = [Work(0.0) for _ in by_type]
            self._ops_by_type = [0 for _ in by_type]
        for i, n_i in enumerate(by_type[: len(self._type_work)]):
            share = rest.scaled(weights[i] / weight_sum).plus(written.scaled(write_weights[i] / write_sum))
            self._type_work[i] = self._type_work[i].plus(share)
            self._ops_by_type[i] += n_i

    def finish(self, transactions: int, threads: int, time_s: float, type_names: Sequence[str],
               server_ok: bool = True) -> RunCosts | None:
        """The run's per_op, by_type, sizes, totals, client_cpu and host objects.
        `server_ok=False` (the run failed): the target is not asked again, so
        a dead server costs no connect timeout at the end."""
        if self._first is None:
            return None
        last_reading = self.read()
        last_snap, _ = self._reader.read() if self._reader and server_ok else (None, None)
        totals = totals_between(self.first_snapshot, last_snap)
        work = work_between(self._first, last_reading, totals.wal_bytes)
        by_type = {}
        for i, name in enumerate(type_names if len(type_names) > 1 else ()):
            if i < len(self._type_work) and self._ops_by_type[i] > 0:
                w = self._type_work[i]
                if totals.wal_bytes is not None and self._type_wal_sum() > 0 and w.wal_bytes is not None:
                    # WAL per type: the run's exact total, shared as the interval estimates were
                    w = Work(w.seconds, w.reads, w.kb_read, w.kb_written, w.context_switches, w.cpu_s, w.idle_s,
                             totals.wal_bytes * w.wal_bytes / self._type_wal_sum(),
                             w.server_cpu_s, w.client_cpu_s, w.has_os)
                by_type[name] = TypeCost(self._ops_by_type[i], w.per_op(self._ops_by_type[i]))
        if self.engine == "sqlite":
            db_start, db_end = self._sqlite_start, sqlite_bytes(self.target.database)
        else:
            db_start, db_end = database_bytes(self.first_snapshot), database_bytes(last_snap)
        rss_start = self._first.server.rss_bytes if self._first.server else None
        rss_end = last_reading.server.rss_bytes if last_reading.server else None
        hours = time_s / 3600 if time_s > 0 else 0
        flags = host_flags(self.host_settings)
        return RunCosts(
            per_op=work.per_op(transactions),
            log_name=log_name(self.engine),
            by_type=by_type,
            sizes=Sizes(Growth(db_start, db_end, _growth(db_start, db_end, hours)),
                        Growth(rss_start, rss_end, _growth(rss_start, rss_end, hours))),
            totals=totals,
            client_cpu=replace(client_cpu(work, transactions, threads), readings_cpu_s=round(
                last_reading.readings_cpu_s - self._first.readings_cpu_s, 4) if self._pid is not None else None),
            host=HostAdvice(self.host_settings, tuple(f.text() for f in flags)),
        )


def _growth(start: int | None, end: int | None, hours: float) -> float | None:
    if start is None or end is None or hours <= 0:
        return None
    return round((end - start) / hours, 1)
