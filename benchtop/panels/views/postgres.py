"""PostgreSQL: activity with blocked-by, pg_stat_statements, checkpointer/bgwriter/WAL like pgcenter, tables, vacuum."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from benchtop.panels.views.spec import (
    Col,
    TableSpec,
    dict_rows,
    facts,
    long_running,
    mapping_of,
    missing_line,
    panel_of,
)
from benchtop.panels.units import count, dur, ident, mib, mib_s, ms_per_s, msec, pct, per_s, ratio_pct, text
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import (
    ACTIVITY,
    AUTOVACUUM_WORKERS,
    BACKEND_CPU_PCT,
    BACKEND_READ_BPS,
    BACKEND_USAGE,
    BACKEND_WRITE_BPS,
    CACHE_HIT_RATIO,
    CHECKPOINTS,
    DATABASE,
    INDEXES,
    SESSIONS,
    SETTINGS,
    SIZES_SKIPPED,
    TABLES,
    TOP_STATEMENTS,
    VACUUM,
    WAIT_EVENTS,
    WAL,
    WAL_BYTES_PER_S,
)


def _pg_state(state: Any) -> str:
    """
    >>> _pg_state("idle in transaction (aborted)")
    'idle in trx (aborted)'
    """
    return text(state).replace("idle in transaction", "idle in trx")


def _pg_idle(row: Mapping[str, Any]) -> bool:
    return row.get("state") == "idle"


def _pg_alert(row: Mapping[str, Any]) -> str | None:
    if row.get("blocked_by"):
        return "red"
    if row.get("state") == "idle in transaction" and (row.get("state_age_s") or 0) >= 10:
        return "magenta"
    return long_running("query_age_s")(row) if row.get("state") == "active" else None


def _pg_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        wt, we = r.get("wait_event_type"), r.get("wait_event")
        r["wait"] = f"{wt}:{we}" if wt and we else ""
        # under 100 columns one column says what a session is doing: an active
        # session's wait when it waits (Lock:relation, IO:WALSync), else its state
        r["doing"] = r["wait"] if r.get("state") == "active" and r["wait"] else _pg_state(r.get("state"))
    return rows


def postgres_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    settings = mapping_of(panel_of(snap, SETTINGS))
    sessions = mapping_of(panel_of(snap, SESSIONS))
    db = mapping_of(panel_of(snap, DATABASE))
    hit = mapping_of(panel_of(snap, CACHE_HIT_RATIO))
    ck = mapping_of(panel_of(snap, CHECKPOINTS))
    lines = [
        facts(
            [
                ("server", str(settings.get("server_version") or "?")),
                ("active", count(sessions.get("active", 0))),
                ("idle in trx", count(sessions.get("idle in transaction", 0))),
                ("sessions", count(sessions.get("total"))),
                ("commits", per_s(db.get("commits_per_s"))),
                ("rollbacks", per_s(db.get("rollbacks_per_s"))),
            ], width),
        facts(
            [
                ("WAL", mib_s(panel_of(snap, WAL_BYTES_PER_S))),
                ("cache hit", ratio_pct(hit.get("interval"))),
                ("db size", mib(db.get("size_bytes"))),
                ("growth", mib_s(db.get("growth_bytes_per_s"))),
                ("checkpoints timed/req", f"{count(ck.get('timed'))}/{count(ck.get('requested'))}"),
                ("autovacuum", count(panel_of(snap, AUTOVACUUM_WORKERS))),
            ], width),
    ]
    waits = panel_of(snap, WAIT_EVENTS)
    if isinstance(waits, list) and waits:
        top = ", ".join(f"{w['type']}:{w['event']} ×{w['count']}" for w in waits[:3])
        lines.append(facts([("waiting on", top)], width))
    blocked = [r for r in dict_rows(panel_of(snap, ACTIVITY)) if r.get("blocked_by")]
    if blocked:
        lines.append(Text(f"⚠ {len(blocked)} session(s) blocked by a lock (red rows)", "bold red"))
    # a user without pg_monitor: the counts above are its own sessions only; say which grant shows them all
    for label, panel in (("sessions", "sessions"), ("sessions", BACKEND_USAGE), ("database", "database")):
        missing = missing_line(label, panel_of(snap, panel))
        if missing is not None:
            lines.append(missing)
    return lines


def checkpointer_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    """Checkpointer, background writer and WAL laid out like pgcenter's screens."""
    out: list[Text] = []
    ck, wal = panel_of(snap, CHECKPOINTS), panel_of(snap, WAL)
    for label, value in (("checkpointer", ck), ("WAL", wal)):
        missing = missing_line(label, value)
        if missing is not None:
            out.append(missing)
    ck, wal = mapping_of(ck), mapping_of(wal)
    settings = mapping_of(panel_of(snap, SETTINGS))

    def section(title: str, rows: Sequence[tuple[str, str]]) -> None:
        out.append(Text(title, "bold underline"))
        for label, value in rows:
            line = Text(f"  {label:<33} ", "dim")  # a space before the value even after a long label
            line.append(value, "bold")
            out.append(line)

    section(
        "checkpointer",
        [
            ("checkpoints timed / requested", f"{count(ck.get('timed'))} / {count(ck.get('requested'))}"),
            (f"per hour, stats reset {dur(ck.get('per_h_over_s'))} ago",
             f"{count(ck.get('timed_per_h'))} timed / {count(ck.get('requested_per_h'))} requested"),
            ("buffers written", per_s(ck.get("buffers_written_per_s"))),
            ("write time", ms_per_s(ck.get("write_time_ms_per_s"))),
            ("sync time", ms_per_s(ck.get("sync_time_ms_per_s"))),
            ("checkpoint_timeout / max_wal_size",
             f"{dur(settings.get('checkpoint_timeout'))} / {mib(settings.get('max_wal_size_bytes'))}"),
        ],
    )  # fmt: skip
    section(
        "background writer",
        [
            ("buffers cleaned", per_s(ck.get("buffers_clean_per_s"))),
            ("stopped at bgwriter_lru_maxpages", count(ck.get("maxwritten_clean"))),
            ("buffers allocated", per_s(ck.get("buffers_alloc_per_s"))),
            ("written by backends", per_s(ck.get("buffers_backend_per_s"))),
        ],
    )
    section(
        "WAL",
        [
            ("generated", mib_s(panel_of(snap, WAL_BYTES_PER_S))),
            ("records", per_s(wal.get("wal_records_per_s"))),
            ("full-page images", per_s(wal.get("wal_fpi_per_s"))),
            ("buffers full", per_s(wal.get("wal_buffers_full_per_s"))),
            ("writes / syncs", f"{per_s(wal.get('wal_write_per_s'))} / {per_s(wal.get('wal_sync_per_s'))}"),
            ("synchronous_commit / fsync", f"{text(settings.get('synchronous_commit'))} / {text(settings.get('fsync'))}"),
        ],
    )
    return out


