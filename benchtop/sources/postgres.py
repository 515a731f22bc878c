"""PostgreSQL server source over libpq (benchtop/target/pq.py).

One autocommit connection named "benchtop-monitor", read-only by default and
under a statement_timeout and a short lock_timeout; queries are files chosen
by server_version_num. It never queues behind a lock a user holds: relations
held or awaited in ACCESS EXCLUSIVE mode are left out of the size reads (and
named in the `sizes_skipped` panel), and any other lock fails its panel at once.
Each panel degrades on its own: a missing privilege or view makes that panel
a `Missing`, a lost connection fails the poll.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from benchtop.errors import one_line
from benchtop.sources import sql
from benchtop.sources.base import (
    PER_PROCESS_NOT_READ,
    PER_SESSION_NOT_READ,
    Missing,
    PanelFailed,
    Source,
    SourceError,
    SourceSnapshot,
    flatten,
    scrub_setting,
    shut_down_descriptor,
)
from benchtop.sources.rates import CounterTracker, Interval, to_number
from benchtop.sources.backend_usage import BackendUsage, not_local
from benchtop.sources.fields import (
    ACTIVITY,
    BLOCKING,
    AUTOVACUUM_WORKERS,
    BACKEND_USAGE,
    CACHE_HIT_RATIO,
    CHECKPOINTS,
    DATABASE,
    INDEXES,
    REPLICATION,
    SESSIONS,
    SETTINGS,
    SIZES_SKIPPED,
    STANDBY,
    TABLES,
    TOP_STATEMENTS,
    VACUUM,
    WAIT_EVENTS,
    WAL,
    WAL_BYTES_PER_S,
    WAL_POSITION,
)
from benchtop.sources.replication import standby_panel
from benchtop.target import Target
from benchtop.target.connection import libpq_conninfo, libpq_params
from benchtop.target.pq import Connection, PqError

BACKEND = "postgresql"
_MEMORY_UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_UNSAFE_WHEN = {"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off"}


def parse_lsn(text: str | None) -> int | None:
    """A pg_lsn's text form as a byte position.

    >>> parse_lsn("0/756DB758"), parse_lsn("1/0"), parse_lsn(None)
    (1970124632, 4294967296, None)
    """
    if not text:
        return None
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


def setting_bytes(setting: str, unit: str | None) -> int | None:
    """pg_settings' (setting, unit) for a memory setting, in bytes.

    >>> setting_bytes("32768", "8kB"), setting_bytes("1024", "MB")
    (268435456, 1073741824)
    """
    value = to_number(setting)
    if value is None or not unit:
        return None
    digits = "".join(ch for ch in unit if ch.isdigit())
    base = unit[len(digits) :]
    if base not in _MEMORY_UNITS:
        return None
    return int(value * (int(digits) if digits else 1) * _MEMORY_UNITS[base])


def settings_panel(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Durability settings plus a crash-safety verdict.

    >>> p = settings_panel([{"name": "fsync", "setting": "off", "unit": None},
    ...                     {"name": "shared_buffers", "setting": "16384", "unit": "8kB"}])
    >>> p["fsync"], p["shared_buffers_bytes"], p["crash_safe"], p["unsafe_because"]
    ('off', 134217728, False, ['fsync=off'])
    """
    out: dict[str, Any] = {}
    for row in rows:
        name, setting, unit = row["name"], row["setting"], row.get("unit")
        size = setting_bytes(setting, unit)
        if size is not None:
            out[f"{name}_bytes"] = size
        elif name == "server_version":
            out[name] = setting
        else:
            num = to_number(setting)
            out[name] = num if num is not None and not unit else (setting if num is None else num)
    unsafe = [f"{k}={v}" for k, v in _UNSAFE_WHEN.items() if out.get(k) == v]
    out["crash_safe"] = not unsafe
    out["unsafe_because"] = unsafe
    if "wal_level" in out:
        out["pitr_capable"] = out["wal_level"] != "minimal"
    return out


def checkpoints_panel(row: Mapping[str, Any], iv: Interval) -> dict[str, Any]:
    """Cumulative checkpoint counters plus their rates: per second over the
    interval, per hour over the counters' own window (`counted_s`, since
    their reset): a checkpoint every few minutes is 0 or 1 in a poll, and a
    poll's rate times 3,600 says 0 or 1,800 an hour.

    >>> p = checkpoints_panel({"timed": 30, "requested": 3, "counted_s": 10800.0}, Interval({}, {}, 2.0))
    >>> p["timed_per_h"], p["requested_per_h"], p["per_h_over_s"]
    (10.0, 1.0, 10800.0)
    """
    out: dict[str, Any] = {k: _num(v) for k, v in row.items()}
    window = to_number(row.get("counted_s"))
    out["per_h_over_s"] = window
    for key in ("timed", "requested"):
        n = to_number(row.get(key))
        out[f"{key}_per_h"] = round(n / window * 3600, 1) if n is not None and window else None
    for key in (
        "buffers_written",
        "write_time_ms",
        "sync_time_ms",
        "buffers_clean",
        "buffers_alloc",
        "buffers_backend",
    ):
        if key in row:
            out[f"{key}_per_s"] = iv.rate(key)
    return out


