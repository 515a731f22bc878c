"""ProxySQL admin interface (port 6032) as a source: what Proxytop's ConnPool,
QueryRules, GloStat, ProcList and ComCount screens show, as rates per poll.

Panels (rates are per second over the interval since the previous poll, None
on the first poll or when a counter went backwards, i.e. was reset):

- `connection_pool`: stats_mysql_connection_pool rows keyed by ProxySQL's
  column names (numbers as ints), plus `Queries_per_s`, `Bytes_data_sent_per_s`,
  `Bytes_data_recv_per_s`, `ConnOK_per_s`, `ConnERR_per_s`, `ConnUsed_pct`
  (ConnUsed of ConnUsed+ConnFree) and, when runtime_mysql_servers is readable,
  `weight` and `max_connections`.
- `servers`: runtime_mysql_servers rows, or Missing for the stats user.
- `global` / `global_rates`: stats_mysql_global as {Variable_Name: value} and
  {Variable_Name: per second} for its counters.
- `commands`: per command with traffic: `cnt_per_s`, `avg_us` (interval),
  `avg_us_total`, `buckets` (cnt_100us..cnt_INFs deltas in the interval),
  `interval_time_us` (Total_Time_us delta).
- `processlist`: stats_mysql_processlist rows, refreshed at most every
  `processlist_interval_s` (it is costly on a busy proxy).
- `query_rules`: rule hits and `hits_per_s`, with match_digest/match_pattern/
  destination_hostgroup... from runtime_mysql_query_rules when readable;
  `query_rule_config` is Missing otherwise.
- `digest_top`: top-N digests by time spent in the interval, refreshed at
  most every `digest_interval_s`: reading the digest table makes the proxy
  serialize its whole digest map, so only the needed columns are selected
  and, after the first read, only digests seen since the last one.
- `pool_wait`: connection acquisitions from ConnPool_get_conn_*, and the time
  statements spent in the proxy (pool wait + routing) against time in the
  backends; `hostgroup_waits`: per-hostgroup wait times where the build has
  stats_mysql_hostgroup_connection_pool (Missing otherwise).
- `ages_s`: how old the throttled panels (processlist, digest_top) are.

Safety: only SELECT/SHOW statements; never a `*_reset` table (reading one
zeroes the proxy's counters for everybody); columns are read by name so the
1.4 layouts (no MaxConnUsed, no status_flags...) work too.
"""

from __future__ import annotations

import re
import time
from typing import Any, Iterable, Mapping

import pymysql

from benchtop.errors import one_line
from benchtop.sources.base import Missing, Source, SourceError, SourceSnapshot, shut_down_socket
from benchtop.sources.fields import (
    AGES_S,
    COMMANDS,
    CONNECTION_POOL,
    DIGEST_TOP,
    GLOBAL,
    GLOBAL_RATES,
    HOSTGROUP_WAITS,
    POOL_WAIT,
    PROCESSLIST,
    QUERY_RULES,
    QUERY_RULE_CONFIG,
    SERVERS,
)
from benchtop.sources.rates import Interval
from benchtop.target import Target
from benchtop.target import mysql_client
from benchtop.target.connection import pymysql_kwargs

SQL_VERSION = "SELECT @@admin-version"
SQL_STATS_TABLES = "SHOW TABLES FROM stats"
SQL_POOL = "SELECT * FROM stats.stats_mysql_connection_pool"
SQL_SERVERS = "SELECT * FROM runtime_mysql_servers"
SQL_GLOBAL = "SELECT Variable_Name, Variable_Value FROM stats.stats_mysql_global"
SQL_COMMANDS = "SELECT * FROM stats.stats_mysql_commands_counters WHERE Total_cnt > 0"
SQL_PROCESSLIST = "SELECT * FROM stats.stats_mysql_processlist"
SQL_RULE_HITS = "SELECT * FROM stats.stats_mysql_query_rules"
SQL_RULES = "SELECT * FROM runtime_mysql_query_rules"
SQL_DIGEST = (
    "SELECT hostgroup, schemaname, username, client_address, digest, digest_text, count_star, sum_time, last_seen "
    "FROM stats.stats_mysql_query_digest"
)
SQL_DIGEST_SINCE = SQL_DIGEST + " WHERE last_seen >= %s"
SQL_HOSTGROUP_POOL = "SELECT * FROM stats.stats_mysql_hostgroup_connection_pool"
HOSTGROUP_POOL_TABLE = "stats_mysql_hostgroup_connection_pool"

