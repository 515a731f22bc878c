"""MySQL / MariaDB: what runs now, what costs most, waits, InnoDB, lock waits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.views.spec import (
    Col,
    TableSpec,
    facts,
    long_running,
    mapping_of,
    missing_line,
    panel_of,
)
from benchtop.panels.units import bar, count, dur, gauge, ident, mib, mib_s, ms_per_s, msec, pct, per_s, ratio_pct, text, usec
from benchtop.panels.views.mysql_trx import IDLE_IN_TRX_WARN_S, idle_in_trx, open_transactions
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import (
    BINLOG,
    INNODB,
    LOCKS,
    PROCESSLIST,
    SETTINGS,
    STATUS_RATES,
    THREADS,
    TOP_STATEMENTS,
    WAITS,
    InnoDBPanel,
)


def _mysql_idle(row: Mapping[str, Any]) -> bool:
    return row.get("command") in ("Sleep", "Daemon", "Binlog Dump", "Binlog Dump GTID") or (
        row.get("command") == "Query" and not row.get("query")
    )


def _flush_marks() -> tuple[float, float]:
    # InnoDB starts asynchronous (adaptive) flushing at about 7/8 of the
    # redo capacity and blocks writers to flush synchronously at about 15/16.
    return (87.5, 93.75)


def mysql_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    threads = mapping_of(panel_of(snap, THREADS))
    rates = mapping_of(panel_of(snap, STATUS_RATES))
    settings = mapping_of(panel_of(snap, SETTINGS))
    inn = InnoDBPanel.of(snap.panels)
    lines = [
        facts(
            [
                ("server", str(settings.get("version") or "?")),
                ("running", count(threads.get("running"))),
                ("connected", count(threads.get("connected"))),
                ("queries", per_s(rates.get("questions_per_s"))),
                ("commits", per_s(rates.get("commits_per_s"))),
                ("selects", per_s(rates.get("com_select_per_s"))),
                ("slow", per_s(rates.get("slow_queries_per_s"))),
            ], width)
    ]
    missing = missing_line("InnoDB", panel_of(snap, INNODB))
    if missing is not None:
        lines.append(missing)
    elif inn is not None:
        line = Text("checkpoint age ", "dim")
        line.append(pct(inn.checkpoint_age_pct), "bold")
        line.append(f" of {mib(inn.redo_capacity_bytes)} ", "dim")
        line.append_text(gauge(inn.checkpoint_age_pct, max(min(width // 6, 24), 8), _flush_marks()))
        lines.append(line)
        lines.append(
            facts(
                [
                    ("dirty", pct(inn.dirty_pages_pct)),
                    ("redo", mib_s(inn.redo_bytes_per_s)),
                    # the interval's figure, else (first poll) the one since start
                    ("hit", ratio_pct(inn.buffer_pool_hit_ratio if inn.buffer_pool_hit_ratio is not None
                                      else inn.buffer_pool_hit_ratio_total)),
                    ("history", count(inn.history_list_length)),
                    ("lock waits", per_s(inn.row_lock_waits_per_s)),
                ], width)
        )
    waits = panel_of(snap, WAITS)
    if isinstance(waits, list) and waits:
        top = waits[0]
        lines.append(facts([("top wait", f"{top.get('event')} {ms_per_s(top.get('ms_per_s'))}")], width))
    locks = panel_of(snap, LOCKS)
    if isinstance(locks, list) and locks:
        lines.append(Text(f"⚠ {len(locks)} lock wait(s): see the locks view", "bold red"))
    return lines


def innodb_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    missing = missing_line("InnoDB", panel_of(snap, INNODB))
    if missing is not None:
        return [missing]
    inn = InnoDBPanel.of(snap.panels) or InnoDBPanel()
    settings = mapping_of(panel_of(snap, SETTINGS))
    bar_w = min(max(width - 30, 10), 60)
    age = Text("checkpoint age   ", "bold")
    age.append_text(gauge(inn.checkpoint_age_pct, bar_w, _flush_marks()))
    age.append(f" {pct(inn.checkpoint_age_pct)}")
    lines = [
        age,
        Text(
            f"                 {mib(inn.checkpoint_age_bytes)} of {mib(inn.redo_capacity_bytes)} redo; "
            "│ marks: async flushing (~7/8), sync flushing (~15/16)",
            "dim",
        ),
    ]
    rows = [
        ("dirty pages", pct(inn.dirty_pages_pct)),
        ("pages flushed", per_s(inn.pages_flushed_per_s)),
        ("redo written", mib_s(inn.redo_bytes_per_s)),
        ("history list length", count(inn.history_list_length)),
        ("buffer pool hit (interval)", ratio_pct(inn.buffer_pool_hit_ratio)),
        ("buffer pool hit (since start)", ratio_pct(inn.buffer_pool_hit_ratio_total)),
        ("row lock waits", per_s(inn.row_lock_waits_per_s)),
        ("buffer pool size", mib(settings.get("innodb_buffer_pool_size"))),
        ("flush log at commit", text(settings.get("innodb_flush_log_at_trx_commit"))),
    ]
    for label, value in rows:
        line = Text(f"{label:<31}", "dim")
        line.append(value, "bold")
        lines.append(line)
    binlog = panel_of(snap, BINLOG)
    if isinstance(binlog, Mapping):
        lines.append(
            facts(
                [
                    ("binlog", str(binlog.get("current_file"))),
                    ("written", mib_s(binlog.get("bytes_per_s"))),
                    ("total", mib(binlog.get("total_bytes"))),
                ], width)
        )
    if settings.get("crash_safe") is False:
        lines.append(Text("not crash-safe: " + ", ".join(settings.get("unsafe_because") or []), "yellow"))
    return lines


def _waits_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    top = max((r.get("ms_per_s") or 0 for r in rows), default=0)
    for r in rows:
        r["bar"] = bar(r.get("ms_per_s") or 0, top, 20)
    return rows


def idle_in_trx_state(age_s: Any, rows_locked: Any) -> str:
    """A sleeping session's state inside an open transaction: its age and the
    rows it holds, short enough to leave the Query column room at 80 columns
    ('idle in trx (open 5.0s, 1 rows locked)' left it 17 characters).
    INNODB_TRX gives a transaction's start to the second: under one is <1s.

    >>> idle_in_trx_state(5.04, 1), idle_in_trx_state(0.0, 0), idle_in_trx_state(75, 1200)
    ('idle in trx (5.0s, 1 row locked)', 'idle in trx (<1s, 0 rows locked)', 'idle in trx (1m15s, 1.20k rows locked)')
    """
    age = dur(age_s) if not isinstance(age_s, (int, float)) or age_s >= 1 else "<1s"
    rows = "row" if rows_locked == 1 else "rows"
    return f"idle in trx ({age}, {count(rows_locked)} {rows} locked)"


def _processlist_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Sessions; one sleeping inside an open transaction says so and is
    never hidden as idle (it holds its locks: PostgreSQL's idle in trx)."""
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    trx = open_transactions(panels)
    for r in rows:
        t = trx.get(r.get("id"))
        # the transactions panel is read a moment apart from the processlist:
        # a session the processlist shows running is running, whatever it said
        if idle_in_trx(t) and t is not None and r.get("command") == "Sleep":
            r["in_trx"] = True
            r["state"] = idle_in_trx_state(t.age_s, t.rows_locked)
    return rows