def wal_panel(row: Mapping[str, Any], iv: Interval) -> dict[str, Any]:
    out: dict[str, Any] = {k: _num(v) for k, v in row.items()}
    for key in row:
        out[f"{key}_per_s"] = iv.rate(key)
    return out


def cache_hit_panel(iv: Interval) -> dict[str, float | None]:
    """blks_hit / (blks_hit + blks_read), over the interval and since the stats reset.

    >>> iv = Interval({"blks_hit": 90, "blks_read": 10}, {"blks_hit": 189, "blks_read": 11}, 1.0)
    >>> cache_hit_panel(iv)
    {'interval': 0.99, 'cumulative': 0.945}
    """
    cur = iv.cur
    total = cur.get("blks_hit", 0) + cur.get("blks_read", 0)
    hit, read = iv.delta("blks_hit"), iv.delta("blks_read")
    return {
        "interval": round(hit / (hit + read), 6) if hit is not None and read is not None and hit + read else None,
        "cumulative": round(cur.get("blks_hit", 0) / total, 6) if total else None,
    }


def _commits_per_s(iv: Interval) -> float | None:
    """The database's commits per second without the monitor's own: each
    of its queries is a read-only transaction (about ten a poll), counted
    in xact_commit like the workload's.  `monitor_commits` is how many it
    has committed; the server's count may lag it by a stats flush, so a
    short interval is never taken below 0.

    >>> _commits_per_s(Interval({"xact_commit": 100, "monitor_commits": 10}, {"xact_commit": 160, "monitor_commits": 20}, 2.0))
    25.0
    >>> _commits_per_s(Interval({"xact_commit": 100, "monitor_commits": 10}, {"xact_commit": 105, "monitor_commits": 20}, 2.0))
    0.0
    """
    total, own = iv.rate("xact_commit"), iv.rate("monitor_commits")
    if total is None or own is None:
        return total
    return round(max(total - own, 0.0), 3)


def database_panel(row: Mapping[str, Any], iv: Interval) -> dict[str, Any]:
    return {
        "name": row["datname"],
        "size_bytes": _num(row["size_bytes"]),
        "growth_bytes_per_s": _signed_rate(iv, "size_bytes"),
        "commits_per_s": _commits_per_s(iv),  # the monitor's own left out
        "monitor_commits_per_s": iv.rate("monitor_commits"),
        "rollbacks_per_s": iv.rate("xact_rollback"),
        "tup_returned_per_s": iv.rate("tup_returned"),
        "tup_fetched_per_s": iv.rate("tup_fetched"),
        "tup_inserted_per_s": iv.rate("tup_inserted"),
        "tup_updated_per_s": iv.rate("tup_updated"),
        "tup_deleted_per_s": iv.rate("tup_deleted"),
        "temp_bytes_per_s": iv.rate("temp_bytes"),
        "deadlocks_per_s": iv.rate("deadlocks"),
        # cumulative, for a run's totals (the difference between two readings)
        "tup_inserted": _num(row.get("tup_inserted")),
        "tup_updated": _num(row.get("tup_updated")),
        "tup_deleted": _num(row.get("tup_deleted")),
    }


def _signed_rate(iv: Interval, key: str) -> float | None:
    # A database may shrink (VACUUM FULL, DROP TABLE): growth can be negative.
    if iv.prev is None or key not in iv.prev or not iv.seconds:
        return None
    return round((iv.cur[key] - iv.prev[key]) / iv.seconds, 3)


