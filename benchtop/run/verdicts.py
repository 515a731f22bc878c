"""The run's side of the verdict (benchtop.verdict): each interval's signals
gathered from what the run already measures (the engine's interval, the
cost meter's CPU readings of benchtop and the local server, its /proc
counters) and from the monitor's newest snapshots (the server's waits, the
pooler's queue), then judged.  The verdicts are kept for the summary."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, TypeVar

from benchtop.record.samples import IntervalStats
from benchtop.sources.base import SourceError, SourceSnapshot
from benchtop.sources.pgbouncer import PgBouncerSource
from benchtop.sources.os import OSDelta
from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_scan import ProcScan, allowed_cpus, scan, shares
from benchtop.sources.process import process_name
from benchtop.sources.sync_probe import data_directory, probe_directory, timed_sync_ms
from benchtop.target import Target
from benchtop.target.locality import server_on_this_host
from benchtop.verdict import Signals, Verdict, decide, rules
from benchtop.verdict.snapshots import from_snapshots, pgbouncer_signals

DATA_SERVERS = ("mariadbd", "mysqld", "postgres")  # processes whose working directory is their data's
SYNC_PROBE_EVERY_S = 5.0  # a disk's sync time moves slowly: nine syncs every few seconds, not every interval
STALE_POLLS = 3  # a snapshot older than this many monitor intervals is not this interval's
POOL_TIMEOUT_S = 2.0  # the pooler's console answers at once on its own host


class PoolReader:
    """The pools of a PgBouncer found on the target's port (no --pgbouncer
    given), read through the same address with the run's user (its
    `pgbouncer` console: the user must be in stats_users).  The connection
    stays for the run: SHOW STATS' wait time gives the clients waiting on
    average over the interval, not SHOW POOLS' count at one instant."""

    def __init__(self, target: Target) -> None:
        self._src = PgBouncerSource("pgbouncer", replace(target, kind="pgbouncer", database="pgbouncer"),
                                    POOL_TIMEOUT_S, pools_only=True)
        self._database = target.database or None
        self._who = target.user or "the run's user"
        self._connected = False
        self._refused = False

    def connect(self) -> None:
        """Logs in to the console (once; a refusal is remembered: every
        interval would pay the timeout again)."""
        if self._connected or self._refused:
            return
        try:
            self._src.connect()
            self._connected = True
        except SourceError:
            self._src.close()
            self._refused = True

    def signals(self) -> dict[str, Any]:
        """Verdict signals; `missing` names the option that reads the pools when they cannot be read."""
        self.connect()
        if self._refused:
            return {"missing": (f"pool (PgBouncer's console refused {self._who}: add --pgbouncer DSN)",)}
        try:
            snap = self._src.poll()
        except SourceError:
            self._src.close()
            self._refused = True
            return self.signals()
        found = pgbouncer_signals(snap, self._database)
        if found.get("missing"):
            return {"missing": (f"pool (PgBouncer's SHOW POOLS not readable as {self._who}: add --pgbouncer DSN)",)}
        return found


def client_cpus() -> float:
    """CPUs this process may run on (taskset, cgroup cpusets), less its cgroup's CPU quota (cpu.max)."""
    return allowed_cpus() or float(os.cpu_count() or 1)


def host_signals(d: OSDelta | None) -> dict[str, Any]:
    """Host CPU, iowait, run queue and the busiest disk over an interval."""
    if d is None:
        return {}
    pct = d.cpu_pct()
    out: dict[str, Any] = {
        "host_busy_pct": round(100.0 - pct["idle_pct"] - pct["iowait_pct"], 1),
        "iowait_pct": pct["iowait_pct"],
    }
    if d.procs_running is not None:
        out["run_queue"] = max(d.procs_running - 1, 0)  # the reader itself is running
    busiest = d.busiest_disk()
    if busiest is not None:
        name, disk = busiest
        out.update(disk=name, disk_util_pct=disk.util_pct, flushes_per_s=disk.flushes_per_s,
                   flush_await_ms=disk.flush_await_ms, write_await_ms=disk.write_await_ms,
                   disk_writes_per_s=disk.writes_per_s)
    return out


