"""ProxySQL: Proxytop's ConnPool, QueryRules, GloStat, ProcList, ComCount, and the digest top-N."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.views.spec import Col, TableSpec, facts, mapping_of, panel_of
from benchtop.panels.units import count, dur, ident, mib_s, ms_per_s, msec, pct, per_s, usec
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import (
    COMMANDS,
    CONNECTION_POOL,
    DIGEST_TOP,
    GLOBAL,
    GLOBAL_RATES,
    POOL_WAIT,
    PROCESSLIST,
    QUERY_RULES,
)


def proxysql_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    glob = mapping_of(panel_of(snap, GLOBAL))
    rates = mapping_of(panel_of(snap, GLOBAL_RATES))
    wait = mapping_of(panel_of(snap, POOL_WAIT))
    return [
        facts(
            [
                ("uptime", dur(glob.get("ProxySQL_Uptime"))),
                ("client conns", f"{count(glob.get('Client_Connections_connected'))}"),
                ("server conns", f"{count(glob.get('Server_Connections_connected'))}"),
                ("queries", per_s(rates.get("Questions"))),
                ("slow", per_s(rates.get("Slow_queries"))),
            ], width),
        facts(
            [
                ("time in proxy", pct(wait.get("proxy_time_pct"))),
                ("in backends", ms_per_s(wait.get("backend_time_ms_per_s"))),
                ("conn from pool at once", pct(wait.get("immediate_pct"))),
                ("conn failures", per_s(wait.get("get_conn_failure_per_s"))),
            ], width),
    ]


# GloStat's sections, as Proxytop groups stats_mysql_global.
_GLOSTAT_SECTIONS = (
    ("connections", ("Client_Connections_", "Server_Connections_", "Active_Transactions", "Access_Denied")),
    ("queries", ("Questions", "Slow_queries", "Com_", "Backend_query_time", "Query_Processor_time", "Selects_for_update")),
    ("connection pool", ("ConnPool_", "MyHGM_", "mysql_backend_buffers", "mysql_frontend_buffers", "mysql_session")),
    ("query cache", ("Query_Cache_",)),
    ("traffic", ("Queries_backends_bytes", "Queries_frontends_bytes")),
)


def _glostat_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(value, Mapping):
        return []
    rates = mapping_of(panels.get(GLOBAL_RATES))
    rows = []
    for name, v in value.items():
        section = next((s for s, prefixes in _GLOSTAT_SECTIONS if name.startswith(prefixes)), "other")
        rows.append({"section": section, "variable": name, "value": v, "per_s": rates.get(name)})
    order = [s for s, _ in _GLOSTAT_SECTIONS] + ["other"]
    rows.sort(key=lambda r: (order.index(r["section"]), r["variable"]))
    return rows


PSQL_POOL = TableSpec(
    CONNECTION_POOL,
    "ConnPool: backends per hostgroup",
    (
        Col("HG", "hostgroup", ident, True),
        Col("Server", "srv_host"),
        Col("Port", "srv_port", min_screen=120),
        Col("Status", "status"),
        Col("Used", "ConnUsed", count, True),
        Col("Free", "ConnFree", count, True),
        Col("Used %", "ConnUsed_pct", pct, True, min_screen=100),
        Col("OK/s", "ConnOK_per_s", per_s, True, min_screen=120),
        Col("Err/s", "ConnERR_per_s", per_s, True, min_screen=100),
        Col("Queries/s", "Queries_per_s", per_s, True),
        Col("Sent", "Bytes_data_sent_per_s", mib_s, True, min_screen=140),
        Col("Recv", "Bytes_data_recv_per_s", mib_s, True, min_screen=140),
        Col("Latency", "Latency_us", usec, True),
    ),
    "Queries_per_s",
    alert=lambda r: "bold red" if r.get("status") not in (None, "ONLINE") else None,
)
PSQL_RULES = TableSpec(
    QUERY_RULES,
    "QueryRules: hits per rule",
    (
        Col("Rule", "rule_id", ident, True),
        Col("Hits/s", "hits_per_s", per_s, True),
        Col("Hits", "hits", count, True),
        Col("Dest HG", "destination_hostgroup", ident, True),
        Col("Active", "active"),
        Col("Apply", "apply", min_screen=100),
        Col("Match digest", "match_digest"),
        Col("Match pattern", "match_pattern", min_screen=120),
    ),
    "hits_per_s",
)
PSQL_GLOBAL = TableSpec(
    GLOBAL,
    "GloStat: stats_mysql_global by section",
    (
        Col("Section", "section"),
        Col("Variable", "variable"),
        Col("Value", "value", count, True),
        Col("Per second", "per_s", per_s, True),
    ),
    "section",
    rows=_glostat_rows,
    descending=False,
)
PSQL_PROCLIST = TableSpec(
    PROCESSLIST,
    "ProcList: client sessions (refreshed every few seconds; i shows idle)",
    (
        Col("Session", "SessionID", ident, True),
        Col("User", "user", min_screen=100),
        Col("DB", "db", min_screen=100),
        Col("Client", "cli_host", min_screen=120),
        Col("HG", "hostgroup", ident, True, min_screen=120),
        Col("Backend", "srv_host", min_screen=100),
        Col("Command", "command", min_screen=100),
        Col("Time", "time_ms", msec, True),
        Col("Info", "info"),
    ),
    "time_ms",
    idle=lambda r: r.get("command") == "Sleep",
)


def _command_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        us = r.get("interval_time_us")
        r["time_ms_per_s"] = None if us is None else us / 1000.0  # refined to per second by the poll interval
    return rows


PSQL_COMMANDS = TableSpec(
    COMMANDS,
    "ComCount: commands (Enter: latency buckets)",
    (
        Col("Command", "Command"),
        Col("Count/s", "cnt_per_s", per_s, True),
        Col("Avg (interval)", "avg_us", usec, True),
        Col("Avg (total)", "avg_us_total", usec, True, min_screen=100),
        Col("Total", "Total_cnt", count, True),
    ),
    "cnt_per_s",
    rows=_command_rows,
)
PSQL_DIGESTS = TableSpec(
    DIGEST_TOP,
    "digests by time in the interval",
    (
        Col("Time/s", "time_ms_per_s", ms_per_s, True),
        Col("Count/s", "count_per_s", per_s, True),
        Col("Avg", "avg_us", usec, True),
        Col("HG", "hostgroup", ident, True, min_screen=120),
        Col("Schema", "schemaname", min_screen=120),
        Col("User", "username", min_screen=120),
        Col("Digest", "digest_text"),
    ),
    "time_ms_per_s",
)
