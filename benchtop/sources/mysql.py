"""MySQL / MariaDB / Percona server source over PyMySQL.

One connection of its own, autocommit, a read-only session and a statement
timeout on both sides (server: max_statement_time / max_execution_time;
client: read_timeout), so a hung server costs one timeout, not a frozen UI.
Metadata and row lock waits are refused, never queued for (lock_wait_timeout
and innodb_lock_wait_timeout 0, or 1 s where 0 is not allowed).
A poll is a handful of statements: SHOW GLOBAL STATUS, the settings, the
performance_schema wait summary, and SHOW BINARY LOGS when the binary log is on.
"""

from __future__ import annotations

import datetime
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, cast

import pymysql

from benchtop.errors import one_line
from benchtop.sources import sql
from benchtop.sources.base import (
    Missing,
    PanelFailed,
    Source,
    SourceError,
    SourceSnapshot,
    flatten,
    scrub_setting,
    shut_down_socket,
)
from benchtop.sources.fields import (
    BINLOG,
    DATABASE,
    DEADLOCK,
    INNODB,
    LOCKS,
    METADATA_LOCKS,
    PROCESSLIST,
    REPLICA,
    ROWS,
    SETTINGS,
    STATUS_RATES,
    THREADS,
    TOP_STATEMENTS,
    TRANSACTIONS,
    WAITS,
    InnoDBPanel,
)
from benchtop.sources.replication import replica_rows, replica_status_statement
from benchtop.sources.mysql_trx import latest_deadlock, metadata_lock_rows, transaction_rows
from benchtop.sources.rates import CounterTracker, Interval, to_number
from benchtop.target import Target
from benchtop.target import mysql_client
from benchtop.target.connection import pymysql_kwargs

# Client-side errors meaning the connection is gone (CR_* codes), plus
# MariaDB/MySQL's "server shutdown in progress" and "connection killed".
_CONNECTION_LOST = {1053, 1927, 2002, 2003, 2006, 2013, 2055, 4031}
_STATEMENT_TIMEOUT = {1969, 3024}
_LOCK_WAIT_TIMEOUT = {1205}  # lock_wait_timeout (metadata locks) and innodb_lock_wait_timeout
_DENIED = {1044, 1045, 1142, 1143, 1227, 1370}

STATUS_RATE_COUNTERS = {
    # key in the panel: SHOW GLOBAL STATUS variable
    "questions_per_s": "Questions",
    "commits_per_s": "Com_commit",
    "rollbacks_per_s": "Com_rollback",
    "com_select_per_s": "Com_select",
    "com_insert_per_s": "Com_insert",
    "com_update_per_s": "Com_update",
    "com_delete_per_s": "Com_delete",
    "bytes_received_per_s": "Bytes_received",
    "bytes_sent_per_s": "Bytes_sent",
    "slow_queries_per_s": "Slow_queries",
    "tmp_disk_tables_per_s": "Created_tmp_disk_tables",
    "connections_per_s": "Connections",
}

_INNODB_COUNTERS = {
    "lsn": None,  # filled from whichever LSN source the server has
    "pages_flushed": "Innodb_buffer_pool_pages_flushed",
    "bp_reads": "Innodb_buffer_pool_reads",
    "bp_read_requests": "Innodb_buffer_pool_read_requests",
    "row_lock_waits": "Innodb_row_lock_waits",
    "os_log_written": "Innodb_os_log_written",
    "log_fsyncs": "Innodb_os_log_fsyncs",
    "data_fsyncs": "Innodb_data_fsyncs",
}


@dataclass(frozen=True, slots=True)
class ServerVersion:
    flavour: str  # mariadb | mysql | percona
    number: int  # 101119 for 10.11.19, 80036 for 8.0.36
    text: str

    @property
    def backend(self) -> str:
        """The SQL folder for this server."""
        return "mariadb" if self.flavour == "mariadb" else "mysql"


def parse_version(version: str, comment: str = "") -> ServerVersion:
    """Flavour and comparable number from @@version and @@version_comment.

    >>> parse_version("10.11.19-MariaDB-0+deb12u1", "Debian 12")
    ServerVersion(flavour='mariadb', number=101119, text='10.11.19-MariaDB-0+deb12u1')
    >>> parse_version("5.5.5-10.6.12-MariaDB-log").number  # old replication prefix
    100612
    >>> parse_version("8.0.36-28", "Percona Server (GPL), Release 28").flavour
    'percona'
    >>> parse_version("8.0.30").number
    80030
    """
    text = version or ""
    flavour = "mariadb" if "mariadb" in text.lower() else "mysql"
    if flavour == "mysql" and "percona" in (comment or "").lower():
        flavour = "percona"
    triples = re.findall(r"(\d+)\.(\d+)\.(\d+)", text)
    if flavour == "mariadb" and len(triples) > 1 and triples[0] == ("5", "5", "5"):
        triples = triples[1:]
    if not triples:
        return ServerVersion(flavour, 0, text)
    major, minor, patch = (int(x) for x in triples[0])
    return ServerVersion(flavour, major * 10000 + minor * 100 + patch, text)


# ------------------------------------------------------------------ panels (pure)