_RESET_TABLE = re.compile(r"_reset\b", re.IGNORECASE)

# Columns that hold text even when they look numeric (a user called "1234").
_TEXT_COLUMNS = frozenset(
    "srv_host status hostname comment user db cli_host l_srv_host command info extended_info digest digest_text "
    "schemaname username client_address match_digest match_pattern replace_pattern error_msg OK_msg "
    "re_modifiers attributes Variable_Name Command last_error proxy_addr client_addr".split()
)
_POOL_RATES = ("Queries", "Bytes_data_sent", "Bytes_data_recv", "ConnOK", "ConnERR")
_GLOBAL_COUNTERS = frozenset(
    """Questions Slow_queries Client_Connections_created Client_Connections_aborted Server_Connections_created
    Server_Connections_aborted Server_Connections_delayed Backend_query_time_nsec Query_Processor_time_nsec
    generated_error_packets max_connect_timeouts Access_Denied_Wrong_Password Access_Denied_Max_Connections
    Access_Denied_Max_User_Connections Selects_for_update__autocommit0 GTID_consistent_queries
    backend_lagging_during_query backend_offline_during_query automatic_detected_sql_injection
    client_host_error_killed_connections hostgroup_locked_set_cmds hostgroup_locked_queries Query_Cache_Purged""".split()
)
_GLOBAL_COUNTER_PREFIXES = (
    "Com_", "ConnPool_get_conn_", "MyHGM_myconnpoll_", "Queries_backends_bytes_", "Queries_frontends_bytes_",
    "Query_Cache_count_", "Query_Cache_bytes_", "mysql_killed_backend_", "mysql_unexpected_frontend_",
)  # fmt: skip
_RULE_CONFIG = ("active", "match_digest", "match_pattern", "destination_hostgroup", "apply", "comment")
_ADMIN_HINT = "connect as an admin user (admin-admin_credentials); the stats user reads only the stats schema"


class _Lost(Exception):
    """The connection failed (client-side error): the poll fails as a whole."""


class _Refused(Exception):
    """The proxy answered with an error: only the panel degrades."""


def _value(column: str, raw: Any) -> Any:
    """ProxySQL sends every value as a string: numbers become ints, the rest
    ('ONLINE', 'false', digests) stays as sent."""
    if not isinstance(raw, str) or column in _TEXT_COLUMNS:
        return raw
    try:
        return int(raw)
    except ValueError:
        return raw


def _convert(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _value(k, v) for k, v in row.items()}


def _numbers(row: dict[str, Any] | None) -> dict[str, int] | None:
    return None if row is None else {k: v for k, v in row.items() if isinstance(v, int)}


def _is_global_counter(name: str) -> bool:
    return name in _GLOBAL_COUNTERS or name.startswith(_GLOBAL_COUNTER_PREFIXES)


