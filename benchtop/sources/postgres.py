"""PostgreSQL server source over psycopg 3.

One autocommit connection named "benchtop-monitor", read-only by default and
under a statement_timeout; queries are files chosen by server_version_num.
Each panel degrades on its own: a missing privilege or view makes that panel
a `Missing`, a lost connection fails the poll.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping, Sequence

import psycopg
from psycopg.rows import dict_row

from benchtop.errors import one_line
from benchtop.sources import sql
from benchtop.sources.base import (
    Missing,
    PanelFailed,
    Source,
    SourceError,
    SourceSnapshot,
    scrub_setting,
    shut_down_descriptor,
)
from benchtop.sources.rates import CounterTracker, Interval, to_number
from benchtop.target import Target
from benchtop.target.connection import libpq_params

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
    """Cumulative checkpoint counters plus their rates over the interval."""
    out: dict[str, Any] = {k: _num(v) for k, v in row.items()}
    out["timed_per_h"] = iv.rate("timed", scale=3600)
    out["requested_per_h"] = iv.rate("requested", scale=3600)
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


def database_panel(row: Mapping[str, Any], iv: Interval) -> dict[str, Any]:
    return {
        "name": row["datname"],
        "size_bytes": _num(row["size_bytes"]),
        "growth_bytes_per_s": _signed_rate(iv, "size_bytes"),
        "commits_per_s": iv.rate("xact_commit"),
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
    return {"sessions": sessions, "wait_events": wait_list, "autovacuum_workers": autovacuum}


def replication_panel(rows: Sequence[Mapping[str, Any]], current_lsn: int | None) -> Any:
    if not rows:
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
                "replay_lag_bytes": current_lsn - replay if current_lsn is not None and replay is not None else None,
                "write_lag_s": row.get("write_lag_s"),
                "flush_lag_s": row.get("flush_lag_s"),
                "replay_lag_s": row.get("replay_lag_s"),
            }
        )
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


class PostgresSource(Source):
    kind = "postgresql"

    def __init__(self, name: str, target: Target, timeout_s: float = 5.0) -> None:
        super().__init__(name, target, timeout_s)
        self.version_num = 0
        self._conn: psycopg.Connection[dict[str, Any]] | None = None
        self._trackers: dict[str, CounterTracker] = {}

    def connect(self) -> None:
        t = self.target
        params = libpq_params(t, timeout_s=self.timeout_s, application_name="benchtop-monitor")
        try:
            # No session-level SET: behind a transaction pooler (PgBouncer) it
            # would stick to a server connection the benchmark then uses.
            # Each query runs in its own read-only transaction instead.
            self._conn = psycopg.connect(**params, autocommit=True, row_factory=dict_row)
        except psycopg.Error as exc:
            self.close()
            raise SourceError(f"{t.describe()}: {one_line(exc)}") from None
        self.version_num = self._conn.info.server_version
        self._trackers = {}

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass

    def interrupt(self) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            fd = conn.pgconn.socket
        except psycopg.Error:  # already closed
            return
        shut_down_descriptor(fd)

    def _tracker(self, name: str) -> CounterTracker:
        return self._trackers.setdefault(name, CounterTracker())

    def _query(self, name: str) -> list[dict[str, Any]]:
        if self._conn is None:
            raise SourceError("not connected")
        try:
            text = sql.get(BACKEND, name, self.version_num)
        except sql.SQLNotFound:
            raise PanelFailed(
                Missing("not available on this server version", f"PostgreSQL {self.version_num}")
            ) from None
        try:
            with self._conn.transaction():
                self._conn.execute(f"SET LOCAL statement_timeout = {int(self.timeout_s * 1000)}")
                self._conn.execute("SET TRANSACTION READ ONLY")
                return self._conn.execute(text).fetchall()
        except psycopg.errors.QueryCanceled:
            raise PanelFailed(Missing("query timed out", f"took longer than {self.timeout_s:g}s")) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            user = self.target.user or "USER"
            raise PanelFailed(Missing("not permitted", f"GRANT pg_monitor TO {user}; ({one_line(exc)})")) from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise SourceError(f"connection lost: {one_line(exc)}") from None
        except psycopg.Error as exc:
            raise PanelFailed(Missing("query failed", one_line(exc))) from None

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
            panels["settings"] = settings_panel(self._query("settings"))

        def checkpoints() -> None:
            row = self._query("checkpoints")[0]
            panels["checkpoints"] = checkpoints_panel(row, self._tracker("checkpoints").advance(_counters(row), now))

        def wal() -> None:
            row = self._query("wal")[0]
            panels["wal"] = wal_panel(row, self._tracker("wal").advance(_counters(row), now))

        def position() -> None:
            nonlocal interval_s
            row = self._query("lsn")[0]
            lsn = parse_lsn(row["lsn"])
            iv = self._tracker("wal_bytes_per_s").advance({"lsn": lsn} if lsn is not None else {}, now)
            interval_s = iv.seconds
            panels["wal_bytes_per_s"] = iv.rate("lsn")
            panels["wal_position"] = {
                "lsn": row["lsn"],
                "lsn_bytes": lsn,
                "in_recovery": row["in_recovery"],
                "replay_lsn": row["replay_lsn"],
            }

        def database() -> None:
            row = self._query("database")[0]
            iv = self._tracker("database").advance(_counters(row), now)
            panels["cache_hit_ratio"] = cache_hit_panel(iv)
            panels["database"] = database_panel(row, iv)

        def activity() -> None:
            panels.update(activity_panels(self._query("activity")))

        def replication() -> None:
            pos = panels.get("wal_position")
            current = pos["lsn_bytes"] if isinstance(pos, dict) else None
            panels["replication"] = replication_panel(self._query("replication"), current)

        guarded("settings", settings)
        guarded("checkpoints", checkpoints)
        guarded("wal", wal)
        guarded("wal_bytes_per_s", position)
        guarded("database", database)
        if isinstance(panels.get("database"), Missing):
            panels["cache_hit_ratio"] = panels["database"]
        try:
            activity()
        except PanelFailed as exc:
            for key in ("sessions", "wait_events", "autovacuum_workers"):
                panels[key] = exc.missing
        guarded("replication", replication)
        return self.snapshot(panels, t0, interval_s)
