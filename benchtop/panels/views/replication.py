"""Replication on both servers: a MySQL/MariaDB replica's channels (running
threads, lag, positions, last error) and the replicas streaming from it; a
PostgreSQL primary's standbys (pg_stat_replication: state, lag in bytes and
time) and a standby's own receive/replay positions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.units import dur, mib, text
from benchtop.panels.views.spec import Col, TableSpec, facts, missing_line, panel_of
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import PROCESSLIST, REPLICA, REPLICATION, STANDBY, ReplicaRow, StandbyPanel

LAG_WARN_S = 30.0


def _replica_alert(row: Mapping[str, Any]) -> str | None:
    r = ReplicaRow.of(row)
    if r.io_running != "Yes" or r.sql_running != "Yes" or r.last_error:
        return "red"
    return "yellow" if (r.lag_s or 0) >= LAG_WARN_S else None


def _lag(v: Any) -> str:
    return "-" if v is None else dur(v) if v else "0"


MYSQL_REPLICA = TableSpec(
    REPLICA,
    "this server as a replica (red: a thread stopped or an error; lag: Seconds_Behind_Master; "
    "not applied: binlog read, not executed)",
    (
        Col("Channel", "channel", min_screen=120),
        Col("Primary", "primary"),
        Col("IO", "io_running"),
        Col("SQL", "sql_running"),
        Col("Lag", "lag_s", _lag, True),
        Col("Not applied", "unapplied_bytes", mib, True),
        Col("Relay logs", "relay_bytes", mib, True, min_screen=100),
        Col("Read", "read_pos", min_screen=140),
        Col("Executed", "exec_pos", min_screen=140),
        Col("GTID", "gtid", min_screen=160),
        Col("Last error / IO state", "shown"),
    ),
    "lag_s",
    rows=lambda value, panels: [dict(r, shown=r.get("last_error") or r.get("io_state") or "")
                                for r in value if isinstance(r, dict)] if isinstance(value, list) else [],
    alert=_replica_alert,
)


def mysql_replication_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    """Both sides: the replicas reading this server's binlog (their Binlog
    Dump sessions), and whether this server replicates from another."""
    procs = panel_of(snap, PROCESSLIST)
    dumps = [r for r in procs if isinstance(r, Mapping) and str(r.get("command", "")).startswith("Binlog Dump")] \
        if isinstance(procs, list) else []
    lines = []
    if dumps:
        line = Text(f"as a primary: {len(dumps)} replica(s) reading the binlog  ", "bold")
        line.append(", ".join(f"{r.get('host')} ({r.get('state') or r.get('command')})" for r in dumps[:4]))
        lines.append(line)
    elif isinstance(procs, list):
        lines.append(Text("as a primary: no replica is reading the binlog", "dim"))
    value = panel_of(snap, REPLICA)
    if isinstance(value, list):  # a Missing panel says why in its table's place
        rows = [ReplicaRow.of(r) for r in value if isinstance(r, Mapping)]
        worst = max((r.lag_s for r in rows if r.lag_s is not None), default=None)
        stopped = [r for r in rows if r.io_running != "Yes" or r.sql_running != "Yes"]
        lines.append(facts([("as a replica: channels", str(len(rows))),
                            ("lag", _lag(worst)),
                            ("stopped", str(len(stopped)))], width, "bold red" if stopped else "bold"))
    return lines


def _pg_replica_alert(row: Mapping[str, Any]) -> str | None:
    if row.get("state") != "streaming":
        return "yellow"
    lag = row.get("replay_lag_s")
    return "yellow" if isinstance(lag, (int, float)) and lag >= LAG_WARN_S else None


PG_REPLICAS = TableSpec(
    REPLICATION,
    "standbys streaming from this server (pg_stat_replication; lag: time, WAL not replayed: bytes)",
    (
        Col("Standby", "application_name"),
        Col("Client", "client_addr"),
        Col("State", "state"),
        Col("Sync", "sync_state", min_screen=100),
        Col("Replay lag", "replay_lag_s", _lag, True),
        Col("WAL not replayed", "replay_lag_bytes", mib, True, min_screen=100),
        Col("Write lag", "write_lag_s", _lag, True, min_screen=120),
        Col("Flush lag", "flush_lag_s", _lag, True, min_screen=120),
    ),
    "replay_lag_bytes",
    alert=_pg_replica_alert,
)


def pg_replication_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    missing = missing_line("standby", panel_of(snap, STANDBY))
    if missing is not None:
        return [missing]
    sb = StandbyPanel.of(snap.panels)
    if sb is None:
        return []
    if not sb.in_recovery:
        return [Text("a primary (not in recovery)", "bold")]
    line = facts([("a standby of", text(sb.sender) or "?"),
                  ("receiver", text(sb.receiver_status) or "none"),
                  ("received", text(sb.receive_lsn) or "-"),
                  ("replayed", text(sb.replay_lsn) or "-"),
                  ("not yet replayed", mib(sb.replay_gap_bytes)),
                  ("last replayed commit", f"{_lag(sb.last_replay_age_s)} ago" if sb.last_replay_age_s is not None
                   else "none since the standby started")], width)
    out = [line]
    if sb.replay_paused:
        out.append(Text("⚠ replay is paused (pg_wal_replay_pause()): WAL arrives, nothing is applied; "
                        "SELECT pg_wal_replay_resume() resumes it", "bold red"))
    if sb.receiver_status != "streaming":
        out.append(Text("⚠ no WAL receiver streaming: the standby replays only what it already has", "bold yellow"))
    return out
