"""PgBouncer admin console source (database "pgbouncer") over psycopg 3.

The admin console speaks only the simple query protocol, so every statement
goes through a `ClientCursor` (psycopg/psycopg#819).  Columns are read by
name from the row description, so 1.18 .. 1.25 layouts all parse; only SHOW
commands are sent (a SET on the console would change PgBouncer's config).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from benchtop.errors import one_line
from benchtop.sources.base import Missing, Source, SourceError, SourceSnapshot, shut_down_descriptor
from benchtop.sources.fields import CLIENTS, CLIENT_STATES, LISTS, POOLS, SERVERS, SERVER_STATES, STATS, VERSION
from benchtop.sources.rates import CounterTracker, Interval, to_number
from benchtop.target import Target
from benchtop.target.connection import libpq_params

if TYPE_CHECKING:
    import psycopg

ADMIN_DB = "pgbouncer"
MONITOR_NAME = "benchtop-monitor"
_TEXT_COLUMNS = {"database", "user", "pool_mode", "load_balance_hosts", "list"}


def typed_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A SHOW row keyed by PgBouncer's column names, ints where numeric.

    >>> typed_row({"database": "sbtest", "cl_active": "8", "pool_mode": "transaction"})
    {'database': 'sbtest', 'cl_active': 8, 'pool_mode': 'transaction'}
    """
    out: dict[str, Any] = {}
    for key, value in row.items():
        num = None if key in _TEXT_COLUMNS else to_number(value)
        out[key] = num if num is not None else value
    return out


def state_counts(pools: Iterable[Mapping[str, Any]], prefix: str) -> dict[str, int]:
    """Clients ("cl_") or servers ("sv_") by state, summed over pools.

    >>> state_counts([{"cl_active": 8, "cl_waiting": 1, "sv_idle": 2},
    ...               {"cl_active": 1, "cl_waiting": 0}], "cl_")
    {'active': 9, 'waiting': 1, 'total': 10}
    """
    out: dict[str, int] = {}
    for pool in pools:
        for key, value in pool.items():
            if key.startswith(prefix) and isinstance(value, int):
                state = key[len(prefix) :]
                out[state] = out.get(state, 0) + value
    out["total"] = sum(out.values())
    return out


# SHOW STATS total_* columns -> rate keys. Times are microseconds.
_STAT_RATES = {
    "xact_per_s": "total_xact_count",
    "query_per_s": "total_query_count",
    "received_bytes_per_s": "total_received",
    "sent_bytes_per_s": "total_sent",
    "wait_time_us_per_s": "total_wait_time",
    "server_assignments_per_s": "total_server_assignment_count",  # 1.23+
    "client_parses_per_s": "total_client_parse_count",  # 1.24+
    "server_parses_per_s": "total_server_parse_count",  # 1.24+
    "binds_per_s": "total_bind_count",  # 1.24+
    "client_logins_per_s": "total_client_login_count",  # 1.25+
}


def stats_rates(iv: Interval) -> dict[str, Any]:
    """One database's SHOW STATS totals turned into rates and interval averages.

    >>> iv = Interval({"total_xact_count": 100, "total_xact_time": 5000, "total_query_count": 300,
    ...                "total_query_time": 3000, "total_wait_time": 40},
    ...               {"total_xact_count": 300, "total_xact_time": 25000, "total_query_count": 900,
    ...                "total_query_time": 9000, "total_wait_time": 240}, 2.0)
    >>> r = stats_rates(iv)
    >>> r["xact_per_s"], r["avg_xact_time_us"], r["avg_query_time_us"], r["avg_wait_time_us"]
    (100.0, 100.0, 10.0, 1.0)
    """
    out: dict[str, Any] = {}
    for key, column in _STAT_RATES.items():
        if column in iv.cur:
            out[key] = iv.rate(column)
    out["avg_xact_time_us"] = iv.ratio("total_xact_time", "total_xact_count")
    out["avg_query_time_us"] = iv.ratio("total_query_time", "total_query_count")
    # Waiting for a server connection, per transaction: the pool's share of latency.
    out["avg_wait_time_us"] = iv.ratio("total_wait_time", "total_xact_count")
    return out