def database_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    db = panel_of(snap, DATABASE)
    missing = missing_line("database", db)
    if missing is not None:
        return [missing]
    db = mapping_of(db)
    lines = [
        facts(
            [
                ("database", str(db.get("name"))),
                ("size", mib(db.get("size_bytes"))),
                ("growth", mib_s(db.get("growth_bytes_per_s"))),
                ("rows inserted", per_s(db.get("tup_inserted_per_s"))),
                ("updated", per_s(db.get("tup_updated_per_s"))),
                ("deleted", per_s(db.get("tup_deleted_per_s"))),
                ("temp", mib_s(db.get("temp_bytes_per_s"))),
                ("deadlocks", per_s(db.get("deadlocks_per_s"))),
            ], width)
    ]
    skipped = missing_line("sizes", panel_of(snap, SIZES_SKIPPED))
    if skipped is not None:
        lines.append(skipped)
    return lines


PG_ACTIVITY = TableSpec(
    ACTIVITY,
    "sessions now (active first; i shows idle; red = blocked)",
    (
        Col("PID", "pid", ident, True),
        Col("User", "user", min_screen=100),
        Col("DB", "db", min_screen=100),
        Col("State", "state", _pg_state, min_screen=100),
        Col("State/wait", "doing", max_screen=99),  # what it waits on, where Wait has no room
        Col("Wait", "wait", min_screen=100),
        Col("Blocked by", "blocked_by"),
        Col("Trx age", "xact_age_s", dur, True, min_screen=120),
        Col("Query age", "query_age_s", dur, True),
        # a server on this host: each backend's process, from /proc (pg_activity's columns)
        Col("CPU%", BACKEND_CPU_PCT, pct, True),
        Col("Read/s", BACKEND_READ_BPS, mib_s, True, min_screen=100),
        Col("Write/s", BACKEND_WRITE_BPS, mib_s, True, min_screen=100),
        Col("Query", "query"),
    ),
    "query_age_s",
    idle=_pg_idle,
    alert=_pg_alert,
    rows=_pg_rows,
)
PG_STATEMENTS = TableSpec(
    TOP_STATEMENTS,
    "top statements in the interval (pg_stat_statements, by total time)",
    (
        Col("Time/s", "total_ms_per_s", ms_per_s, True),
        Col("Calls/s", "calls_per_s", per_s, True),
        Col("Mean", "mean_ms", msec, True),
        Col("Rows/s", "rows_per_s", per_s, True, min_screen=100),
        Col("Hit/s", "shared_blks_hit_per_s", per_s, True, min_screen=140),
        Col("Read/s", "shared_blks_read_per_s", per_s, True, min_screen=120),
        Col("User", "user", min_screen=100),
        Col("Statement", "query"),
    ),
    "total_ms_per_s",
)
PG_TABLES = TableSpec(
    TABLES,
    "tables (top by blocks read)",
    (
        Col("Read/s", "blks_read_per_s", per_s, True),
        Col("Hit/s", "blks_hit_per_s", per_s, True, min_screen=100),
        Col("Hit", "hit_pct", pct, True),
        Col("Size", "size_bytes", mib, True),
        Col("Seq scans", "seq_scan", count, True, min_screen=100),
        Col("Idx scans", "idx_scan", count, True, min_screen=100),
        Col("Dead rows", "dead_rows", count, True),
        Col("Last vacuum", "last_vacuum", min_screen=140),
        Col("Table", "table_name"),
    ),
    "blks_read_per_s",
)
PG_INDEXES = TableSpec(
    INDEXES,
    "indexes (top by blocks read)",
    (
        Col("Read/s", "blks_read_per_s", per_s, True),
        Col("Hit/s", "blks_hit_per_s", per_s, True, min_screen=100),
        Col("Hit", "hit_pct", pct, True),
        Col("Size", "size_bytes", mib, True),
        Col("Scans", "scans", count, True),
        Col("Table", "table_name"),
        Col("Index", "index_name"),
    ),
    "blks_read_per_s",
)
PG_VACUUM = TableSpec(
    VACUUM,
    "vacuums running now",
    (
        Col("PID", "pid", ident, True),
        Col("Auto", "auto", lambda v: "yes" if v else "no"),
        Col("Running", "running_s", dur, True),
        Col("Scanned", "scanned_pct", pct, True),
        Col("Phase", "phase"),
        Col("Index passes", "index_vacuum_count", count, True),
        Col("Table", "table_name"),
    ),
    "running_s",
)
