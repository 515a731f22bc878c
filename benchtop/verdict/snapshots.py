"""The verdict's signals that the monitor's sources already read, from their
snapshots' panels: the server's waits (MySQL performance_schema wait
summaries and InnoDB row lock time; PostgreSQL's pg_stat_activity wait
events, one sample per poll), the pooler's waiting clients (PgBouncer
SHOW POOLS / SHOW STATS, ProxySQL's time in the proxy), the statement that
took most of the server's time, and, for the monitor without a run, the OS
source's CPU, run queue, disk and server process."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence, TypeVar

from benchtop.sources.base import Missing
from benchtop.sources.fields import (
    CPU,
    DATABASE,
    DISK,
    POOLS,
    POOL_WAIT,
    RUN_QUEUE,
    SERVER_PROCESS,
    SESSIONS,
    STATS,
    STATUS_RATES,
    THREADS,
    TOP_STATEMENTS,
    WAITS,
    WAIT_EVENTS,
    WAL,
    InnoDBPanel,
)
from benchtop.verdict.decide import Verdict, decide
from benchtop.verdict.signals import Signals

# performance_schema instruments that are the server's sessions waiting on files
_MYSQL_IO = ("wait/io/file/",)
_MYSQL_LOCKS = ("wait/lock/", "wait/io/table/sql/handler:lock")
# PostgreSQL waits on the WAL writer / WAL insertion are waits on the disk too
_PG_IO_LWLOCKS = ("WALWrite", "WALInsert", "WALBufMapping")


class Snapshot(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def ok(self) -> bool: ...
    @property
    def panels(self) -> Mapping[str, Any]: ...


def _panel(snap: Snapshot, name: str) -> Any:
    value = snap.panels.get(name)
    return None if isinstance(value, Missing) or (isinstance(value, Mapping) and "missing" in value) else value


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def mysql_signals(snap: Snapshot) -> dict[str, Any]:
    """InnoDB row lock time, performance_schema file I/O and lock waits, the top statement.

    >>> class S:
    ...     kind, ok = "mysql", True
    ...     panels = {"innodb": {"row_lock_waiting": 6.5, "row_lock_waits_per_s": 120.0, "log_fsyncs_per_s": 310.0},
    ...               "waits": [{"event": "wait/io/file/innodb/innodb_log_file", "ms_per_s": 700.0},
    ...                         {"event": "wait/io/table/sql/handler", "ms_per_s": 900.0}],
    ...               "threads": {"running": 9}}
    >>> d = mysql_signals(S())
    >>> d["lock_waiting"], d["io_waiting"], d["top_io_wait"], d["db_sessions"], d["server_syncs_per_s"]
    (6.5, 0.7, 'wait/io/file/innodb/innodb_log_file', 8.0, 310.0)
    >>> S.panels["waits"].append({"event": "wait/lock/table/sql/handler", "ms_per_s": 40.0})
    >>> mysql_signals(S())["top_lock_wait"]
    'InnoDB row locks'

    """
    out: dict[str, Any] = {}
    missing = []
    inn = InnoDBPanel.of(snap.panels)
    waits = _panel(snap, WAITS)
    lock = None
    if inn is not None and inn.row_lock_waiting is not None:
        lock = float(inn.row_lock_waiting)
        out["lock_waits_per_s"] = inn.row_lock_waits_per_s
    if inn is not None and inn.log_fsyncs_per_s is not None:
        out["server_syncs_per_s"] = inn.log_fsyncs_per_s
    if isinstance(waits, list):
        io_ms = sum(float(w.get("ms_per_s") or 0) for w in waits if str(w.get("event", "")).startswith(_MYSQL_IO))
        lock_ms = sum(float(w.get("ms_per_s") or 0) for w in waits
                      if str(w.get("event", "")).startswith(_MYSQL_LOCKS))
        out["io_waiting"] = round(io_ms / 1000.0, 3)
        lock = (lock or 0.0) + lock_ms / 1000.0
        for key, prefixes in (("top_io_wait", _MYSQL_IO), ("top_lock_wait", _MYSQL_LOCKS)):
            named = [w for w in waits if str(w.get("event", "")).startswith(prefixes) and w.get("ms_per_s")]
            if named:
                top = max(named, key=lambda w: float(w.get("ms_per_s") or 0))
                out[key] = str(top["event"])
                if key == "top_lock_wait" and inn is not None and (inn.row_lock_waiting or 0) * 1000 > float(
                        top.get("ms_per_s") or 0):
                    out[key] = "InnoDB row locks"  # performance_schema has no instrument for them
    else:
        missing.append("performance_schema waits")
    if lock is not None:
        out["lock_waiting"] = round(lock, 3)
    else:
        missing.append("InnoDB row lock time")
    rates = _panel(snap, STATUS_RATES)
    if isinstance(rates, Mapping):
        writes = [_num(rates.get(f"com_{k}_per_s")) for k in ("insert", "update", "delete")]
        if any(w is not None for w in writes):
            out["locking_statements_per_s"] = sum(w or 0.0 for w in writes)
    threads = _panel(snap, THREADS)
    running = _num(threads.get("running")) if isinstance(threads, Mapping) else None
    if running is not None:
        out["db_sessions"] = max(running - 1.0, 0.0)  # the monitor's own session is running its poll
    out.update(_top_statement(_panel(snap, TOP_STATEMENTS)))
    out["missing"] = tuple(missing)
    return out


def postgres_signals(snap: Snapshot) -> dict[str, Any]:
    """pg_stat_activity's wait events (one sample) over its working sessions.

    >>> class S:
    ...     kind, ok = "postgresql", True
    ...     panels = {"sessions": {"active": 6, "idle in transaction": 2, "idle": 1, "total": 9},
    ...               "wait_events": [{"type": "Lock", "event": "transactionid", "count": 5},
    ...                               {"type": "IO", "event": "WALSync", "count": 1}]}
    >>> d = postgres_signals(S())
    >>> d["db_sessions"], d["lock_waiting"], d["io_waiting"], d["top_lock_wait"], d["top_io_wait"]
    (8.0, 5.0, 1.0, 'Lock:transactionid', 'IO:WALSync')
    """
    out: dict[str, Any] = {}
    sessions = _panel(snap, SESSIONS)
    waits = _panel(snap, WAIT_EVENTS)
    if not isinstance(waits, list) or not isinstance(sessions, Mapping):
        return {"missing": ("pg_stat_activity wait events",)}
    working = sum(float(v) for k, v in sessions.items() if k not in ("idle", "total") and isinstance(v, (int, float)))
    lock = io = 0.0
    top: dict[str, tuple[float, str]] = {}
    for w in waits:
        kind, event, n = str(w.get("type")), str(w.get("event")), float(w.get("count") or 0)
        key = None
        if kind == "Lock":
            lock += n
            key = "top_lock_wait"
        elif kind == "IO" or (kind == "LWLock" and event in _PG_IO_LWLOCKS):
            io += n
            key = "top_io_wait"
        if key and n > top.get(key, (0.0, ""))[0]:
            top[key] = (n, f"{kind}:{event}")
    out.update(db_sessions=working, lock_waiting=lock, io_waiting=io, **{k: v[1] for k, v in top.items()})
    wal, db = _panel(snap, WAL), _panel(snap, DATABASE)
    syncs = _num(wal.get("wal_sync_per_s")) if isinstance(wal, Mapping) else None
    commits = _num(db.get("commits_per_s")) if isinstance(db, Mapping) else None
    if syncs is not None and commits:
        out["syncs_per_commit"] = round(syncs / commits, 3)
    out.update(_top_statement(_panel(snap, TOP_STATEMENTS)))
    return out


def _top_statement(rows: Any) -> dict[str, Any]:
    if not isinstance(rows, list) or not rows:
        return {}
    named = [r for r in rows if r.get("query") and not r.get("aggregate") and not r.get("sampled")]
    if not named:
        return {}
    top = max(named, key=lambda r: float(r.get("total_ms_per_s") or 0))
    ms, total = _num(top.get("total_ms_per_s")), sum(_num(r.get("total_ms_per_s")) or 0.0 for r in named)
    return {"top_statement": str(top["query"])[:120], "top_statement_ms_per_s": ms,
            "top_statement_share": round(ms / total, 3) if ms and total else None}


def statement_time(rows: Any, database: str | None = None) -> float | None:
    """The server's mean time per statement (ms) from its statement timers
    (pg_stat_statements, performance_schema), over the run's database's
    statements when the rows name one.

    >>> rows = [{"db": "sbtest", "calls_per_s": 900.0, "total_ms_per_s": 90.0},
    ...         {"db": "sbtest", "calls_per_s": 100.0, "total_ms_per_s": 110.0},
    ...         {"db": "other", "calls_per_s": 10.0, "total_ms_per_s": 900.0}]
    >>> statement_time(rows, "sbtest")
    0.2
    """
    if not isinstance(rows, list):
        return None
    mine = [r for r in rows if database is None or (r.get("db") or r.get("schema") or database) == database]
    calls = sum(_num(r.get("calls_per_s")) or 0.0 for r in mine)
    total = sum(_num(r.get("total_ms_per_s")) or 0.0 for r in mine)
    return round(total / calls, 4) if calls > 0 else None


def pgbouncer_signals(snap: Snapshot, database: str | None) -> dict[str, Any]:
    """Clients waiting for a server connection in the run's pools: the time
    they waited per second (SHOW STATS: the average number waiting), else
    SHOW POOLS' cl_waiting at the poll; maxwait as the longest wait.

    >>> class S:
    ...     kind, ok = "pgbouncer", True
    ...     panels = {"pools": [{"database": "db1", "cl_active": 1, "cl_waiting": 15, "maxwait": 0, "maxwait_us": 9000},
    ...                         {"database": "pgbouncer", "cl_active": 1, "cl_waiting": 0}],
    ...               "stats": [{"database": "db1", "wait_time_us_per_s": 14200000.0}]}
    >>> d = pgbouncer_signals(S(), "db1")
    >>> d["pool_waiting"], d["pool_clients"], d["pool_wait_ms"]
    (14.2, 16.0, 9.0)
    """
    pools = _panel(snap, POOLS)
    if not isinstance(pools, list):
        return {"missing": ("PgBouncer SHOW POOLS",)}
    mine = [p for p in pools if p.get("database") != "pgbouncer" and (database is None or p.get("database") == database)]
    if not mine:
        mine = [p for p in pools if p.get("database") != "pgbouncer"]
    names = {p.get("database") for p in mine}
    waiting = sum(_num(p.get("cl_waiting")) or 0.0 for p in mine)
    clients = sum((_num(p.get("cl_active")) or 0.0) + (_num(p.get("cl_waiting")) or 0.0) for p in mine)
    maxwait = max(((_num(p.get("maxwait")) or 0.0) * 1000 + (_num(p.get("maxwait_us")) or 0.0) / 1000 for p in mine),
                  default=None)
    stats = _panel(snap, STATS)
    if isinstance(stats, list):
        rates = [_num(r.get("wait_time_us_per_s")) for r in stats if r.get("database") in names]
        if rates and all(r is not None for r in rates):
            waiting = sum(r or 0.0 for r in rates) / 1e6
    return {"pooler": "PgBouncer", "pool_waiting": round(waiting, 2), "pool_clients": clients,
            "pool_wait_ms": None if maxwait is None else round(maxwait, 1)}


def proxysql_signals(snap: Snapshot) -> dict[str, Any]:
    """ProxySQL: the statements' time spent in the proxy (waiting for a
    pooled connection, routing) over their whole time.

    >>> class S:
    ...     kind, ok = "proxysql", True
    ...     panels = {"pool_wait": {"statement_time_ms_per_s": 8000.0, "proxy_time_ms_per_s": 6000.0}}
    >>> d = proxysql_signals(S())
    >>> d["pool_waiting"], d["pool_clients"]
    (6.0, 8.0)
    """
    pw = _panel(snap, POOL_WAIT)
    total = _num(pw.get("statement_time_ms_per_s")) if isinstance(pw, Mapping) else None
    proxy = _num(pw.get("proxy_time_ms_per_s")) if isinstance(pw, Mapping) else None
    if total is None or proxy is None:
        return {"missing": ("ProxySQL pool wait",)}
    return {"pooler": "ProxySQL", "pool_waiting": round(proxy / 1000.0, 2), "pool_clients": round(total / 1000.0, 2)}


def os_signals(snap: Snapshot) -> dict[str, Any]:
    """The OS source's CPU, run queue, busiest disk and server process (the monitor's own view)."""
    out: dict[str, Any] = {}
    cpu = _panel(snap, CPU)
    if isinstance(cpu, Mapping):
        idle, iowait = _num(cpu.get("idle_pct")), _num(cpu.get("iowait_pct"))
        if idle is not None and iowait is not None:
            out["host_busy_pct"] = round(100.0 - idle - iowait, 1)
            out["iowait_pct"] = iowait
    rq = _num(snap.panels.get(RUN_QUEUE))
    if rq is not None:
        out["run_queue"] = rq
    disk = _panel(snap, DISK)
    if isinstance(disk, Mapping) and disk.get("util_pct") is not None:
        out.update(disk=disk.get("device"), disk_util_pct=_num(disk.get("util_pct")),
                   flushes_per_s=_num(disk.get("flushes_per_s")), flush_await_ms=_num(disk.get("flush_await_ms")),
                   write_await_ms=_num(disk.get("write_await_ms")), disk_writes_per_s=_num(disk.get("writes_per_s")))
    proc = _panel(snap, SERVER_PROCESS)
    if isinstance(proc, Mapping) and _num(proc.get("cpu_cores")) is not None:
        out["server_cores"] = _num(proc.get("cpu_cores"))
        if proc.get("name"):
            out["server_process"] = str(proc["name"])
    return out


def from_snapshots(snaps: Iterable[Snapshot], database: str | None = None, with_os: bool = False) -> dict[str, Any]:
    """Signals (as Signals' keyword arguments) from the newest snapshot of
    each source; `missing` names what a source could not give."""
    out: dict[str, Any] = {}
    missing: list[str] = []
    for snap in snaps:
        if not snap.ok:
            missing.append(f"{snap.kind} (not answering)")
            continue
        if snap.kind == "mysql":
            part = mysql_signals(snap)
        elif snap.kind == "postgresql":
            part = postgres_signals(snap)
        elif snap.kind == "pgbouncer":
            part = pgbouncer_signals(snap, database)
        elif snap.kind == "proxysql":
            part = proxysql_signals(snap)
        elif snap.kind == "os" and with_os:
            part = os_signals(snap)
            process = part.get("server_process")
            if process is not None and not serves(process, [s.kind for s in snaps]):
                # the host watches one local server's processes: not this one's (a PostgreSQL
                # verdict read 'next: server CPU (mariadbd 0.29 of 2 cores)')
                del part["server_process"], part["server_cores"]
                missing.append("os (the server process it watches is another server's)")
        else:
            continue
        missing += part.pop("missing", ())
        if snap.kind in ("mysql", "postgresql"):
            part["server_ms_per_query"] = statement_time(_panel(snap, "top_statements"), database)
        out.update({k: v for k, v in part.items() if v is not None})
    out["missing"] = tuple(missing)
    return out


_PROCESSES = {"mysql": ("mysqld", "mariadbd"), "postgresql": ("postgres", "postmaster")}


def serves(process: str, kinds: Iterable[str]) -> bool:
    """Whether the OS source's server process can be one of these servers'
    (any, when no server is among them).

    >>> serves("mariadbd", ["postgresql", "os"]), serves("mariadbd", ["mysql", "os"]), serves("postgres", ["os"])
    (False, True, True)
    """
    servers = [k for k in kinds if k in _PROCESSES]
    return not servers or any(process in _PROCESSES[k] for k in servers)


def monitor_verdict(snaps: Iterable[Snapshot], cpus: int, database: str | None = None) -> Verdict:
    """What limits the server now, from the monitor's newest snapshots alone
    (no load of benchtop's own: no client CPU, no rate, no round trips)."""
    return decide(Signals(cpus=cpus, **from_snapshots(snaps, database, with_os=True)))


SERVERS = ("mysql", "postgresql")  # a verdict is about one of these; poolers and the host go with any
S = TypeVar("S", bound=Snapshot)


def verdict_sources(latest: Sequence[S], shown: str | None) -> tuple[str | None, list[S]]:
    """The server a verdict is about (the one named `shown`, else the
    first) and the snapshots it is decided from: that server's, the
    poolers' and the host's; two servers' signals never mix.

    >>> from benchtop.sources.base import SourceSnapshot
    >>> S = lambda n, k: SourceSnapshot(n, k, 0.0, True)
    >>> snaps = [S("mysql", "mysql"), S("mysql-2", "mysql"), S("os", "os")]
    >>> [(a, [s.name for s in ss]) for a, ss in (verdict_sources(snaps, "mysql-2"), verdict_sources(snaps, "os"))]
    [('mysql-2', ['mysql-2', 'os']), ('mysql', ['mysql', 'os'])]
    """
    servers = [s for s in latest if s.kind in SERVERS]
    if not servers:
        return None, list(latest)
    about = next((s for s in servers if s.name == shown), servers[0])
    return about.name, [s for s in latest if s is about or s.kind not in SERVERS]


def server_verdicts(snaps: Sequence[S], cpus: int) -> list[tuple[str | None, Verdict]]:
    """One verdict per server watched, each from that server's snapshot with
    the poolers' and the host's (one verdict, about no server, when none is).

    >>> from benchtop.sources.base import SourceSnapshot
    >>> S = lambda n, k: SourceSnapshot(n, k, 0.0, True)
    >>> [name for name, _ in server_verdicts([S("mysql", "mysql"), S("os", "os"), S("mysql-2", "mysql")], 2)]
    ['mysql', 'mysql-2']
    >>> [name for name, _ in server_verdicts([S("os", "os")], 2)]
    [None]
    """
    names: list[str | None] = [s.name for s in snaps if s.kind in SERVERS] or [None]
    out = []
    for name in names:
        about, mine = verdict_sources(snaps, name)
        out.append((about, monitor_verdict(mine, cpus)))
    return out
