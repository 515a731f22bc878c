"""PgBouncer: pools, per-database stats, clients and servers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.views.spec import Col, TableSpec, dict_rows, facts, mapping_of, missing_line, panel_of
from benchtop.panels.units import count, dur, mib_s, per_s, usec
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import CLIENT_STATES, POOLS, SERVER_STATES, STATS, VERSION


def _pool_alert(row: Mapping[str, Any]) -> str | None:
    waiting = row.get("cl_waiting") or 0
    return "bold red" if waiting or (row.get("maxwait") or 0) or (row.get("maxwait_us") or 0) else None


def _pool_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        r["maxwait_s"] = (r.get("maxwait") or 0) + (r.get("maxwait_us") or 0) / 1e6
    return rows


def pgbouncer_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    cl, sv = mapping_of(panel_of(snap, CLIENT_STATES)), mapping_of(panel_of(snap, SERVER_STATES))
    stats = dict_rows(panel_of(snap, STATS))
    xact = sum(s.get("xact_per_s") or 0 for s in stats)
    query = sum(s.get("query_per_s") or 0 for s in stats)
    waiting = cl.get("waiting") or 0
    lines = [
        facts(
            [
                ("version", str(panel_of(snap, VERSION) or "?")),
                ("clients active", count(cl.get("active"))),
                ("waiting", count(waiting)),
                ("servers active", count(sv.get("active"))),
                ("idle", count(sv.get("idle"))),
                ("used", count(sv.get("used"))),
            ], width),
        facts([("transactions", per_s(xact)), ("queries", per_s(query))], width),
    ]
    if waiting:
        lines.append(Text(f"⚠ {waiting} client(s) waiting for a server connection (red pools)", "bold red"))
    # a user not in stats_users: the figures above are blanks, not zeros; say which setting shows them
    missing = missing_line(STATS, panel_of(snap, STATS))
    if missing is not None:
        lines.append(missing)
    return lines


PGB_POOLS = TableSpec(
    POOLS,
    "pools (red: clients waiting)",
    (
        Col("Database", "database"),
        Col("User", "user", min_screen=100),
        Col("Clients", "cl_active", count, True),
        Col("Waiting", "cl_waiting", count, True),
        Col("Servers", "sv_active", count, True),
        Col("Idle", "sv_idle", count, True),
        Col("Used", "sv_used", count, True),
        Col("Max wait", "maxwait_s", dur, True),
        Col("Mode", "pool_mode", min_screen=100),
    ),
    "cl_active",
    alert=_pool_alert,
    rows=_pool_rows,
)
PGB_STATS = TableSpec(
    STATS,
    "per database, in the interval",
    (
        Col("Database", "database"),
        Col("Trx/s", "xact_per_s", per_s, True),
        Col("Queries/s", "query_per_s", per_s, True),
        Col("Avg trx", "avg_xact_time_us", usec, True),
        Col("Avg query", "avg_query_time_us", usec, True, min_screen=100),
        Col("Wait per trx", "avg_wait_time_us", usec, True),
        Col("In", "received_bytes_per_s", mib_s, True, min_screen=140),
        Col("Out", "sent_bytes_per_s", mib_s, True, min_screen=140),
    ),
    "xact_per_s",
)


def peer_spec(panel: str, title: str) -> TableSpec:
    return TableSpec(
        panel,
        title,
        (
            Col("State", "state"),
            Col("User", "user", min_screen=100),
            Col("Database", "database"),
            Col("Address", "addr", min_screen=100),
            Col("Port", "port", min_screen=140),
            Col("Waiting", "wait_s", dur, True),
            Col("Connected at", "connect_time", min_screen=140),
            Col("Last request", "request_time", min_screen=120),
            Col("Application", "application_name", min_screen=100),
        ),
        "wait_s",
        alert=lambda r: "bold red" if r.get("state") == "waiting" else None,
    )