T = TypeVar("T")


class PerServerProcess(Generic[T]):
    """A value read from the local server's process once, and again only
    when the server's pid changes (a restart): its name, its CPUs, the
    filesystem its data lives on."""

    def __init__(self, read: Callable[[int], T | None]) -> None:
        self._read = read
        self._pid: int | None = None
        self._value: T | None = None

    def __call__(self, pid: int | None) -> T | None:
        if pid != self._pid:
            self._pid, self._value = pid, (self._read(pid) if pid is not None else None)
        return self._value


def _probe_folder(pid: int) -> Path | None:
    """Where benchtop may time a sync beside the server's data (None: nowhere)."""
    data = data_directory(pid)
    return probe_directory(data) if data is not None else None


class VerdictMeter:
    """Judges each interval of one run; `latest` gives the monitor's newest
    snapshots by source name, `server_pid` the local server's pid (once the
    cost meter knows it), `poll_s` the monitor's interval, `scanned` the cost
    meter's newest pass over /proc (this interval's, when it took one: one
    pass serves both)."""

    def __init__(self, target: Target, latest: Callable[[], Mapping[str, SourceSnapshot]] | None = None,
                 server_pid: Callable[[], int | None] | None = None, poll_s: float = 2.0,
                 scanned: Callable[[], ProcScan | None] | None = None) -> None:
        self.target = target
        self._latest = latest or (lambda: {})
        self._server_pid = server_pid or (lambda: None)
        self._scanned = scanned or (lambda: None)
        self._files = ProcFiles()  # for the passes of its own
        self._poll_s = poll_s
        self._name = PerServerProcess(process_name)
        self._server_cpus = PerServerProcess(allowed_cpus)
        self._probe_folder = PerServerProcess(_probe_folder)
        self._sync: tuple[float, float | None] | None = None  # when a sync was last timed, and its time
        self._local = server_on_this_host(target) if target.kind in ("mysql", "postgresql") else None
        self._cpus = os.cpu_count() or 1
        self._client_cpus = client_cpus()
        self.verdicts: list[Verdict] = []
        self._scan: ProcScan | None = None
        self._pools: PoolReader | None = None

    def signals(self, iv: IntervalStats) -> Signals:
        work = iv.costs.work if iv.costs is not None else None
        kw: dict[str, Any] = {
            "seconds": iv.dt, "threads": iv.threads, "loop_threads": iv.loop_threads, "tps": iv.tps,
            "rate_target": iv.rate_target,
            "backlog": iv.queue if iv.rate_mode else None, "busy_workers": iv.concurrency,
            "latency_ms": iv.latency_ms.get("avg") if iv.transactions else None,
            "queries_per_txn": iv.qps / iv.tps if iv.tps > 0 else None,
            "writes_per_txn": iv.writes_per_s / iv.tps if iv.tps > 0 else None,
            "cpus": self._cpus, "client_cpus": self._client_cpus, "server_local": self._local,
            "embedded": self.target.kind == "sqlite",
        }
        missing: list[str] = []
        if work is not None:
            kw["client_cores"] = round(work.client_cpu_s / work.seconds, 3) if work.seconds > 0 else None
            if work.server_cpu_s is not None and work.seconds > 0:
                kw["server_cores"] = round(work.server_cpu_s / work.seconds, 3)
                kw["server_process"] = self._process_name()
                kw["server_cpus"] = self._allowed_server_cpus()
        if kw.get("server_cores") is None and not kw["embedded"]:
            missing.append("server CPU (remote server)" if self._local is False else "server CPU")
        kw.update(host_signals(iv.costs.os if iv.costs is not None else None))
        kw.update(self._proc_signals())
        now = time.time()
        fresh = [s for s in self._latest().values() if now - s.t <= STALE_POLLS * max(self._poll_s, 1.0)]
        found = from_snapshots(fresh, self.target.database or None)
        missing += found.pop("missing", ())
        if not any(s.kind in ("mysql", "postgresql") and s.ok for s in fresh) and self.target.kind in ("mysql", "postgresql"):
            missing.append("server waits")
        kw.update(found)
        pooler = self._process_name() if self._local else None
        if pooler == "pgbouncer" and not any(s.kind == "pgbouncer" and s.ok for s in fresh):
            pool = self._pool_reader().signals()
            missing += pool.pop("missing", ())
            kw.update(pool)
        elif pooler == "proxysql" and not any(s.kind == "proxysql" and s.ok for s in fresh):
            missing.append("pool (ProxySQL's pools: add --proxysql ADMIN-DSN)")
        return self._with_sync_time(Signals(**kw, missing=tuple(dict.fromkeys(missing))))

    def _with_sync_time(self, s: Signals) -> Signals:
        """When every commit syncs, one sync timed on the local server's data
        filesystem (only then: other workloads pay nothing for it)."""
        own = rules.server_syncs_per_txn(s)
        if own is None or own < rules.COMMIT_FLUSHES or not s.writes_per_txn or s.server_process not in DATA_SERVERS:
            return s
        folder = self._probe_folder(self._server_pid())
        if folder is None:
            return s
        now = time.monotonic()
        if self._sync is None or now - self._sync[0] >= SYNC_PROBE_EVERY_S:
            self._sync = (now, timed_sync_ms(folder))
        return replace(s, sync_ms=self._sync[1])

    def prepare(self) -> None:
        """Before the run's clock starts (the cost meter has found the
        server): a local PgBouncer's console is logged in to now, not inside
        the first interval (psycopg's import and a login on a busy host
        held the first reading, and the run's stop, for seconds); the cost
        meter's first pass over /proc is where the first interval's waits
        count from."""
        self._scan = self._scanned()
        if self._local and self._process_name() == "pgbouncer":
            self._pool_reader().connect()

    def _pool_reader(self) -> PoolReader:
        """The one console connection of the run, made when first asked for."""
        if self._pools is None:
            self._pools = PoolReader(self.target)
        return self._pools

    def judge(self, iv: IntervalStats) -> Verdict:
        verdict = decide(self.signals(iv))
        return verdict

    def close(self) -> None:
        """Closes the /proc files kept open between its passes."""
        self._files.close()

    def count(self, verdict: Verdict) -> None:
        """A counted interval's verdict (for the summary)."""
        self.verdicts.append(verdict)

    def shares(self) -> Counter[str]:
        return Counter(v.limit for v in self.verdicts)

    def _proc_signals(self) -> dict[str, Any]:
        """The server's own writes (and, from the same pass over /proc, the
        other processes' CPU and the run's waits for a CPU) since the last interval."""
        if self._local is False or self.target.kind == "sqlite":
            return {}
        cur = self._scanned()
        if cur is None or (self._scan is not None and cur.t <= self._scan.t):
            try:
                cur = scan(self._server_pid(), files=self._files)
            except OSError:
                return {}
        else:
            self._files.close()  # the cost meter's passes serve from now on
        prev, self._scan = self._scan, cur
        if prev is None:
            return {}
        d = shares(prev, cur)
        return {"server_write_bytes_per_s": d.server_write_bytes_per_s, "neighbour_cores": d.neighbour_cores,
                "neighbour_top": d.top() or None, "worker_cpu_wait": d.worker_cpu_wait,
                "server_cpu_wait": d.server_cpu_wait}

    def _allowed_server_cpus(self) -> float | None:
        """The server's CPU affinity and cgroup quota, read once per server process."""
        return self._server_cpus(self._server_pid())

    def _process_name(self) -> str | None:
        return self._name(self._server_pid())
