"""The readings of one interval that say what limits a run.  Every field
may be unknown (None): a remote server has no process here to read, a
monitor source may not answer; the rules that need a missing field do not
fire, and the verdict's confidence says so."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Final, Mapping

# The verdict's `limit`, in the order ties are broken (waits before the CPU
# they leave idle: a queue hides the resource behind it).
LIMITS: Final = ("pool", "locks", "disk", "neighbours", "server_cpu", "client_cpu", "rate", "network", "unclear")

NAMES: Final = {
    "pool": "pool queue",
    "locks": "lock waits",
    "disk": "disk",
    "neighbours": "other processes",
    "server_cpu": "server CPU",
    "client_cpu": "client CPU",
    "rate": "rate target",
    "network": "network round trips",
    "unclear": "unclear",
}


@dataclass(frozen=True, slots=True)
class Signals:
    """One interval's signals (rates are per second over the interval)."""

    seconds: float = 1.0
    # the load, from the engine
    threads: int = 0  # workers running (on event loops: connections)
    loop_threads: int = 0  # --connections: the event-loop threads carrying them (0: a thread each)
    tps: float = 0.0
    rate_target: float = 0.0  # transactions/s asked of an open loop; 0: closed loop
    backlog: float | None = None  # open loop: transactions due but not started, on average
    busy_workers: float | None = None  # workers inside a transaction, on average
    latency_ms: float | None = None  # average per transaction
    queries_per_txn: float | None = None
    writes_per_txn: float | None = None  # write statements per transaction
    # CPU, from /proc
    cpus: int = 1  # online CPUs of the host
    client_cpus: float = 1  # CPUs the client may run on (its affinity, less its cgroup's cpu.max quota)
    client_cores: float | None = None  # benchtop's own CPU, in cores
    server_cores: float | None = None  # the local server's process tree, in cores
    server_process: str | None = None  # its name (mariadbd, postgres, pgbouncer)
    server_cpus: float | None = None  # CPUs the local server may run on (its affinity, less its cgroup's quota)
    host_busy_pct: float | None = None
    iowait_pct: float | None = None
    run_queue: float | None = None  # runnable tasks (vmstat's r)
    # the host's other processes and the run's waits for a CPU, from one pass over /proc
    neighbour_cores: float | None = None  # cores taken by processes neither benchtop's nor the server's
    neighbour_top: str | None = None  # the busiest of them by name: `sh 0.98, dd 0.31`
    worker_cpu_wait: float | None = None  # benchtop's workers runnable but not running, on average (schedstat)
    server_cpu_wait: float | None = None  # the server's tasks runnable but not running, on average
    # the busiest disk, from /proc/diskstats
    disk: str | None = None
    disk_util_pct: float | None = None
    flushes_per_s: float | None = None
    disk_writes_per_s: float | None = None  # write requests completed (a synchronous write is one, with FUA)
    flush_await_ms: float | None = None  # time per flush (fsync reaching the device)
    write_await_ms: float | None = None
    # the server's own account of its sessions' time
    db_sessions: float | None = None  # sessions doing work (the denominator of the wait shares)
    io_waiting: float | None = None  # sessions waiting on I/O (file I/O, WAL/redo writes and syncs), on average
    lock_waiting: float | None = None  # sessions waiting on row/table locks, on average
    lock_waits_per_s: float | None = None
    locking_statements_per_s: float | None = None  # the server's INSERT/UPDATE/DELETE per second (its own window)
    top_io_wait: str | None = None  # the largest I/O wait event, as the server names it
    top_lock_wait: str | None = None  # the largest lock wait event
    syncs_per_commit: float | None = None  # the server's own WAL syncs over its commits (PostgreSQL's pg_stat_wal)
    server_syncs_per_s: float | None = None  # the server's own log syncs (InnoDB's Innodb_os_log_fsyncs), per second
    server_write_bytes_per_s: float | None = None  # the local server's processes' writes (/proc/PID/io write_bytes)
    sync_ms: float | None = None  # one 4 KiB overwrite and fdatasync timed on the local server's data filesystem
    # a pooler in front of the server
    pooler: str | None = None  # pgbouncer | proxysql
    pool_waiting: float | None = None  # clients waiting for a server connection, on average
    pool_clients: float | None = None  # clients of the pool (active + waiting)
    pool_wait_ms: float | None = None  # the longest wait now (PgBouncer's maxwait)
    # the statement that took most of the server's time
    top_statement: str | None = None
    top_statement_ms_per_s: float | None = None
    top_statement_share: float | None = None  # of the statements' time the server accounted for
    server_ms_per_query: float | None = None  # the server's own statement time per statement (its timers)
    server_local: bool | None = None  # the server runs on this host (None: not known)
    embedded: bool = False  # the database runs inside benchtop's workers (SQLite): no wire, no server process
    missing: tuple[str, ...] = ()  # signals that could not be read, in words

    @property
    def open_loop(self) -> bool:
        return self.rate_target > 0

    @property
    def sessions(self) -> float:
        """The sessions a wait share is measured against: the server's count
        of working sessions when it gave one, else the workers."""
        if self.db_sessions is not None and self.db_sessions >= 1:
            return self.db_sessions
        return float(max(self.threads, 1))

    def with_missing(self, *what: str) -> "Signals":
        return replace(self, missing=tuple(dict.fromkeys(self.missing + what)))

    def to_dict(self) -> dict[str, Any]:
        """Known fields only (a recorded snapshot for the rules' tests)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()
                if v is not None and v != ()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Signals":
        names = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {k: (tuple(v) if k == "missing" else v) for k, v in d.items() if k in names}
        return cls(**kw)