def settings_panel(variables: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as numbers where numeric, plus whether they are crash-safe.

    >>> p = settings_panel({"innodb_flush_log_at_trx_commit": "2", "log_bin": "OFF",
    ...                     "innodb_doublewrite": "ON", "sync_binlog": "0"})
    >>> p["innodb_flush_log_at_trx_commit"], p["crash_safe"], p["unsafe_because"]
    (2, False, ['innodb_flush_log_at_trx_commit=2'])
    """
    out: dict[str, Any] = {}
    for key, value in variables.items():
        num = to_number(value)
        out[key] = num if num is not None else value
    unsafe = []
    flush = out.get("innodb_flush_log_at_trx_commit")
    if flush is not None and flush != 1:
        unsafe.append(f"innodb_flush_log_at_trx_commit={flush}")
    if _on(out.get("log_bin")) and out.get("sync_binlog") not in (None, 1):
        unsafe.append(f"sync_binlog={out.get('sync_binlog')}")
    dw = out.get("innodb_doublewrite")
    if dw is not None and not _on(dw):
        unsafe.append(f"innodb_doublewrite={dw}")
    out["crash_safe"] = not unsafe
    out["unsafe_because"] = unsafe
    return out


def _on(value: Any) -> bool:
    return str(value).upper() in ("ON", "1", "YES", "TRUE", "FAST")


def threads_panel(status: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "running": to_number(status.get("Threads_running")),
        "connected": to_number(status.get("Threads_connected")),
    }


def status_rates_panel(iv: Interval) -> dict[str, float | None]:
    """The status counters' rates; queries/s leaves out the monitor's own
    statements (Questions counts them: about fifteen a poll), kept as
    monitor_questions_per_s.

    >>> iv = Interval({"Questions": 100, "monitor_questions": 10}, {"Questions": 180, "monitor_questions": 30}, 2.0)
    >>> p = status_rates_panel(iv)
    >>> p["questions_per_s"], p["monitor_questions_per_s"]
    (30.0, 10.0)
    """
    out = {key: iv.rate(var) for key, var in STATUS_RATE_COUNTERS.items()}
    own = iv.rate("monitor_questions")
    total = out.get("questions_per_s")
    if own is not None and total is not None:
        out["questions_per_s"] = round(max(total - own, 0.0), 3)
    out["monitor_questions_per_s"] = own
    return out


_LOG_PATTERNS = {
    "lsn": re.compile(r"^Log sequence number\s+(\d+)", re.M),
    "flushed_lsn": re.compile(r"^Log flushed up to\s+(\d+)", re.M),
    "checkpoint_lsn": re.compile(r"^Last checkpoint at\s+(\d+)", re.M),
    "history_list_length": re.compile(r"History list length\s+(\d+)"),
}


def parse_engine_status(text: str) -> dict[str, int]:
    """LSNs and history length from SHOW ENGINE INNODB STATUS (innotop's LOG parse).

    >>> parse_engine_status("LOG\\n---\\nLog sequence number 328872943\\n"
    ...                     "Log flushed up to   328872943\\nLast checkpoint at  308956466\\n")
    {'lsn': 328872943, 'flushed_lsn': 328872943, 'checkpoint_lsn': 308956466}
    """
    out: dict[str, int] = {}
    for key, pattern in _LOG_PATTERNS.items():
        m = pattern.search(text)
        if m:
            out[key] = int(m.group(1))
    return out


def lsn_facts(status: Mapping[str, Any], settings: Mapping[str, Any], engine: Mapping[str, int]) -> dict[str, Any]:
    """LSN, checkpoint LSN, age and the capacity the age is measured against,
    from whichever source this server has."""
    num = {k: to_number(v) for k, v in status.items()}
    out: dict[str, Any] = {}
    if num.get("Innodb_lsn_current") is not None:  # MariaDB, Percona
        out["lsn"] = num["Innodb_lsn_current"]
        out["checkpoint_lsn"] = num.get("Innodb_lsn_last_checkpoint")
        out["checkpoint_age_bytes"] = num.get("Innodb_checkpoint_age")
        out["checkpoint_max_age_bytes"] = num.get("Innodb_checkpoint_max_age")
    elif num.get("Innodb_redo_log_current_lsn") is not None:  # MySQL >= 8.0.30
        out["lsn"] = num["Innodb_redo_log_current_lsn"]
        out["checkpoint_lsn"] = num.get("Innodb_redo_log_checkpoint_lsn")
    elif engine.get("lsn") is not None:
        out["lsn"] = engine["lsn"]
        out["checkpoint_lsn"] = engine.get("checkpoint_lsn")
    if out.get("checkpoint_age_bytes") is None and out.get("lsn") is not None and out.get("checkpoint_lsn") is not None:
        out["checkpoint_age_bytes"] = out["lsn"] - out["checkpoint_lsn"]
    capacity = out.pop("checkpoint_max_age_bytes", None)
    if not capacity:
        capacity = to_number(settings.get("innodb_redo_log_capacity"))
    if not capacity:
        size = to_number(settings.get("innodb_log_file_size"))
        files = to_number(settings.get("innodb_log_files_in_group")) or 1
        capacity = size * files if size else None
    out["redo_capacity_bytes"] = capacity
    age = out.get("checkpoint_age_bytes")
    out["checkpoint_age_pct"] = round(100.0 * age / capacity, 2) if age is not None and capacity else None
    return out


def innodb_counters(status: Mapping[str, Any], lsn: int | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, var in _INNODB_COUNTERS.items():
        value = lsn if var is None else to_number(status.get(var))
        if value is not None:
            out[key] = value
    return out


def innodb_panel(
    status: Mapping[str, Any],
    facts: Mapping[str, Any],
    iv: Interval,
    history_list_length: int | None,
) -> dict[str, Any]:
    num = {k: to_number(v) for k, v in status.items()}
    dirty, total = num.get("Innodb_buffer_pool_pages_dirty"), num.get("Innodb_buffer_pool_pages_total")
    reads, requests = num.get("Innodb_buffer_pool_reads"), num.get("Innodb_buffer_pool_read_requests")
    miss = iv.ratio("bp_reads", "bp_read_requests", digits=6)
    return InnoDBPanel(
        lsn=facts.get("lsn"),
        checkpoint_lsn=facts.get("checkpoint_lsn"),
        checkpoint_age_bytes=facts.get("checkpoint_age_bytes"),
        checkpoint_age_pct=facts.get("checkpoint_age_pct"),
        redo_capacity_bytes=facts.get("redo_capacity_bytes"),
        dirty_pages_pct=round(100.0 * dirty / total, 2) if dirty is not None and total else None,
        pages_flushed_per_s=iv.rate("pages_flushed"),
        redo_bytes_per_s=iv.rate("lsn") if "lsn" in iv.cur else iv.rate("os_log_written"),
        buffer_pool_hit_ratio=round(1.0 - miss, 6) if miss is not None else None,
        buffer_pool_hit_ratio_total=round(1.0 - reads / requests, 6) if reads is not None and requests else None,
        history_list_length=history_list_length,
        row_lock_waits_per_s=iv.rate("row_lock_waits"),
        # MariaDB 10.8+ has no Innodb_os_log_fsyncs: its Innodb_data_fsyncs counts the redo log's syncs too
        log_fsyncs_per_s=iv.rate("log_fsyncs") if "log_fsyncs" in iv.cur else iv.rate("data_fsyncs"),
        row_lock_waiting=to_number(status.get("Innodb_row_lock_current_waits")),
    ).as_panel()


def waits_panel(
    prev: Mapping[str, tuple[int, int]] | None,
    cur: Mapping[str, tuple[int, int]],
    seconds: float | None,
    top: int = 10,
) -> list[dict[str, Any]]:
    """Top waits by wait time in the interval; readings map event -> (count, sum_ps).

    >>> waits_panel({"a": (10, 2_000_000_000)}, {"a": (30, 6_000_000_000)}, 2.0)
    [{'event': 'a', 'ms_per_s': 2.0, 'count_per_s': 10.0, 'avg_us': 200.0}]
    """
    if prev is None or not seconds:
        return []
    rows = []
    for event, (count, total) in cur.items():
        if event == "idle":
            continue
        pc, pt = prev.get(event, (0, 0))
        dc, dt = count - pc, total - pt
        if dt <= 0 or dc < 0:
            continue
        rows.append((dt, dc, event))
    rows.sort(reverse=True)
    return [
        {
            "event": event,
            "ms_per_s": round(dt / 1e9 / seconds, 3),
            "count_per_s": round(dc / seconds, 3),
            "avg_us": round(dt / 1e6 / dc, 3) if dc else None,
        }
        for dt, dc, event in rows[:top]
    ]


@dataclass(frozen=True, slots=True)
class BinlogReading:
    sizes: Mapping[str, int]  # file name -> size, in SHOW BINARY LOGS order


def binlog_panel(prev: BinlogReading | None, cur: BinlogReading, seconds: float | None) -> dict[str, Any]:
    """Size, growth and rotations; purged files do not count as negative growth.

    >>> a = BinlogReading({"b.000001": 100, "b.000002": 50})
    >>> b = BinlogReading({"b.000002": 90, "b.000003": 20})
    >>> p = binlog_panel(a, b, 2.0)
    >>> p["bytes_per_s"], p["rotations"], p["total_bytes"], p["current_file"]
    (30.0, 1, 110, 'b.000003')
    """
    written: int | None = None
    rotations: int | None = None
    if prev is not None:
        written, rotations = 0, 0
        for name, size in cur.sizes.items():
            before = prev.sizes.get(name)
            if before is None:
                rotations += 1
                written += size
            else:
                written += max(size - before, 0)
    files = list(cur.sizes)
    return {
        "enabled": True,
        "files": len(files),
        "current_file": files[-1] if files else None,
        "total_bytes": sum(cur.sizes.values()),
        "bytes_per_s": round(written / seconds, 3) if written is not None and seconds else None,
        "rotations": rotations,
    }


_ROW_HANDLERS = {"inserted": "Handler_write", "updated": "Handler_update", "deleted": "Handler_delete"}


def rows_panel(status: Mapping[str, Any]) -> dict[str, Any]:
    """Cumulative row changes, for a run's totals: InnoDB's counters, or the
    handler counters on servers without them (MariaDB >= 10.6).

    >>> rows_panel({"Handler_write": "7", "Handler_update": "2", "Handler_delete": "1"})
    {'inserted': 7, 'updated': 2, 'deleted': 1}
    """
    out = {}
    for key, handler in _ROW_HANDLERS.items():
        value = to_number(status.get(f"Innodb_rows_{key}"))
        out[key] = value if value is not None else to_number(status.get(handler))
    return out


def settings_snapshot(rows: list[tuple]) -> dict[str, str]:
    """(name, value, origin) rows as `name: value`, lower-case names as SHOW prints them.

    >>> settings_snapshot([("INNODB_FLUSH_LOG_AT_TRX_COMMIT", "2", "SQL"), ("MAX_CONNECTIONS", "200", "CONFIG")])
    {'innodb_flush_log_at_trx_commit': '2', 'max_connections': '200'}
    """
    pairs = sorted((str(r[0]).lower(), "" if r[1] is None else str(r[1])) for r in rows)
    return {name: scrub_setting(name, value) for name, value in pairs}


# Digest text has comments stripped, so the monitor's (and other monitors')
# statements are recognised by what they read.
_MONITORING = re.compile(
    r"\b(performance_schema|information_schema)\b|^\s*SHOW\b|@@\W*version\b"
    r"|^\s*SET\s+SESSION\s+(max_statement_time|max_execution_time|TRANSACTION\s+READ\s+ONLY)",
    re.I,
)


def is_monitoring(digest_text: str) -> bool:
    """
    >>> is_monitoring("SELECT `ID` FROM `information_schema` . `PROCESSLIST`"), is_monitoring("SHOW GLOBAL STATUS")
    (True, True)
    >>> is_monitoring("SELECT `c` FROM `sbtest1` WHERE `id` = ?")
    False
    """
    return bool(_MONITORING.search(digest_text or ""))


def processlist_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One session, with its time in seconds and its statement on one line."""
    t = to_number(row.get("time_s"))
    return {
        "id": row.get("id"),
        "user": row.get("user"),
        "host": row.get("host"),
        "db": row.get("db"),
        "command": row.get("command"),
        "time_s": round(float(t), 3) if t is not None else None,
        "state": row.get("state") or "",
        "query": flatten(row.get("query")),
    }


def lock_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One lock wait, its statements on one line."""
    return {k: (flatten(v) if k.endswith("_query") else _plain(v)) for k, v in row.items()}


def _plain(value: Any) -> Any:
    num = to_number(value) if not isinstance(value, str) else None
    if num is not None:
        return num
    if isinstance(value, (bytes, bytearray)):
        return value.decode(errors="replace")
    return value


_DIGEST_COUNTERS = ("calls", "total_ps", "rows_examined", "rows_sent", "rows_affected", "no_index_used")


def digest_deltas(
    baseline: dict[tuple[Any, Any], dict[str, float]],
    rows: Iterable[Mapping[str, Any]],
    seconds: float | None,
    top: int = 20,
) -> list[dict[str, Any]]:
    """Statements ranked by the time they took in the interval, from the
    digest table's cumulative totals; `baseline` (digest -> its totals at the
    previous read) is updated.  A digest missing from the baseline is new
    since then, so all of its totals fall in the interval.

    >>> base = {}
    >>> row = {"schema_name": "db", "digest": "d1", "digest_text": "SELECT ?", "calls": 10, "total_ps": 2e9}
    >>> digest_deltas(base, [row], None)
    []
    >>> later = dict(row, calls=30, total_ps=6e9, rows_examined=40)
    >>> r = digest_deltas(base, [later], 2.0)[0]
    >>> r["calls_per_s"], r["total_ms_per_s"], r["avg_ms"], r["rows_examined_per_s"]
    (10.0, 2.0, 0.2, 20.0)
    """
    out = []
    for row in rows:
        text = flatten(row.get("digest_text")) or ""
        if is_monitoring(text):
            continue
        key = (row.get("schema_name"), row.get("digest"))
        cur = {k: float(to_number(row.get(k)) or 0) for k in _DIGEST_COUNTERS}
        before = baseline.get(key)
        baseline[key] = cur
        if not seconds:
            continue
        d = {k: cur[k] - (before or {}).get(k, 0.0) for k in cur}
        if d["calls"] < 0 or d["total_ps"] < 0:  # the digest table was truncated in between
            d = cur
        if d["calls"] <= 0:
            continue
        item: dict[str, Any] = {
            "schema": row.get("schema_name"),
            "digest": row.get("digest"),
            "calls_per_s": round(d["calls"] / seconds, 3),
            "total_ms_per_s": round(d["total_ps"] / 1e9 / seconds, 3),
            "avg_ms": round(d["total_ps"] / 1e9 / d["calls"], 4),
            "rows_examined_per_s": round(d["rows_examined"] / seconds, 3),
            "rows_sent_per_s": round(d["rows_sent"] / seconds, 3),
            "rows_affected_per_s": round(d["rows_affected"] / seconds, 3),
            "no_index_used_per_s": round(d["no_index_used"] / seconds, 3),
        }
        for q in ("p95", "p99"):
            value = to_number(row.get(f"{q}_ps"))
            if value is not None:
                item[f"{q}_ms"] = round(value / 1e9, 4)  # since the digest was first seen
        item["query"] = text
        out.append(item)
    out.sort(key=lambda r: r["total_ms_per_s"], reverse=True)
    return out[:top]


def prepared_deltas(
    baseline: dict[Any, dict[str, float]],
    rows: Iterable[Mapping[str, Any]],
    seconds: float | None,
    top: int = 20,
) -> list[dict[str, Any]]:
    """Prepared statements ranked by the time they took in the interval, from
    performance_schema.prepared_statements_instances: each session's instance
    is diffed against its previous read (`baseline`, instance -> totals,
    updated), then the instances are summed per schema and statement text.
    An instance new since the last read counts whole; one gone is dropped.

    >>> base = {}
    >>> rows = [{"instance": 1, "sql_text": "SELECT c FROM sbtest1 WHERE id=?", "schema_name": "sbtest",
    ...          "calls": 100, "total_ps": 4e9},
    ...         {"instance": 2, "sql_text": "SELECT c FROM sbtest1 WHERE id=?", "schema_name": "sbtest",
    ...          "calls": 50, "total_ps": 2e9}]
    >>> prepared_deltas(base, rows, None)
    []
    >>> later = [dict(rows[0], calls=300, total_ps=12e9), dict(rows[1], calls=150, total_ps=6e9, rows_examined=150)]
    >>> r = prepared_deltas(base, later, 2.0)[0]
    >>> r["calls_per_s"], r["total_ms_per_s"], r["avg_ms"], r["rows_examined_per_s"], r["prepared"], r["query"]
    (150.0, 6.0, 0.04, 75.0, True, 'SELECT c FROM sbtest1 WHERE id=?')
    """
    current: dict[Any, dict[str, float]] = {}
    sums: dict[tuple[Any, str], dict[str, float]] = {}
    for row in rows:
        text = flatten(row.get("sql_text")) or ""
        if not text or is_monitoring(text):
            continue
        cur = {k: float(to_number(row.get(k)) or 0) for k in _DIGEST_COUNTERS}
        key = row.get("instance")
        current[key] = cur
        before = baseline.get(key)
        d = {k: cur[k] - (before or {}).get(k, 0.0) for k in cur}
        if d["calls"] < 0 or d["total_ps"] < 0:  # the address was reused by a new statement
            d = cur
        total = sums.setdefault((row.get("schema_name"), text), dict.fromkeys(_DIGEST_COUNTERS, 0.0))
        for k, v in d.items():
            total[k] += v
    baseline.clear()
    baseline.update(current)
    if not seconds:
        return []
    out = []
    for (schema, text), d in sums.items():
        if d["calls"] <= 0:
            continue
        out.append({
            "schema": schema,
            "calls_per_s": round(d["calls"] / seconds, 3),
            "total_ms_per_s": round(d["total_ps"] / 1e9 / seconds, 3),
            "avg_ms": round(d["total_ps"] / 1e9 / d["calls"], 4),
            "rows_examined_per_s": round(d["rows_examined"] / seconds, 3),
            "rows_sent_per_s": round(d["rows_sent"] / seconds, 3),
            "rows_affected_per_s": round(d["rows_affected"] / seconds, 3),
            "no_index_used_per_s": round(d["no_index_used"] / seconds, 3),
            "prepared": True,
            "query": text,
        })
    out.sort(key=lambda r: r["total_ms_per_s"], reverse=True)
    return out[:top]


def sampled_statements(processlist: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Prepared statements running now, from one processlist sample: MariaDB
    leaves binary-protocol executions (COM_STMT_EXECUTE, as benchtop's engine
    and sysbench run them) out of the digest table, so their cost is
    estimated from how many sessions run each one (Little's law: sessions
    running it = its executions/s x its latency, i.e. the time it takes per
    second).  Rows say `sampled`; their calls and averages are unknown.

    >>> rows = [{"command": "Execute", "db": "sbtest", "query": "SELECT c FROM sbtest1 WHERE id=?"},
    ...         {"command": "Execute", "db": "sbtest", "query": "SELECT c FROM sbtest1 WHERE id=?"},
    ...         {"command": "Query", "db": "sbtest", "query": "SELECT SLEEP(5)"}]
    >>> sampled_statements(rows)
    [{'schema': 'sbtest', 'sessions_running': 2, 'total_ms_per_s': 2000.0, 'sampled': True, 'query': 'SELECT c FROM sbtest1 WHERE id=?'}]
    """
    counts: dict[tuple[Any, str], int] = {}
    for row in processlist:
        if row.get("command") == "Execute" and row.get("query"):
            key = (row.get("db"), str(row["query"]))
            counts[key] = counts.get(key, 0) + 1
    out = [
        {"schema": db, "sessions_running": n, "total_ms_per_s": 1000.0 * n, "sampled": True, "query": query}
        for (db, query), n in counts.items()
    ]
    out.sort(key=lambda r: -r["total_ms_per_s"])
    return out


# ------------------------------------------------------------------ the source


class MySQLSource(Source):
    kind = "mysql"

    def __init__(self, name: str, target: Target, timeout_s: float = 5.0, top_waits: int = 10, *,
                 per_process: bool = True) -> None:
        super().__init__(name, target, timeout_s, per_process=per_process)
        self.top_waits = top_waits
        self.version: ServerVersion | None = None
        self._conn: pymysql.connections.Connection | None = None
        self._counters = CounterTracker()
        self._waits_prev: dict[str, tuple[int, int]] | None = None
        self._binlog_prev: BinlogReading | None = None
        self._digests: dict[tuple[Any, Any], dict[str, float]] = {}
        self._digest_since: Any = None  # server time of the previous digest read
        self._digest_t: float | None = None
        self._prepared_prev: tuple[dict[str, float] | None, float] | None = None
        self._prepared: dict[Any, dict[str, float]] = {}  # prepared statement instance -> its totals
        self._prepared_t: float | None = None
        self._polls = 0
        self.own_statements = 0  # statements this source sent (Questions counts them)
        self._deadlocks_seen: float | None = None  # Innodb_deadlocks when the deadlock was last read
        self._deadlock: Any = None  # the latest deadlock panel (read again only when the count moves)
        self._mdl_instrumented: bool | None = None

    # -- connection

    def connect(self) -> None:
        t = self.target
        try:
            self._conn = mysql_client.connect(**pymysql_kwargs(t, timeout_s=self.timeout_s, program_name="benchtop-monitor"))
            with self._conn.cursor() as cur:
                cur.execute(sql.tagged("SELECT @@version, @@version_comment"))
                version, comment = cur.fetchone()
            self.version = parse_version(version, comment)
            self._session_setup()
        except (pymysql.MySQLError, OSError) as exc:
            self.close()
            raise SourceError(f"{t.describe()}: {one_line(exc)}") from None
        self._counters.reset()
        self._waits_prev = None
        self._binlog_prev = None
        self._reset_digests()
        self._deadlock, self._deadlocks_seen, self._mdl_instrumented = None, None, None

    def _reset_digests(self) -> None:
        self._prepared_prev = None
        self._prepared = {}
        self._prepared_t = None
        self._digests = {}
        self._digest_since = None
        self._digest_t = None

    def _session_setup(self) -> None:
        assert self._conn is not None and self.version is not None
        if self.version.flavour == "mariadb":
            timeout = f"SET SESSION max_statement_time = {self.timeout_s:.3f}"
        else:
            timeout = f"SET SESSION max_execution_time = {int(self.timeout_s * 1000)}"
        # A metadata or row lock a user holds (or an ALTER awaits) fails the
        # statement at once instead of queueing the monitor behind it, and
        # every later session behind the monitor.
        lock_wait = _lock_wait_s(self.version)
        for stmt in (sql.tagged(timeout), sql.tagged(f"SET SESSION lock_wait_timeout = {lock_wait}"),
                     sql.tagged(f"SET SESSION innodb_lock_wait_timeout = {lock_wait}"),
                     sql.tagged("SET SESSION TRANSACTION READ ONLY")):
            try:
                with self._conn.cursor() as cur:
                    cur.execute(stmt)
            except pymysql.MySQLError as exc:
                if _errno(exc) in _CONNECTION_LOST or isinstance(exc, pymysql.err.InterfaceError):
                    raise
                # Older servers lack one of these; the client-side read_timeout still bounds us.

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except (pymysql.MySQLError, OSError):
                pass

    def interrupt(self) -> None:
        conn = self._conn
        shut_down_socket(getattr(conn, "_sock", None) if conn is not None else None)

    # -- statements

    def _rows(self, stmt: str, args: Any = None, cursor: Any = None) -> list[tuple[Any, ...]]:
        if self._conn is None:
            raise SourceError("not connected")
        try:
            with self._conn.cursor(cursor) as cur:
                self.own_statements += 1
                cur.execute(stmt, args)
                return list(cur.fetchall())
        except pymysql.err.InterfaceError as exc:
            # PyMySQL raises InterfaceError(0, "") once its own socket is closed
            detail = one_line(exc) if exc.args and exc.args[-1] else "closed"
            raise SourceError(f"connection lost: {detail}") from None
        except pymysql.MySQLError as exc:
            code = _errno(exc)
            if code in _CONNECTION_LOST:
                raise SourceError(f"connection lost: {one_line(exc)}") from None
            if code in _LOCK_WAIT_TIMEOUT:
                raise PanelFailed(Missing("skipped: a session holds a lock this panel reads under",
                                          f"not waited for: {one_line(exc)}")) from None
            if code in _STATEMENT_TIMEOUT:
                raise PanelFailed(Missing("query timed out", f"took longer than {self.timeout_s:g}s")) from None
            if code in _DENIED:
                raise PanelFailed(Missing("not permitted", one_line(exc))) from None
            raise PanelFailed(Missing("query failed", one_line(exc))) from None
        except OSError as exc:
            raise SourceError(f"connection lost: {one_line(exc)}") from None

    def _pairs(self, stmt: str) -> dict[str, Any]:
        return {str(r[0]): r[1] for r in self._rows(stmt)}

    def _dicts(self, query: str, args: Any = None) -> list[dict[str, Any]]:
        assert self.version is not None
        # a DictCursor makes each row a dict
        return cast("list[dict[str, Any]]",
                    self._rows(sql.get(self.version.backend, query, self.version.number), args, pymysql.cursors.DictCursor))

    # -- poll

    def poll(self) -> SourceSnapshot:
        if self._conn is None or self.version is None:
            raise SourceError("not connected")
        t0 = time.perf_counter()
        self._polls += 1
        ver = self.version
        panels: dict[str, Any] = {}
        try:
            status = self._pairs(sql.tagged("SHOW GLOBAL STATUS"))
        except PanelFailed as exc:
            raise SourceError(f"SHOW GLOBAL STATUS failed: {exc.missing.hint or exc.missing.what}") from None
        now = time.monotonic()
        try:
            variables = self._pairs(sql.get(ver.backend, "settings", ver.number))
            settings = settings_panel(variables)
            panels[SETTINGS] = settings
        except PanelFailed as exc:
            settings = {}
            panels[SETTINGS] = exc.missing

        panels[THREADS] = threads_panel(status)
        engine = self._engine_status_if_needed(status)
        facts = lsn_facts(status, settings, engine)
        counters = {k: float(v) for k, v in ((k, to_number(v)) for k, v in status.items()) if v is not None}
        counters["monitor_questions"] = float(self.own_statements)  # SHOW GLOBAL STATUS itself included
        counters.update({f"innodb:{k}": v for k, v in innodb_counters(status, facts.get("lsn")).items()})
        iv = self._counters.advance(counters, now)
        panels[STATUS_RATES] = status_rates_panel(iv)
        innodb_iv = Interval(
            None if iv.prev is None else _strip(iv.prev, "innodb:"), _strip(iv.cur, "innodb:"), iv.seconds
        )
        if facts.get("lsn") is None:
            panels[INNODB] = Missing(
                "InnoDB LSN not available",
                "GRANT PROCESS ON *.* TO the monitor user (for SHOW ENGINE INNODB STATUS)",
            )
        else:
            panels[INNODB] = innodb_panel(status, facts, innodb_iv, self._history_length(status, engine))
        panels[WAITS] = self._waits(settings, iv.seconds)
        panels[BINLOG] = self._binlog(settings, iv.seconds)
        panels[ROWS] = rows_panel(status)
        panels[DATABASE] = self._database_size()
        panels[PROCESSLIST] = self._processlist()
        panels[TOP_STATEMENTS] = self._top_statements(settings)
        if ver.flavour == "mariadb" and isinstance(panels[TOP_STATEMENTS], list):
            panels[TOP_STATEMENTS] = self._with_prepared(panels[TOP_STATEMENTS], panels[PROCESSLIST])
        panels[LOCKS] = self._locks()
        panels[TRANSACTIONS] = self._transactions()
        panels[DEADLOCK] = self._latest_deadlock(status)
        panels[METADATA_LOCKS] = self._metadata_locks(settings)
        panels[REPLICA] = self._replica()
        return self.snapshot(panels, t0, iv.seconds)

    def _replica(self) -> Any:
        """This server's replication channels (a primary has none)."""
        assert self.version is not None
        try:
            rows = self._dicts_of(sql.tagged(replica_status_statement(self.version.flavour, self.version.number)))
        except PanelFailed as exc:
            if exc.missing.what == "not permitted":
                grant = "SLAVE MONITOR" if self.version.flavour == "mariadb" else "REPLICATION CLIENT"
                return Missing("replica status not readable", f"GRANT {grant} ON *.* TO the monitor user")
            return exc.missing
        if not rows:
            return Missing("not a replica: no replication channel is configured on this server")
        return replica_rows(rows)

    def _dicts_of(self, stmt: str) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", self._rows(stmt, None, pymysql.cursors.DictCursor))

    def _transactions(self) -> Any:
        """Open InnoDB transactions; without performance_schema, without
        each session's last statement."""
        missing: Missing | None = None
        for query in ("transactions", "transactions_basic"):
            try:
                return transaction_rows(self._dicts(query))
            except PanelFailed as exc:
                missing = exc.missing
        assert missing is not None
        if missing.what == "not permitted":
            return Missing("transactions not readable", "GRANT PROCESS ON *.* TO the monitor user")
        return missing

    def _latest_deadlock(self, status: Mapping[str, Any]) -> Any:
        """The latest deadlock from SHOW ENGINE INNODB STATUS, read again only
        when Innodb_deadlocks moves (MariaDB) or every tenth poll (MySQL
        keeps no such counter): the status text is long on a busy server."""
        count = to_number(status.get("Innodb_deadlocks"))
        fresh = self._deadlock is None or (count != self._deadlocks_seen if count is not None
                                           else self._polls % 10 == 1)
        if not fresh:
            return self._deadlock
        try:
            rows = self._rows(sql.tagged("SHOW ENGINE INNODB STATUS"))
        except PanelFailed as exc:
            self._deadlock = (Missing("InnoDB status not readable", "GRANT PROCESS ON *.* TO the monitor user")
                              if exc.missing.what == "not permitted" else exc.missing)
            return self._deadlock
        found = latest_deadlock(str(rows[0][2])) if rows else None
        self._deadlock = found.as_panel() if found is not None else {}
        self._deadlocks_seen = count
        return self._deadlock

    def _metadata_locks(self, settings: Mapping[str, Any]) -> Any:
        if settings and not _on(settings.get("performance_schema", "ON")):
            return Missing("performance_schema is OFF", "add performance_schema=ON under [mysqld] and restart")
        if not self._mdl_instrumented:  # read again while off: a DBA may enable it while the monitor runs
            try:
                rows = self._rows(sql.tagged("SELECT ENABLED FROM performance_schema.setup_instruments "
                                             "WHERE NAME = 'wait/lock/metadata/sql/mdl'"))
                self._mdl_instrumented = bool(rows) and str(rows[0][0]).upper() == "YES"
            except PanelFailed as exc:
                return exc.missing
        if not self._mdl_instrumented:
            return Missing("metadata lock instrument off",
                           "performance-schema-instrument='wait/lock/metadata/sql/mdl=ON' under [mysqld] "
                           "(or UPDATE performance_schema.setup_instruments SET ENABLED='YES' "
                           "WHERE NAME='wait/lock/metadata/sql/mdl')")
        try:
            return metadata_lock_rows(self._dicts("metadata_locks"))
        except PanelFailed as exc:
            return exc.missing

    def _database_size(self) -> Any:
        """The current database's size: its tablespace files, else table statistics."""
        assert self.version is not None
        if not self.target.database:
            return Missing("no database", "name the benchmark's database in the DSN")
        missing = Missing("no tables", f"database {self.target.database} has no InnoDB tables")
        for query in ("database_size", "tables_size"):
            try:
                rows = self._rows(sql.get(self.version.backend, query, self.version.number))
            except PanelFailed as exc:
                missing = exc.missing
                continue
            if rows and rows[0][1]:
                return {"name": self.target.database, "size_bytes": int(rows[0][0])}
        return missing

    def settings_snapshot(self) -> dict[str, str]:
        """Every global variable that differs from the compiled-in default; on
        servers without that view, all of SHOW GLOBAL VARIABLES."""
        assert self.version is not None
        if sql.available(self.version.backend, "settings_all", self.version.number):
            try:
                return settings_snapshot(self._rows(sql.get(self.version.backend, "settings_all", self.version.number)))
            except PanelFailed:
                pass
        return settings_snapshot(self._rows(sql.tagged("SHOW GLOBAL VARIABLES")))

    def _processlist(self) -> Any:
        try:
            return [processlist_row(r) for r in self._dicts("processlist")]
        except PanelFailed as exc:
            return exc.missing

    def _with_prepared(self, top: list[dict[str, Any]], processlist: Any) -> list[dict[str, Any]]:
        """MariaDB's top statements plus what its digest table leaves out:
        binary-protocol executions, per prepared statement from
        performance_schema.prepared_statements_instances; where that table
        cannot be read, as one total row and, for those caught running,
        estimated per statement from the processlist."""
        now = time.monotonic()
        try:
            instances = self._dicts("prepared_statements")
        except PanelFailed:
            instances = None
        if instances is not None:
            seconds = None if self._prepared_t is None else now - self._prepared_t
            self._prepared_t = now
            rows = prepared_deltas(self._prepared, instances, seconds)
            if rows or instances:
                return sorted(top + rows, key=lambda r: -r["total_ms_per_s"])
        try:
            totals = self._dicts("prepared_total")
        except PanelFailed:
            totals = []
        cur = {k: float(to_number(v) or 0) for k, v in totals[0].items()} if totals else None
        prev, self._prepared_prev = self._prepared_prev, (cur, now) if cur is not None else None
        extra: list[dict[str, Any]] = []
        if cur is not None and prev is not None and prev[0] is not None:
            seconds = now - prev[1]
            d = {k: cur[k] - prev[0].get(k, 0.0) for k in cur}
            if d["calls"] > 0 and seconds > 0:
                extra.append(
                    {
                        "schema": None,
                        "calls_per_s": round(d["calls"] / seconds, 3),
                        "total_ms_per_s": round(d["total_ps"] / 1e9 / seconds, 3),
                        "avg_ms": round(d["total_ps"] / 1e9 / d["calls"], 4),
                        "rows_examined_per_s": round(d["rows_examined"] / seconds, 3),
                        "rows_sent_per_s": round(d["rows_sent"] / seconds, 3),
                        "aggregate": True,
                        "query": "(all prepared statements run through the binary protocol: MariaDB keeps no "
                        "digest for them; performance_schema counts each one with the events_statements_current "
                        "consumer on: --instrumentation statements_only)",
                    }
                )
                if isinstance(processlist, list):
                    extra += sampled_statements(processlist)
        return sorted(top + extra, key=lambda r: -r["total_ms_per_s"])

    def _locks(self) -> Any:
        try:
            return [lock_row(r) for r in self._dicts("locks")]
        except PanelFailed as exc:
            if exc.missing.what == "not permitted":
                return Missing("lock waits not readable", "GRANT PROCESS ON *.* TO the monitor user")
            return exc.missing

    def _top_statements(self, settings: Mapping[str, Any]) -> Any:
        if settings and not _on(settings.get("performance_schema", "ON")):
            self._reset_digests()
            return Missing(
                "performance_schema is OFF",
                "add performance_schema=ON under [mysqld] and restart the server (statement digests need it)",
            )
        # After the first full read only digests run since the previous read
        # are fetched (a second of slack for LAST_SEEN's resolution).
        since = "1970-01-01 00:00:00" if self._digest_since is None else self._digest_since
        try:
            rows = self._dicts("top_statements", {"since": since})
        except PanelFailed as exc:
            self._reset_digests()
            if exc.missing.what == "not permitted":
                user = self.target.user or "USER"
                return Missing(
                    "no SELECT on performance_schema", f"GRANT SELECT ON performance_schema.* TO '{user}'@'%'"
                )
            return exc.missing
        now = time.monotonic()
        seconds = None if self._digest_t is None else now - self._digest_t
        out = digest_deltas(self._digests, rows, seconds)
        server_now = next((r.get("server_now") for r in rows), None)
        if isinstance(server_now, datetime.datetime):
            self._digest_since = server_now - datetime.timedelta(seconds=1)
        self._digest_t = now
        return out

    def _engine_status_if_needed(self, status: Mapping[str, Any]) -> dict[str, int]:
        # Only servers without LSN status variables (MySQL < 8.0.30) pay for this.
        if "Innodb_lsn_current" in status or "Innodb_redo_log_current_lsn" in status:
            return {}
        try:
            rows = self._rows(sql.tagged("SHOW ENGINE INNODB STATUS"))
        except PanelFailed:
            return {}
        return parse_engine_status(str(rows[0][2])) if rows else {}

    def _history_length(self, status: Mapping[str, Any], engine: Mapping[str, int]) -> int | None:
        value = to_number(status.get("Innodb_history_list_length"))
        if value is not None:
            return int(value)
        if "history_list_length" in engine:
            return engine["history_list_length"]
        assert self.version is not None
        if not sql.available(self.version.backend, "history_list", self.version.number):
            return None
        try:
            rows = self._rows(sql.get(self.version.backend, "history_list", self.version.number))
        except PanelFailed:
            return None
        return int(rows[0][0]) if rows else None

    def _waits(self, settings: Mapping[str, Any], seconds: float | None) -> Any:
        if settings and not _on(settings.get("performance_schema", "ON")):
            self._waits_prev = None
            return Missing(
                "performance_schema is OFF",
                "add performance_schema=ON under [mysqld] and restart the server",
            )
        assert self.version is not None
        try:
            rows = self._rows(sql.get(self.version.backend, "waits", self.version.number))
        except PanelFailed as exc:
            self._waits_prev = None
            if exc.missing.what == "not permitted":
                user = self.target.user or "USER"
                return Missing(
                    "no SELECT on performance_schema", f"GRANT SELECT ON performance_schema.* TO '{user}'@'%'"
                )
            return exc.missing
        cur = {str(event): (int(count), int(total)) for event, count, total in rows}
        out = waits_panel(self._waits_prev, cur, seconds, self.top_waits)
        self._waits_prev = cur
        return out

    def _binlog(self, settings: Mapping[str, Any], seconds: float | None) -> Any:
        if not settings or not _on(settings.get("log_bin")):
            self._binlog_prev = None
            return Missing("binary log off", "log_bin is OFF: no binlog size, rate or rotations to show")
        try:
            rows = self._rows(sql.tagged("SHOW BINARY LOGS"))
        except PanelFailed as exc:
            self._binlog_prev = None
            if exc.missing.what == "not permitted":
                grant = "BINLOG MONITOR" if self.version and self.version.flavour == "mariadb" else "REPLICATION CLIENT"
                return Missing("SHOW BINARY LOGS not permitted", f"GRANT {grant} ON *.* TO the monitor user")
            return exc.missing
        reading = BinlogReading({str(r[0]): int(r[1]) for r in rows})
        out = binlog_panel(self._binlog_prev, reading, seconds)
        self._binlog_prev = reading
        return out


def _lock_wait_s(version: ServerVersion) -> int:
    """The monitor session's lock_wait_timeout and innodb_lock_wait_timeout:
    no wait at all where the server allows 0 (MariaDB 10.3+), else MySQL's
    least, 1 s.

    >>> _lock_wait_s(parse_version("10.11.6-MariaDB")), _lock_wait_s(parse_version("8.0.36"))
    (0, 1)
    """
    return 0 if version.flavour == "mariadb" and version.number >= 100300 else 1


def _strip(values: Mapping[str, float], prefix: str) -> dict[str, float]:
    return {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}


def _errno(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None