# SHOW CLIENTS / SHOW SERVERS columns kept (by name: later versions add more).
_PEER_COLUMNS = ("user", "database", "state", "addr", "port", "connect_time", "request_time", "application_name", "tls")
MAX_PEERS = 500  # a busy PgBouncer has thousands of clients; the rest are counted


def peer_rows(rows: Iterable[Mapping[str, Any]], skip_admin_console: bool = False) -> list[dict[str, Any]]:
    """SHOW CLIENTS / SHOW SERVERS rows: the columns a DBA reads, the wait in
    seconds (wait + wait_us), waiting ones first, then the oldest requests.

    >>> rows = [{"type": "C", "user": "u", "database": "db", "state": "active", "wait": "0", "wait_us": "0",
    ...          "request_time": "2026-11-23 02:59:43 UTC", "ptr": "0x1"},
    ...         {"type": "C", "user": "u", "database": "db", "state": "waiting", "wait": "1", "wait_us": "500000",
    ...          "request_time": "2026-11-23 02:59:40 UTC"},
    ...         {"type": "C", "user": "u", "database": "pgbouncer", "state": "active", "application_name":
    ...          "benchtop-monitor"}]
    >>> [(r["state"], r["wait_s"]) for r in peer_rows(rows, skip_admin_console=True)]
    [('waiting', 1.5), ('active', 0.0)]
    """
    out = []
    for row in rows:
        if skip_admin_console and row.get("database") == ADMIN_DB and row.get("application_name") == MONITOR_NAME:
            continue  # the monitor's own console session
        item = {k: row.get(k) for k in _PEER_COLUMNS if k in row}
        wait, wait_us = to_number(row.get("wait")), to_number(row.get("wait_us"))
        item["wait_s"] = round((wait or 0) + (wait_us or 0) / 1e6, 6) if wait is not None else None
        if isinstance(item.get("port"), str):
            item["port"] = to_number(item["port"])
        out.append(item)
    out.sort(key=lambda r: (r["state"] != "waiting", -(r["wait_s"] or 0), str(r.get("request_time") or "")))
    return out[:MAX_PEERS]


# the panels a poll fills, each of them Missing when the console refused the login
PANELS = (POOLS, CLIENT_STATES, SERVER_STATES, STATS, CLIENTS, SERVERS, LISTS)
REFUSED_RETRY_S = 10.0