class ProxySQLSource(Source):
    kind = "proxysql"

    def __init__(
        self,
        name: str,
        target: Target,
        timeout_s: float = 5.0,
        *,
        digest_top_n: int = 10,
        digest_interval_s: float = 5.0,
        processlist_interval_s: float = 5.0,
        config_interval_s: float = 30.0,
        per_process: bool = True,
    ) -> None:
        super().__init__(name, target, timeout_s, per_process=per_process)
        self.digest_top_n = digest_top_n
        self.digest_interval_s = digest_interval_s
        self.processlist_interval_s = processlist_interval_s
        self.config_interval_s = config_interval_s
        self.version: str | None = None
        self._conn: pymysql.connections.Connection | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        """Forget everything learned from the previous connection: after a
        reconnect the proxy may have restarted, so the first poll has no rates."""
        self._stats_tables: set[str] = set()
        self._prev_t: float | None = None
        self._prev_pool: dict[tuple[Any, ...], Mapping[str, float]] = {}
        self._prev_global: Mapping[str, float] | None = None
        self._prev_commands: dict[Any, dict[str, int]] | None = None
        self._prev_rule_hits: dict[Any, dict[str, int]] | None = None
        self._prev_hg_pool: dict[Any, Mapping[str, float]] = {}
        self._config_t: float | None = None
        self._servers: list[dict[str, Any]] | Missing = []
        self._rules: list[dict[str, Any]] | Missing = []
        self._proc_t: float | None = None
        self._proc_rows: list[dict[str, Any]] | Missing = []
        self._digest_t: float | None = None
        self._digest_prev: dict[tuple, tuple[int, int]] = {}
        self._digest_since: int | None = None
        self._digest_top: list[dict[str, Any]] | Missing = []

    # ---------------------------------------------------------------- lifecycle
    def connect(self) -> None:
        t = self.target
        where = t.describe()
        self.close()
        try:
            self._conn = mysql_client.connect(**pymysql_kwargs(t, timeout_s=self.timeout_s, with_database=False))
        except (pymysql.MySQLError, OSError) as exc:
            code = exc.args[0] if exc.args else 0
            hint = (
                "check the user and password (admin-admin_credentials, or admin-stats_credentials for read-only)"
                if code == 1045
                else "is ProxySQL running, and is its admin interface (admin-mysql_ifaces) listening there?"
            )
            raise SourceError(f"{where}: cannot connect to ProxySQL admin: {one_line(exc)}; {hint}") from None
        self._reset_state()
        try:
            rows = self._rows(SQL_VERSION)
            self.version = str(next(iter(rows[0].values()))) if rows else None
            self._stats_tables = {str(next(iter(r.values()))) for r in self._rows(SQL_STATS_TABLES)}
        except _Refused as exc:
            self.close()
            raise SourceError(
                f"{where}: not a ProxySQL admin interface (SELECT @@admin-version failed: {exc}); "
                "point it at the admin port (6032 by default)"
            ) from None
        except _Lost as exc:
            self.close()
            raise SourceError(f"{where}: connection lost: {exc}") from None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except (pymysql.MySQLError, OSError):
                pass  # already gone; closing must never raise

    def interrupt(self) -> None:
        conn = self._conn
        shut_down_socket(getattr(conn, "_sock", None) if conn is not None else None)

    # ---------------------------------------------------------------- polling
    def poll(self) -> SourceSnapshot:
        if self._conn is None:
            self.connect()
        started = time.perf_counter()
        now = time.monotonic()
        dt = None if self._prev_t is None else now - self._prev_t
        try:
            panels = self._read_panels(now, dt)
        except _Lost as exc:
            self.close()
            raise SourceError(f"{self.target.describe()}: connection lost: {exc}") from None
        self._prev_t = now
        return self.snapshot(panels, started, dt)

    def _read_panels(self, now: float, dt: float | None) -> dict[str, Any]:
        if self._config_t is None or now - self._config_t >= self.config_interval_s:
            # Reading runtime_* makes ProxySQL rebuild them under its config
            # locks, and they change rarely: refresh them slowly.
            self._servers = self._panel(SQL_SERVERS, "runtime_mysql_servers")
            self._rules = self._panel(SQL_RULES, "runtime_mysql_query_rules")
            self._config_t = now
        panels: dict[str, Any] = {}
        panels[CONNECTION_POOL] = self._connection_pool(dt)
        panels[SERVERS] = self._servers
        glob = self._panel(SQL_GLOBAL, "stats_mysql_global")
        values = {} if isinstance(glob, Missing) else {r["Variable_Name"]: r["Variable_Value"] for r in glob}
        glob_iv = Interval(self._prev_global, _numbers(values) or {}, dt)
        panels[GLOBAL] = glob if isinstance(glob, Missing) else values
        panels[GLOBAL_RATES] = {
            k: glob_iv.rate(k) for k, v in values.items() if isinstance(v, int) and _is_global_counter(k)
        }
        commands = self._commands(dt)
        panels[COMMANDS] = commands
        panels[PROCESSLIST] = self._processlist(now)
        panels[QUERY_RULES], panels[QUERY_RULE_CONFIG] = self._query_rules(dt)
        panels[DIGEST_TOP] = self._digests(now)
        panels[POOL_WAIT] = self._pool_wait(glob_iv, commands)
        panels[HOSTGROUP_WAITS] = self._hostgroup_waits(dt)
        panels[AGES_S] = {
            "processlist": None if self._proc_t is None else round(now - self._proc_t, 3),
            "digest_top": None if self._digest_t is None else round(now - self._digest_t, 3),
        }
        self._prev_global = glob_iv.cur if values else None
        return panels

    # ---------------------------------------------------------------- queries
    def _rows(self, sql: str, args: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        """Run one read-only statement; rows as {column name: value as sent}."""
        if _RESET_TABLE.search(sql):
            raise _Refused("refusing to read a *_reset table: it would zero the proxy's counters")
        if self._conn is None:
            raise _Lost("not connected")
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, args)
                columns = [d[0] for d in cur.description or ()]
                return [dict(zip(columns, row)) for row in cur.fetchall()]
        except pymysql.MySQLError as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
            if 0 < code < 2000:  # a server error; 2000+ are the client's (lost, timed out)
                raise _Refused(one_line(exc)) from None
            raise _Lost(one_line(exc)) from None
        except OSError as exc:
            raise _Lost(one_line(exc)) from None

    def _panel(self, sql: str, table: str, args: Iterable[Any] | None = None) -> list[dict[str, Any]] | Missing:
        try:
            return [_convert(r) for r in self._rows(sql, args)]
        except _Refused as exc:
            if table.startswith("runtime_"):
                return Missing(f"{table} not readable by this user", _ADMIN_HINT)
            return Missing(f"{table}: {exc}", "needs a ProxySQL admin or stats user that can read this table")

    # ---------------------------------------------------------------- panels
    def _connection_pool(self, dt: float | None) -> list[dict[str, Any]] | Missing:
        rows = self._panel(SQL_POOL, "stats_mysql_connection_pool")
        if isinstance(rows, Missing):
            return rows
        servers = {}
        if not isinstance(self._servers, Missing):
            servers = {(s.get("hostgroup_id"), s.get("hostname"), s.get("port")): s for s in self._servers}
        prev_pool, self._prev_pool = self._prev_pool, {}
        for row in rows:
            key = (row.get("hostgroup"), row.get("srv_host"), row.get("srv_port"))
            iv = Interval(prev_pool.get(key), _numbers(row) or {}, dt)
            self._prev_pool[key] = iv.cur
            for col in _POOL_RATES:
                if col in row:
                    row[f"{col}_per_s"] = iv.rate(col)
            used, free = row.get("ConnUsed"), row.get("ConnFree")
            if isinstance(used, int) and isinstance(free, int):
                row["ConnUsed_pct"] = round(100.0 * used / (used + free), 1) if used + free else 0.0
            server = servers.get(key)
            if server is not None:
                row["weight"] = server.get("weight")
                row["max_connections"] = server.get("max_connections")
        return rows

    def _commands(self, dt: float | None) -> list[dict[str, Any]] | Missing:
        rows = self._panel(SQL_COMMANDS, "stats_mysql_commands_counters")
        if isinstance(rows, Missing):
            return rows
        prev_all, self._prev_commands = self._prev_commands, {}
        out = []
        for row in rows:
            command = row.get("Command")
            cur = _numbers(row) or {}
            # Rows with Total_cnt = 0 are filtered out, so a command missing
            # from the previous poll had all-zero counters then.
            prev = None if prev_all is None else prev_all.get(command, dict.fromkeys(cur, 0))
            iv = Interval(prev, cur, dt)
            self._prev_commands[command] = cur
            count, total_us = row.get("Total_cnt"), row.get("Total_Time_us")
            d_count, d_time = iv.delta("Total_cnt"), iv.delta("Total_Time_us")
            out.append(
                {
                    "Command": command,
                    "Total_cnt": count,
                    "Total_Time_us": total_us,
                    "cnt_per_s": iv.rate("Total_cnt"),
                    "avg_us": round(d_time / d_count, 1) if d_count and d_time is not None else None,
                    "avg_us_total": round(total_us / count, 1) if isinstance(total_us, int) and count else None,
                    "buckets": {} if prev is None else {b: iv.delta(b) for b in cur if b.startswith("cnt_")},
                    "interval_time_us": d_time,
                }
            )
        out.sort(key=lambda r: (r["cnt_per_s"] or 0, r["Total_cnt"] or 0), reverse=True)
        return out

    def _processlist(self, now: float) -> list[dict[str, Any]] | Missing:
        if self._proc_t is None or now - self._proc_t >= self.processlist_interval_s:
            self._proc_rows = self._panel(SQL_PROCESSLIST, "stats_mysql_processlist")
            self._proc_t = now
        return self._proc_rows

    def _query_rules(self, dt: float | None) -> tuple[list[dict[str, Any]] | Missing, list | Missing]:
        hits = self._panel(SQL_RULE_HITS, "stats_mysql_query_rules")
        if isinstance(hits, Missing):
            return hits, self._rules
        config = {} if isinstance(self._rules, Missing) else {r.get("rule_id"): r for r in self._rules}
        prev_all, self._prev_rule_hits = self._prev_rule_hits, {}
        for row in hits:
            rule_id = row.get("rule_id")
            cur = _numbers({"hits": row.get("hits")}) or {}
            prev = None if prev_all is None else prev_all.get(rule_id, {"hits": 0})
            row["hits_per_s"] = Interval(prev, cur, dt).rate("hits")
            self._prev_rule_hits[rule_id] = cur
            rule = config.get(rule_id)
            if rule is not None:
                row.update({k: rule[k] for k in _RULE_CONFIG if k in rule})
        hits.sort(key=lambda r: (r["hits_per_s"] or 0, r.get("hits") or 0), reverse=True)
        return hits, self._rules

    def _digests(self, now: float) -> list[dict[str, Any]] | Missing:
        if self._digest_t is not None and now - self._digest_t < self.digest_interval_s:
            return self._digest_top
        if self._digest_since is None:
            rows = self._panel(SQL_DIGEST, "stats_mysql_query_digest")
        else:
            rows = self._panel(SQL_DIGEST_SINCE, "stats_mysql_query_digest", (self._digest_since,))
        if isinstance(rows, Missing):
            self._digest_top, self._digest_t = rows, now
            return rows
        interval = None if self._digest_t is None else now - self._digest_t
        top: list[dict[str, Any]] = []
        for row in rows:
            key = (row.get("hostgroup"), row.get("schemaname"), row.get("username"), row.get("client_address"), row.get("digest"))
            count, sum_time = row.get("count_star"), row.get("sum_time")
            if not isinstance(count, int) or not isinstance(sum_time, int):
                continue
            prev = self._digest_prev.get(key, (0, 0))
            self._digest_prev[key] = (count, sum_time)
            if interval is None:
                continue
            d_count, d_time = count - prev[0], sum_time - prev[1]
            if d_count < 0 or d_time < 0:  # the digest map was reset in between
                d_count, d_time = count, sum_time
            if d_count > 0:
                top.append(
                    {
                        "hostgroup": row.get("hostgroup"),
                        "schemaname": row.get("schemaname"),
                        "username": row.get("username"),
                        "digest": row.get("digest"),
                        "digest_text": row.get("digest_text"),
                        "count_per_s": round(d_count / interval, 3),
                        "avg_us": round(d_time / d_count, 1),
                        "time_ms_per_s": round(d_time / 1000.0 / interval, 3),
                    }
                )
            last_seen = row.get("last_seen")
            if isinstance(last_seen, int) and (self._digest_since is None or last_seen > self._digest_since):
                self._digest_since = last_seen
        if interval is None:
            seen = [r["last_seen"] for r in rows if isinstance(r.get("last_seen"), int)]
            self._digest_since = max(seen) if seen else 0
        top.sort(key=lambda r: r["time_ms_per_s"], reverse=True)
        self._digest_top, self._digest_t = top[: self.digest_top_n], now
        return self._digest_top

    def _pool_wait(self, glob: Interval, commands: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            f"{name}_per_s": glob.rate(f"ConnPool_{name}")
            for name in ("get_conn_immediate", "get_conn_success", "get_conn_failure", "get_conn_latency_awareness")
        }
        immediate, success = out["get_conn_immediate_per_s"], out["get_conn_success_per_s"]
        acquired = (immediate or 0) + (success or 0)
        out["immediate_pct"] = round(100.0 * immediate / acquired, 1) if immediate is not None and acquired else None
        # Total_Time_us runs from a statement's arrival at the proxy to its
        # reply; Backend_query_time_nsec only while a backend works on it. The
        # difference is the proxy's share: waiting for a pooled connection
        # plus routing.
        d_total_us = None
        if isinstance(commands, list) and all(c["interval_time_us"] is not None for c in commands):
            d_total_us = sum(c["interval_time_us"] for c in commands)
        d_backend_ns = glob.delta("Backend_query_time_nsec")
        keys = ("statement_time_ms_per_s", "backend_time_ms_per_s", "proxy_time_ms_per_s", "proxy_time_pct")
        out.update(dict.fromkeys(keys))
        if d_total_us is not None and d_backend_ns is not None and glob.seconds:
            backend_us = d_backend_ns / 1000.0
            proxy_us = max(d_total_us - backend_us, 0.0)
            out["statement_time_ms_per_s"] = round(d_total_us / 1000.0 / glob.seconds, 3)
            out["backend_time_ms_per_s"] = round(backend_us / 1000.0 / glob.seconds, 3)
            out["proxy_time_ms_per_s"] = round(proxy_us / 1000.0 / glob.seconds, 3)
            out["proxy_time_pct"] = round(100.0 * proxy_us / d_total_us, 1) if d_total_us else None
        return out

    def _hostgroup_waits(self, dt: float | None) -> list[dict[str, Any]] | Missing:
        if HOSTGROUP_POOL_TABLE not in self._stats_tables:
            return Missing(
                f"{HOSTGROUP_POOL_TABLE} not present in this ProxySQL build",
                "per-hostgroup pool wait times need a build with it (PROXYSQL31); pool_wait uses ConnPool_get_conn_*",
            )
        rows = self._panel(SQL_HOSTGROUP_POOL, HOSTGROUP_POOL_TABLE)
        if isinstance(rows, Missing):
            return rows
        prev_all, self._prev_hg_pool = self._prev_hg_pool, {}
        out = []
        for row in rows:
            hg = row.get("hostgroup")
            iv = Interval(prev_all.get(hg), _numbers(row) or {}, dt)
            self._prev_hg_pool[hg] = iv.cur
            d_acq, d_wait = iv.delta("acquisitions_total"), iv.delta("wait_time_us_total")
            out.append(
                {
                    "hostgroup": hg,
                    "acquisitions_per_s": iv.rate("acquisitions_total"),
                    "waits_per_s": iv.rate("waits_total"),
                    "wait_ms_per_s": iv.rate("wait_time_us_total", scale=0.001),
                    "avg_wait_us": round(d_wait / d_acq, 1) if d_acq and d_wait is not None else None,
                    "waiters": row.get("waiters"),
                }
            )
        return out
