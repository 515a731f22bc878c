"""MySQL / MariaDB transactions as innotop shows them: open InnoDB
transactions (a session sleeping inside one holds its locks), the latest
deadlock with both statements, metadata locks (an ALTER queued behind an open
transaction, and everyone queued behind the ALTER)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.units import count, dur, ident
from benchtop.panels.views.spec import Col, TableSpec, missing_line, panel_of
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import DEADLOCK, METADATA_LOCKS, TRANSACTIONS, DeadlockPanel, TrxRow

IDLE_IN_TRX_WARN_S = 10.0  # a session idle this long inside a transaction holds its locks for nothing


def open_transactions(panels: Mapping[str, Any]) -> dict[Any, TrxRow]:
    """Session id -> its open transaction (empty when the panel is missing)."""
    value = panels.get(TRANSACTIONS)
    if not isinstance(value, list):
        return {}
    return {r.get("id"): TrxRow.of(r) for r in value if isinstance(r, Mapping)}


# an idle session's last statement, when performance_schema does not keep it
LAST_UNKNOWN = "(last statement unknown: performance_schema's events_statements_current consumer is off)"


def idle_in_trx(trx: TrxRow | None) -> bool:
    return trx is not None and trx.command == "Sleep"


def _trx_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        trx = TrxRow.of(r)
        # what the session does: idle in the transaction (the lock holder innotop
        # flags), waiting for a lock, or running its statement
        r["doing"] = (f"idle in trx {dur(trx.idle_s)}" if idle_in_trx(trx)
                      else "lock wait" if trx.state == "LOCK WAIT" else (trx.state or "").lower())
        r["statement"] = trx.query or trx.last_statement or (LAST_UNKNOWN if idle_in_trx(trx) else "")
        r["statement_is"] = "now" if trx.query else "last" if trx.last_statement else ""
    return rows


def _trx_alert(row: Mapping[str, Any]) -> str | None:
    if row.get("state") == "LOCK WAIT":
        return "red"
    trx = TrxRow.of(row)
    if idle_in_trx(trx) and (trx.idle_s or 0) >= IDLE_IN_TRX_WARN_S:
        return "yellow"
    return None


MYSQL_TRANSACTIONS = TableSpec(
    TRANSACTIONS,
    "open transactions, oldest first (yellow: idle inside one, red: waiting for a lock)",
    (
        Col("Id", "id", ident, True),
        Col("Age", "age_s", dur, True),
        Col("Doing", "doing"),
        Col("Rows locked", "rows_locked", count, True),
        Col("Undo", "undo_entries", count, True),
        Col("User", "user", min_screen=120),
        Col("DB", "db", min_screen=140),
        Col("Isolation", "isolation", min_screen=160),
        Col("", "statement_is", width=4),
        Col("Statement", "statement"),
    ),
    "age_s",
    rows=_trx_rows,
    alert=_trx_alert,
)
MYSQL_METADATA_LOCKS = TableSpec(
    METADATA_LOCKS,
    "metadata locks someone waits for (PENDING: waiting; GRANTED: holding)",
    (
        Col("Id", "id", ident, True),
        Col("Status", "status"),
        Col("Lock", "lock_type"),
        Col("Object", "object"),
        Col("Time", "time_s", dur, True),
        Col("Command", "command", min_screen=120),
        Col("State", "state", min_screen=100),
        Col("Statement", "query"),
    ),
    "time_s",
    alert=lambda r: "red" if r.get("status") == "PENDING" else None,
)


def deadlock_lines(snap: SourceSnapshot, width: int) -> list[Text]:
    """The latest deadlock InnoDB reported: when, each transaction's session,
    table and statement, and which one was rolled back."""
    value = panel_of(snap, DEADLOCK)
    missing = missing_line("latest deadlock", value)
    if missing is not None:
        return [missing]
    dl = DeadlockPanel.of(snap.panels)
    if dl is None or not dl.transactions:
        return [Text("latest deadlock: none since the server started", "dim")] if value is not None else []
    lines = [Text(f"latest deadlock {dl.at}", "bold yellow")]
    for t in dl.transactions:
        line = Text(f"  ({t.n}) ", "bold")
        line.append(f"thread {ident(t.thread_id)} ", "dim")
        if t.table:
            line.append(f"on {t.table} {t.lock_mode or ''} ", "dim")
        if t.n == dl.victim:
            line.append("rolled back ", "bold red")
        line.append(t.query or "?")
        lines.append(line)
    return lines


def locks_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    return deadlock_lines(snap, width)