class PgBouncerSource(Source):
    kind = "pgbouncer"

    def __init__(self, name: str, target: Target, timeout_s: float = 5.0, *, per_process: bool = True,
                 pools_only: bool = False) -> None:
        """`pools_only`: a poll reads SHOW POOLS and SHOW STATS alone (what a
        verdict needs), not the client and server lists, thousands of rows
        under many connections."""
        super().__init__(name, target, timeout_s, per_process=per_process)
        self.pools_only = pools_only
        self.version = ""
        self._conn: psycopg.Connection | None = None
        self._stats: dict[str, CounterTracker] = {}
        # PgBouncer refused the login to its console (the user is in neither
        # stats_users nor admin_users): every panel says so, the monitor goes
        # on, and the login is tried again now and then (a RELOAD may allow it)
        self._refused: Missing | None = None
        self._refused_at = 0.0

    def connect(self) -> None:
        # imported here, not with the module: every run imports this source
        # (its verdicts read pools), few use it, and psycopg costs ~0.15 s of
        # a run's start-up
        import psycopg

        t = self.target
        params = libpq_params(t, timeout_s=self.timeout_s, dbname=ADMIN_DB, application_name=MONITOR_NAME)
        try:
            self._conn = psycopg.connect(**params, autocommit=True, cursor_factory=psycopg.ClientCursor)
            rows = self._show("SHOW VERSION")
        except psycopg.Error as exc:
            self.close()
            if "not allowed" in str(exc):
                self._refused = Missing("not permitted", f"add {t.user or 'the user'} to stats_users in "
                                        f"pgbouncer.ini and RELOAD (PgBouncer: {one_line(exc).split('FATAL:')[-1].strip()})")
                self._refused_at = time.monotonic()
                return
            raise SourceError(f"{t.describe()}: {one_line(exc)}") from None
        except SourceError:
            self.close()
            raise
        # 1.18 answers one column "version" = "PgBouncer 1.18.0".
        self.version = str(next(iter(rows[0].values()))) if rows else ""
        self._stats = {}
        self._refused = None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            import psycopg

            try:
                conn.close()
            except psycopg.Error:
                pass

    def interrupt(self) -> None:
        conn = self._conn
        if conn is None:
            return
        import psycopg

        try:
            fd = conn.pgconn.socket
        except psycopg.Error:  # already closed
            return
        shut_down_descriptor(fd)

    def _show(self, command: str) -> list[dict[str, Any]]:
        if self._conn is None:
            raise SourceError("not connected")
        import psycopg

        try:
            with self._conn.cursor() as cur:
                cur.execute(command)
                names = [c.name for c in cur.description or ()]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise SourceError(f"connection lost: {one_line(exc)}") from None

    def _panel(self, command: str) -> list[dict[str, Any]] | Missing:
        import psycopg

        try:
            return self._show(command)
        except psycopg.errors.InsufficientPrivilege as exc:
            return Missing("not permitted", f"add the user to stats_users in pgbouncer.ini ({one_line(exc)})")
        except psycopg.Error as exc:
            return Missing(f"{command} failed", one_line(exc))

    def poll(self) -> SourceSnapshot:
        t0 = time.perf_counter()
        now = time.monotonic()
        if self._refused is not None and now - self._refused_at >= REFUSED_RETRY_S:
            self.connect()
        if self._refused is not None:
            return self.snapshot({VERSION: self.version, **{k: self._refused for k in PANELS}}, t0, None)
        if self._conn is None:
            raise SourceError("not connected")
        panels: dict[str, Any] = {VERSION: self.version}
        interval_s: float | None = None

        pools = self._panel("SHOW POOLS")
        if isinstance(pools, Missing):
            panels.update({POOLS: pools, CLIENT_STATES: pools, SERVER_STATES: pools})
        else:
            typed = [typed_row(r) for r in pools]
            panels[POOLS] = typed
            panels[CLIENT_STATES] = state_counts(typed, "cl_")
            panels[SERVER_STATES] = state_counts(typed, "sv_")

        stats = self._panel("SHOW STATS")
        if isinstance(stats, Missing):
            panels[STATS] = stats
            self._stats = {}
        else:
            per_db: list[dict[str, Any]] = []
            for row in stats:
                values = typed_row(row)
                db = str(values.get("database"))
                counters = {k: v for k, v in values.items() if k.startswith("total_") and isinstance(v, (int, float))}
                iv = self._stats.setdefault(db, CounterTracker()).advance(counters, now)
                interval_s = iv.seconds if iv.seconds is not None else interval_s
                per_db.append({"database": db, **stats_rates(iv)})
            panels[STATS] = per_db

        if self.pools_only:
            return self.snapshot(panels, t0, interval_s)
        clients = self._panel("SHOW CLIENTS")
        panels[CLIENTS] = clients if isinstance(clients, Missing) else peer_rows(clients, skip_admin_console=True)
        servers = self._panel("SHOW SERVERS")
        panels[SERVERS] = servers if isinstance(servers, Missing) else peer_rows(servers)

        lists = self._panel("SHOW LISTS")
        panels[LISTS] = (
            lists if isinstance(lists, Missing) else {str(r["list"]): to_number(r["items"]) for r in lists}
        )
        return self.snapshot(panels, t0, interval_s)