def activity_panels(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """sessions (client backends by state), wait_events and autovacuum_workers
    from pg_stat_activity grouped rows.

    >>> p = activity_panels([
    ...   {"backend_type": "client backend", "state": "active", "wait_event_type": "IO",
    ...    "wait_event": "DataFileRead", "n": 3},
    ...   {"backend_type": "client backend", "state": "idle", "wait_event_type": "Client",
    ...    "wait_event": "ClientRead", "n": 5},
    ...   {"backend_type": "walwriter", "state": "", "wait_event_type": "Activity",
    ...    "wait_event": "WalWriterMain", "n": 1},
    ...   {"backend_type": "autovacuum worker", "state": "active", "wait_event_type": "",
    ...    "wait_event": "", "n": 2}])
    >>> p["sessions"], p["wait_events"], p["autovacuum_workers"]
    ({'active': 3, 'idle': 5, 'total': 8}, [{'type': 'IO', 'event': 'DataFileRead', 'count': 3}], 2)
    """
    sessions: dict[str, int] = {}
    waits: dict[tuple[str, str], int] = {}
    autovacuum = 0
    for row in rows:
        n = int(row["n"])
        if row["backend_type"] == "client backend":
            state = row["state"] or "unknown"
            sessions[state] = sessions.get(state, 0) + n
        if row["backend_type"] == "autovacuum worker":
            autovacuum += n
        # Idle sessions waiting for their client and background processes
        # sleeping in their main loop ("Activity") are not contention.
        if row["wait_event"] and row["state"] != "idle" and row["wait_event_type"] != "Activity":
            key = (row["wait_event_type"], row["wait_event"])
            waits[key] = waits.get(key, 0) + n
    sessions["total"] = sum(sessions.values())
    wait_list = [
        {"type": t, "event": e, "count": c} for (t, e), c in sorted(waits.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return {SESSIONS: sessions, WAIT_EVENTS: wait_list, AUTOVACUUM_WORKERS: autovacuum}


def _lock_waits(sessions: Any, waits: Any) -> bool:
    """Whether a session may wait on a lock: one blocked in the sessions'
    rows, else (rows not read) a Lock wait among the wait events; True when
    neither says.

    >>> _lock_waits([{"blocked_by": []}], None), _lock_waits(PER_SESSION_NOT_READ, [{"type": "Lock", "count": 2}])
    (False, True)
    >>> _lock_waits(PER_SESSION_NOT_READ, [{"type": "IO", "count": 2}]), _lock_waits(PER_SESSION_NOT_READ, None)
    (False, True)
    """
    if isinstance(sessions, list):
        return any(r.get("blocked_by") for r in sessions)
    if sessions is PER_SESSION_NOT_READ and isinstance(waits, list):
        return any(w.get("type") == "Lock" for w in waits)
    return True


def replication_panel(rows: Sequence[Mapping[str, Any]], current_lsn: int | None, standby: bool = False) -> Any:
    """The standbys streaming from this server; none is no fault on a
    standby, which says so (its own lag is its replication view's summary).

    >>> replication_panel([], None, standby=True)
    Missing(what='none: this server is itself a standby (its own replay lag is above)', hint='')
    """
    if not rows:
        if standby:
            return Missing("none: this server is itself a standby (its own replay lag is above)")
        return Missing("no replicas", "pg_stat_replication is empty: no standby is streaming from this server")
    out = []
    for row in rows:
        replay = parse_lsn(row.get("replay_lsn"))
        out.append(
            {
                "application_name": row["application_name"],
                "client_addr": row["client_addr"],
                "state": row["state"],
                "sync_state": row["sync_state"],
                # the position is read a moment before the standbys: replay may have passed it
                "replay_lag_bytes": max(current_lsn - replay, 0) if current_lsn is not None and replay is not None
                else None,
                "write_lag_s": row.get("write_lag_s"),
                "flush_lag_s": row.get("flush_lag_s"),
                "replay_lag_s": row.get("replay_lag_s"),
            }
        )
    return out


def _age(row: Mapping[str, Any], key: str) -> float | None:
    """An age column in seconds, to the millisecond (None when the server has none)."""
    v = row.get(key)
    return None if v is None else round(float(v), 3)


def session_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One client session from pg_stat_activity, ages in seconds, the
    statement on one line, `blocked_by` the pids holding what it waits for."""

    return {
        "pid": row.get("pid"),
        "user": row.get("user"),
        "db": row.get("db"),
        "application": row.get("application") or "",
        "client": row.get("client"),
        "state": row.get("state") or "",
        "wait_event_type": row.get("wait_event_type"),
        "wait_event": row.get("wait_event"),
        "xact_age_s": _age(row, "xact_age_s"),
        "query_age_s": _age(row, "query_age_s"),
        "state_age_s": _age(row, "state_age_s"),
        "blocked_by": list(row.get("blocked_by") or []),
        "query": flatten(row.get("query")),
    }


def blocking_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One session waiting for a lock and one session holding it up, ages in
    seconds, statements on one line (benchtop.panels.views.blocking)."""

    return {
        "pid": row.get("pid"),
        "user": row.get("user"),
        "mode": row.get("mode") or "",
        "lock_type": row.get("lock_type") or "",
        "relation": row.get("relation") or "",
        "wait_s": _age(row, "wait_s"),
        "query": flatten(row.get("query")),
        "blocking_pid": row.get("blocking_pid"),
        "blocking_state": row.get("blocking_state") or "",
        "blocking_xact_age_s": _age(row, "blocking_xact_age_s"),
        "blocking_query": flatten(row.get("blocking_query")),
    }


_TEXT_CANDIDATES = 60  # statements whose text is fetched when first among the costliest
_TEXT_CACHE = 5000  # pg_stat_statements.max's default
# Without a screen (a headless run) the per-table and per-index statistics are for the record alone (no
# verdict reads them): read this often, not every poll.  They cost the server O(relations) a reading:
# with 500 tables and 1,000 indexes here, 35 ms of its CPU and 11 ms of benchtop's, every second.
RELATIONS_EVERY_S = 10.0
# The per-transaction settings each monitor query runs under.
_OWN_SETTINGS = ("SET LOCAL statement_timeout", "SET LOCAL lock_timeout", "SET TRANSACTION READ ONLY")
# How long a monitor statement may wait for a lock: relations held or awaited
# in ACCESS EXCLUSIVE mode are left out of the size reads beforehand, so this
# only catches a lock taken between that look and the read (or on a catalog).
LOCK_TIMEOUT_MS = 50
_STATEMENT_COUNTERS = ("calls", "total_ms", "rows", "shared_blks_hit", "shared_blks_read")


class StatementChange(NamedTuple):
    """A statement run in the interval: its row (user, db, query id) and its counters' growth."""

    key: tuple[Any, ...]
    row: Mapping[str, Any]
    delta: dict[str, float]


def statement_changes(
    baseline: dict[tuple[Any, ...], dict[str, float]],
    rows: Iterable[Mapping[str, Any]],
    seconds: float | None,
    texts: dict[tuple[Any, ...], str],
) -> list[StatementChange]:
    """The pg_stat_statements rows that ran since `baseline` (key -> totals
    at the previous read, replaced in place), rows of the same (user, db,
    query id) (top-level and nested) summed; texts the rows carry go into
    `texts`.  Nothing on a first read (`seconds` None): no interval yet."""
    current: dict[tuple[Any, ...], dict[str, float]] = {}
    about: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    # every statement the server has seen, every poll (thousands): one pass, kept to plain loops
    for row in rows:
        key = statement_key(row)
        text = row.get("query")
        if text is not None:
            texts[key] = str(text)
        totals = current.get(key)
        if totals is None:
            current[key] = {k: float(row.get(k) or 0) for k in _STATEMENT_COUNTERS}
            about[key] = row
        else:
            for k in _STATEMENT_COUNTERS:
                totals[k] += float(row.get(k) or 0)
    previous = dict(baseline)
    baseline.clear()
    baseline.update(current)
    if not seconds:
        return []
    out = []
    for key, cur in current.items():
        before = previous.get(key)
        if before is not None and before["calls"] == cur["calls"] and before["total_ms"] <= cur["total_ms"]:
            continue  # not run in the interval
        d = {k: cur[k] - (before or {}).get(k, 0.0) for k in cur}
        if d["calls"] < 0 or d["total_ms"] < 0:  # pg_stat_statements_reset() in between
            d = cur
        if d["calls"] > 0:
            out.append(StatementChange(key, about[key], d))
    return out


def statement_rows(changes: Iterable[StatementChange], seconds: float, top: int = 20,
                   texts: Mapping[tuple[Any, ...], str] | None = None) -> list[dict[str, Any]]:
    """The `top` statements by execution time in the interval, per second;
    texts from `texts` (key -> text); the monitor's own statements left out.

    >>> base, texts = {}, {}
    >>> row = {"userid": 1, "dbid": 2, "queryid": 3, "user": "u", "db": "d", "query": "SELECT $1",
    ...        "calls": 10, "total_ms": 5.0, "rows": 10, "shared_blks_hit": 30, "shared_blks_read": 1}
    >>> statement_changes(base, [row], None, texts)
    []
    >>> changes = statement_changes(base, [dict(row, calls=30, total_ms=15.0, rows=30, shared_blks_hit=90)], 2.0, texts)
    >>> r = statement_rows(changes, 2.0, texts=texts)[0]
    >>> r["calls_per_s"], r["total_ms_per_s"], r["mean_ms"], r["rows_per_s"], r["shared_blks_hit_per_s"], r["hit_pct"]
    (10.0, 5.0, 0.5, 10.0, 30.0, 100.0)
    """
    texts = texts or {}
    out = []
    for c in sorted(changes, key=lambda c: c.delta["total_ms"], reverse=True):
        text = texts.get(c.key)
        if text is not None and is_own_statement(text):
            continue
        d, row = c.delta, c.row
        blocks = d["shared_blks_hit"] + d["shared_blks_read"]
        out.append(
            {
                "user": row.get("user"),
                "db": row.get("db"),
                "queryid": row.get("queryid"),
                "calls_per_s": round(d["calls"] / seconds, 3),
                "total_ms_per_s": round(d["total_ms"] / seconds, 3),
                "mean_ms": round(d["total_ms"] / d["calls"], 4),
                "rows_per_s": round(d["rows"] / seconds, 3),
                "shared_blks_hit_per_s": round(d["shared_blks_hit"] / seconds, 3),
                "shared_blks_read_per_s": round(d["shared_blks_read"] / seconds, 3),
                "hit_pct": round(100.0 * d["shared_blks_hit"] / blocks, 2) if blocks else None,
                "query": flatten(text),
            }
        )
        if len(out) == top:
            break
    return out


def statement_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row.get("userid"), row.get("dbid"), row.get("queryid"))


def is_own_statement(text: str) -> bool:
    """The monitor's own: tagged, or recorded before it carried the tag
    (pg_stat_statements keeps the first text it saw of a statement).

    >>> is_own_statement("SELECT name, setting, unit FROM pg_settings WHERE name IN ($1, $2)")
    True
    >>> is_own_statement("SELECT c FROM sbtest1 WHERE id=$1")
    False
    """
    return sql.TAG in text or " ".join(text.split()).startswith(sql.prefixes(BACKEND) + _OWN_SETTINGS)


def relation_deltas(
    baseline: dict[Any, dict[str, float]],
    rows: Iterable[Mapping[str, Any]],
    seconds: float | None,
    key: str,
    counters: tuple[str, ...],
    top: int = 15,
) -> list[dict[str, Any]]:
    """Tables or indexes, top-N by blocks read per second in the interval
    (then by blocks read since the statistics were reset), with their hit
    ratio in the interval; `baseline` is replaced in place.

    >>> base = {}
    >>> rows = [{"relid": 1, "table_name": "t", "blks_read": 10, "blks_hit": 90, "size_bytes": 8192}]
    >>> relation_deltas(base, rows, None, "relid", ("blks_read", "blks_hit"))[0]["hit_pct"]
    90.0
    >>> rows = [{"relid": 1, "table_name": "t", "blks_read": 20, "blks_hit": 180, "size_bytes": 8192}]
    >>> r = relation_deltas(base, rows, 2.0, "relid", ("blks_read", "blks_hit"))[0]
    >>> r["blks_read_per_s"], r["blks_hit_per_s"], r["hit_pct"], "relid" in r
    (5.0, 45.0, 90.0, False)
    """
    previous = dict(baseline)
    baseline.clear()
    out = []
    for row in rows:
        cur = {k: float(_num(row.get(k)) or 0) for k in counters}
        ident = row.get(key)
        baseline[ident] = cur
        before = previous.get(ident) if seconds else None
        item = {k: _num(v) for k, v in row.items() if k != key and k not in counters}
        item["blks_read"] = _num(row.get("blks_read"))
        for k in counters:
            delta = None if before is None else cur[k] - before.get(k, 0.0)
            item[f"{k}_per_s"] = round(delta / seconds, 3) if delta is not None and delta >= 0 and seconds else None
        hit, read = item.get("blks_hit_per_s"), item.get("blks_read_per_s")
        if hit is None or read is None or not hit + read:
            hit, read = cur.get("blks_hit", 0.0), cur.get("blks_read", 0.0)  # since the reset
        item["hit_pct"] = round(100.0 * hit / (hit + read), 2) if hit + read else None
        out.append(item)
    out.sort(key=lambda r: (r.get("blks_read_per_s") or 0, r.get("blks_read") or 0), reverse=True)
    return out[:top]


def sizes_skipped(rows: Iterable[Mapping[str, Any]]) -> Missing | None:
    """What the size reads left out: relations a session holds or awaits in
    ACCESS EXCLUSIVE mode (`locked_by`), whose size the monitor does not
    queue for.

    >>> sizes_skipped([{"table_name": "t", "locked_by": 42}, {"table_name": "u", "locked_by": None}]).what
    'sizes of 1 relation skipped: locked by pid 42'
    >>> sizes_skipped([{"table_name": "u", "locked_by": None}]) is None
    True
    """
    locked = [r for r in rows if r.get("locked_by") is not None]
    if not locked:
        return None
    pids = sorted({int(r["locked_by"]) for r in locked})
    names = sorted({str(r.get("index_name") or r.get("table_name")) for r in locked})
    return Missing(
        f"sizes of {len(locked)} relation{'s' if len(locked) > 1 else ''} skipped: "
        f"locked by pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}",
        f"ACCESS EXCLUSIVE held or awaited on {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}; "
        "the monitor does not queue behind it",
    )


def vacuum_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A running VACUUM with how much of the heap it has scanned.

    >>> vacuum_row({"pid": 7, "heap_blks_total": 200, "heap_blks_scanned": 50, "running_s": 1.5})["scanned_pct"]
    25.0
    """
    out = {k: _num(v) for k, v in row.items()}
    total, scanned = out.get("heap_blks_total"), out.get("heap_blks_scanned")
    out["scanned_pct"] = round(100.0 * scanned / total, 1) if total and scanned is not None else None
    if out.get("running_s") is not None:
        out["running_s"] = round(float(out["running_s"]), 3)
    return out


def _num(value: Any) -> Any:
    if hasattr(value, "as_integer_ratio") and not isinstance(value, (int, float)):  # Decimal
        return float(value) if value % 1 else int(value)
    return value


def _counters(row: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    out = {}
    for key, value in row.items():
        num = to_number(_num(value))
        if num is not None:
            out[prefix + key] = num
    return out


def settings_snapshot(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """pg_settings rows as `name: value` the way SHOW prints them (unit kept).

    >>> settings_snapshot([{"name": "shared_buffers", "setting": "16384", "unit": "8kB"},
    ...                    {"name": "fsync", "setting": "off", "unit": None}])
    {'fsync': 'off', 'shared_buffers': '16384 8kB'}
    """
    out = {str(r["name"]): f"{r['setting']} {r['unit']}" if r.get("unit") else str(r["setting"]) for r in rows}
    return {name: scrub_setting(name, value) for name, value in sorted(out.items())}
def _pgss_missing(missing: Missing, user: str | None) -> Missing:
    """Say how to get pg_stat_statements, from the way reading it failed."""
    text = f"{missing.what} {missing.hint}"
    if "shared_preload_libraries" in text:
        return Missing(
            "pg_stat_statements is not loaded",
            "add pg_stat_statements to shared_preload_libraries in postgresql.conf and restart the server",
        )
    if "does not exist" in text:
        return Missing(
            "pg_stat_statements is not installed in this database",
            "CREATE EXTENSION pg_stat_statements; (with pg_stat_statements in shared_preload_libraries)",
        )
    if missing.what == "not permitted":
        return Missing("pg_stat_statements not readable", f"GRANT pg_read_all_stats TO {user or 'USER'};")
    return missing


class PostgresSource(Source):
    kind = "postgresql"

    def __init__(self, name: str, target: Target, timeout_s: float = 5.0, *, per_process: bool = True) -> None:
        super().__init__(name, target, timeout_s, per_process=per_process)
        self.version_num = 0
        self._conn: Connection | None = None
        self._trackers: dict[str, CounterTracker] = {}
        self._baselines: dict[str, dict[Any, dict[str, float]]] = {}
        self._read_at: dict[str, float] = {}
        self._texts: dict[tuple[Any, ...], str] = {}
        self._relations: dict[str, Any] = {}  # the newest reading's panels, carried between readings
        self._relations_at: float | None = None
        self.own_commits = 0  # this source's committed transactions (left out of commits/s)
        # set when this user lacks pg_read_all_stats: the panels read from
        # pg_stat_activity and pg_stat_statements would show only its own rows
        self.hidden: Missing | None = None
        # each backend's CPU and IO from /proc, for a server on this host
        self._usage: BackendUsage | None = None
        self._usage_missing: Missing | None = None

    def connect(self) -> None:
        t = self.target
        params = libpq_params(t, timeout_s=self.timeout_s, application_name="benchtop-monitor")
        try:
            # No session-level SET: behind a transaction pooler (PgBouncer) it
            # would stick to a server connection the benchmark then uses.
            # Each query runs in its own read-only transaction instead.
            self._conn = Connection(libpq_conninfo(params))
        except PqError as exc:
            self.close()
            raise SourceError(f"{t.describe()}: {one_line(exc)}") from None
        self.version_num = self._conn.server_version
        try:
            self.hidden = None if self._query("privileges")[0]["read_all_stats"] else Missing(
                "other users' sessions and statements are hidden",
                f"GRANT pg_monitor TO {t.user or 'USER'}; (pg_read_all_stats is enough for these panels)")
        except PanelFailed:  # before 10, or unreadable: the panels say what they can
            self.hidden = None
        self._trackers = {}
        self._baselines = {}
        self._read_at = {}
        self._relations, self._relations_at = {}, None
        self._usage_missing = (not_local(self.target, self._server_backend_pid(self._conn.backend_pid))
                               if self.per_process else PER_PROCESS_NOT_READ)
        self._usage = BackendUsage() if self._usage_missing is None else None

    def _server_backend_pid(self, key: int) -> int:
        """This session's backend pid as the server knows it (the protocol's
        backend `key` when the server cannot say)."""
        try:
            return int(self._query("backend_pid")[0]["pid"])
        except (PanelFailed, SourceError, LookupError, TypeError, ValueError):
            return key

    def _since_last(self, name: str, now: float) -> tuple[dict[Any, dict[str, float]], float | None]:
        """The baseline of a diffed list and the seconds since it was read."""
        before = self._read_at.get(name)
        self._read_at[name] = now
        return self._baselines.setdefault(name, {}), None if before is None else now - before

    def _fetch_texts(self, queryids: set[Any]) -> None:
        if len(self._texts) > _TEXT_CACHE:  # statements come and go: start again rather than grow
            self._texts = {}
        for row in self._query("statement_texts", {"ids": sorted(queryids)}):
            self._texts[statement_key(row)] = str(row["query"])

    def _forget(self, name: str) -> None:
        self._baselines.pop(name, None)
        self._read_at.pop(name, None)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self._usage is not None:
            self._usage.close()

    def interrupt(self) -> None:
        conn = self._conn
        if conn is not None:
            conn.interrupt(shut_down_descriptor)

    def _tracker(self, name: str) -> CounterTracker:
        return self._trackers.setdefault(name, CounterTracker())

    def _query(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        if self._conn is None:
            raise SourceError("not connected")
        try:
            text = sql.get(BACKEND, name, self.version_num)
        except sql.SQLNotFound:
            raise PanelFailed(
                Missing("not available on this server version", f"PostgreSQL {self.version_num}")
            ) from None
        conn = self._conn
        try:
            # the transaction opened and bounded: a lock a user holds fails
            # the statement at once instead of queueing the monitor behind it
            # (and everyone after it behind the monitor)
            opening = (f"{sql.tagged('BEGIN READ ONLY')}; "
                       f"{sql.tagged(f'SET LOCAL statement_timeout = {int(self.timeout_s * 1000)}')}; "
                       f"{sql.tagged(f'SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}')}")
            if params:
                conn.query(opening)
                rows = conn.query(text, params)
            else:
                # in the same round trip as the query (its rows are the last result): a poll's
                # dozen queries were three round trips each
                rows = conn.query(f"{opening}; {text}")
            # a word after the verb, so the tag sits inside the statement and
            # the workload's own COMMITs keep their pg_stat_statements entry
            conn.query(sql.tagged("COMMIT AND NO CHAIN"))
            self.own_commits += 1
            return rows
        except PqError as exc:
            if exc.lost:
                raise SourceError(f"connection lost: {one_line(exc)}") from None
            self._end_failed_transaction(conn)
            if exc.sqlstate == "55P03":  # lock_not_available: our lock_timeout
                raise PanelFailed(Missing("skipped: a session holds a lock this panel reads under",
                                          f"not waited for (lock_timeout {LOCK_TIMEOUT_MS} ms): {one_line(exc)}")) from None
            if exc.sqlstate == "57014":  # query_canceled: our statement_timeout
                raise PanelFailed(Missing("query timed out", f"took longer than {self.timeout_s:g}s")) from None
            if exc.sqlstate == "42501":  # insufficient_privilege
                user = self.target.user or "USER"
                raise PanelFailed(Missing("not permitted", f"GRANT pg_monitor TO {user}; ({one_line(exc)})")) from None
            raise PanelFailed(Missing("query failed", one_line(exc))) from None

    @staticmethod
    def _end_failed_transaction(conn: Connection) -> None:
        if conn.in_transaction:
            try:
                conn.query("ROLLBACK")
            except PqError:  # a lost connection shows on the next query
                pass

    def settings_snapshot(self) -> dict[str, str]:
        """Every setting not at its built-in default (for the results folder)."""
        return settings_snapshot(self._query("settings_all"))

    def poll(self) -> SourceSnapshot:
        if self._conn is None:
            raise SourceError("not connected")
        t0 = time.perf_counter()
        now = time.monotonic()
        panels: dict[str, Any] = {}
        interval_s: float | None = None

        def guarded(name: str, build) -> None:
            try:
                build()
            except PanelFailed as exc:
                self._tracker(name).reset()
                panels[name] = exc.missing

        def settings() -> None:
            panels[SETTINGS] = settings_panel(self._query("settings"))

        def checkpoints() -> None:
            row = self._query("checkpoints")[0]
            panels[CHECKPOINTS] = checkpoints_panel(row, self._tracker("checkpoints").advance(_counters(row), now))

        def wal() -> None:
            row = self._query("wal")[0]
            panels[WAL] = wal_panel(row, self._tracker("wal").advance(_counters(row), now))

        def position() -> None:
            nonlocal interval_s
            row = self._query("lsn")[0]
            lsn = parse_lsn(row["lsn"])
            iv = self._tracker("wal_bytes_per_s").advance({"lsn": lsn} if lsn is not None else {}, now)
            interval_s = iv.seconds
            panels[WAL_BYTES_PER_S] = iv.rate("lsn")
            panels[WAL_POSITION] = {
                "lsn": row["lsn"],
                "lsn_bytes": lsn,
                "in_recovery": row["in_recovery"],
                "replay_lsn": row["replay_lsn"],
            }

        def database() -> None:
            own = self.own_commits  # this query's own transaction is not committed yet
            row = self._query("database")[0]
            iv = self._tracker("database").advance({**_counters(row), "monitor_commits": own}, now)
            panels[CACHE_HIT_RATIO] = cache_hit_panel(iv)
            panels[DATABASE] = database_panel(row, iv)

        def activity() -> None:
            panels.update(activity_panels(self._query("activity")))

        def replication() -> None:
            pos = panels.get(WAL_POSITION)
            current = pos["lsn_bytes"] if isinstance(pos, dict) else None
            own = panels.get(STANDBY)
            panels[REPLICATION] = replication_panel(self._query("replication"), current,
                                                      isinstance(own, dict) and bool(own.get("in_recovery")))

        def standby() -> None:
            panels[STANDBY] = standby_panel(self._query("standby")[0], parse_lsn).as_panel()

        guarded(SETTINGS, settings)
        guarded(CHECKPOINTS, checkpoints)
        guarded(WAL, wal)
        guarded(WAL_BYTES_PER_S, position)
        guarded(DATABASE, database)
        if isinstance(panels.get(DATABASE), Missing):
            panels[CACHE_HIT_RATIO] = panels[DATABASE]
        try:
            if self.hidden is not None:
                raise PanelFailed(self.hidden)
            activity()
        except PanelFailed as exc:
            for key in (SESSIONS, WAIT_EVENTS, AUTOVACUUM_WORKERS):
                panels[key] = exc.missing
        guarded(STANDBY, standby)  # first: a standby's empty replication list is said as such
        guarded(REPLICATION, replication)

        def sessions_list() -> None:
            if self.hidden is not None:
                raise PanelFailed(self.hidden)
            if not self.per_process:
                panels[ACTIVITY] = PER_SESSION_NOT_READ
                return
            rows = [session_row(r) for r in self._query("sessions")]
            if self._usage is not None:
                usage = self._usage.sample(r["pid"] for r in rows if isinstance(r.get("pid"), int))
                for r in rows:
                    r.update(usage.get(r["pid"], {}))
            note = self._usage_missing or (self._usage.note() if self._usage is not None else None)
            if note is not None:
                panels[BACKEND_USAGE] = note
            panels[ACTIVITY] = rows

        def top_statements() -> None:
            try:
                if self.hidden is not None:
                    raise PanelFailed(self.hidden)
                # another user's statements have no query id for this one
                rows = [r for r in self._query("top_statements") if r["queryid"] is not None]
                base, seconds = self._since_last("top_statements", now)
                changes = statement_changes(base, rows, seconds, self._texts)
                if not seconds:
                    panels[TOP_STATEMENTS] = []
                    return
                # Texts live in a file pg_stat_statements reads whole: counters are read
                # without them, and texts only for statements not seen before.
                ranked = statement_rows(changes, seconds, top=_TEXT_CANDIDATES, texts=self._texts)
                known = {k[2] for k in self._texts}
                wanted = {r["queryid"] for r in ranked if r["queryid"] not in known}
                if wanted:
                    self._fetch_texts(wanted)
            except PanelFailed as exc:
                self._forget("top_statements")
                panels[TOP_STATEMENTS] = _pgss_missing(exc.missing, self.target.user)
                return
            panels[TOP_STATEMENTS] = statement_rows(changes, seconds, texts=self._texts)

        skipped: list[Mapping[str, Any]] = []

        def relations(name: str, key: str) -> None:
            try:
                rows = self._query(name)
            except PanelFailed:
                self._forget(name)
                raise
            skipped.extend(r for r in rows if r.get("locked_by") is not None)
            base, seconds = self._since_last(name, now)
            panels[name] = relation_deltas(base, rows, seconds, key, ("blks_read", "blks_hit"))

        def vacuum() -> None:
            panels[VACUUM] = [vacuum_row(r) for r in self._query("vacuum")]

        def blocking() -> None:
            if self.hidden is not None:
                raise PanelFailed(self.hidden)
            # pg_locks takes every lock-manager partition: read only while someone waits on a lock
            if not _lock_waits(panels.get(ACTIVITY), panels.get(WAIT_EVENTS)):
                panels[BLOCKING] = []
                return
            panels[BLOCKING] = [blocking_row(r) for r in self._query("blocking")]

        guarded(ACTIVITY, sessions_list)
        guarded(BLOCKING, blocking)
        top_statements()
        if self.per_process or self._relations_at is None or now - self._relations_at >= RELATIONS_EVERY_S:
            guarded(TABLES, lambda: relations("tables", "relid"))
            guarded(INDEXES, lambda: relations("indexes", "indexrelid"))
            note = sizes_skipped(skipped)
            if note is not None:
                panels[SIZES_SKIPPED] = note
            self._relations = {k: panels[k] for k in (TABLES, INDEXES, SIZES_SKIPPED) if k in panels}
            self._relations_at = now
        else:
            panels.update(self._relations)
        guarded(VACUUM, vacuum)
        return self.snapshot(panels, t0, interval_s)