def _processlist_alert(row: Mapping[str, Any]) -> str | None:
    if row.get("in_trx") and (row.get("time_s") or 0) >= IDLE_IN_TRX_WARN_S:
        return "yellow"
    return long_running("time_s")(row)


MYSQL_PROCESSLIST = TableSpec(
    PROCESSLIST,
    "sessions now (longest first; i shows idle; idle in trx always shown)",
    (
        Col("Id", "id", ident, True),
        Col("User", "user", min_screen=100),
        Col("Host", "host", min_screen=140),
        Col("DB", "db", min_screen=100),
        Col("Command", "command", min_screen=100),
        Col("Cmd", "command", max_screen=99),  # Query, Sleep, Binlog Dump: what the session is, at any width
        Col("Time", "time_s", dur, True),
        Col("State", "state"),
        Col("Query", "query"),
    ),
    "time_s",
    idle=lambda r: _mysql_idle(r) and not r.get("in_trx"),
    alert=_processlist_alert,
    rows=_processlist_rows,
)
def _statement_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        if r.get("sampled"):
            r["how"] = f"~ {r.get('sessions_running')} running"  # estimated from the processlist
            r["est"] = "~est"  # the same mark where the How column has no room
        elif r.get("aggregate"):
            r["how"] = "all prepared"
    return rows


MYSQL_STATEMENTS = TableSpec(
    TOP_STATEMENTS,
    "top statements in the interval (by total time, measured first; ~: estimated from the processlist)",
    (
        Col("Time/s", "total_ms_per_s", ms_per_s, True),
        Col("Est", "est", max_screen=99),
        Col("How", "how", min_screen=100),
        Col("Calls/s", "calls_per_s", per_s, True),
        Col("Avg", "avg_ms", msec, True),
        Col("p95", "p95_ms", msec, True, min_screen=140),
        Col("p99", "p99_ms", msec, True, min_screen=140),
        Col("Rows exam/s", "rows_examined_per_s", per_s, True, min_screen=100),
        Col("Rows sent/s", "rows_sent_per_s", per_s, True, min_screen=140),
        Col("Schema", "schema", min_screen=120),
        Col("Statement", "query"),
    ),
    "total_ms_per_s",
    rows=_statement_rows,
    later=lambda r: bool(r.get("sampled")),
)
MYSQL_WAITS = TableSpec(
    WAITS,
    "waits in the interval (performance_schema), ranked",
    (
        Col("Wait time/s", "ms_per_s", ms_per_s, True),
        Col("", "bar", width=20),
        Col("Waits/s", "count_per_s", per_s, True),
        Col("Avg", "avg_us", usec, True),
        Col("Event", "event"),
    ),
    "ms_per_s",
    rows=_waits_rows,
)
MYSQL_LOCKS = TableSpec(
    LOCKS,
    "lock waits: who blocks whom",
    (
        Col("Waiting", "waiting_id", ident, True),
        Col("For", "wait_s", dur, True),
        Col("Blocker", "blocking_id", ident, True),
        Col("Blocker trx age", "blocking_trx_age_s", dur, True),
        Col("Blocker does", "blocking_command"),
        Col("Table", "lock_table"),
        Col("Mode", "lock_mode"),
        Col("Blocker's query", "blocking_query"),
        Col("Waiting query", "waiting_query"),
    ),
    "wait_s",
    alert=lambda r: "red",
)
