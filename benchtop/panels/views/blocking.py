"""Who blocks whom, as pg_activity's blocking view: one row per session
waiting for a lock and per session holding it up, the lock's mode and
relation, and both statements (the blocker's last one when it sits idle in
its transaction).  PostgreSQL reads it from pg_locks and pg_blocking_pids
(the `blocking` panel); MariaDB/MySQL from the row lock waits (`locks`) and
the contended metadata locks, the blocker's last statement from the open
transactions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.units import dur, ident
from benchtop.panels.views.mysql_trx import LAST_UNKNOWN
from benchtop.panels.views.spec import Col, TableSpec, rows_for
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import BLOCKING, METADATA_LOCKS, TRANSACTIONS

COLS = (
    Col("PID", "pid", ident, True),
    Col("Waits", "wait_s", dur, True),
    Col("Mode", "mode"),
    Col("Relation", "relation"),
    Col("Lock", "lock_type", min_screen=120),
    Col("Blocker", "blocking_pid", ident, True),
    Col("Blocker is", "blocking_state", min_screen=100),
    Col("Its trx", "blocking_xact_age_s", dur, True, min_screen=120),
    Col("Waiting statement", "query", min_screen=140),
    Col("Blocker's statement", "blocking_query"),
)
TITLE = "sessions waiting for a lock (PID) and who holds it up (Blocker)"


def _blocker_statement(query: Any, command: Any, last: Any) -> str:
    """The blocker's statement: running, else its last one; an idle blocker
    whose last one performance_schema does not keep says so (a blank read
    as nothing to see, and the Blocker is column has no room at 80 columns).

    >>> _blocker_statement(None, "Sleep", "UPDATE t SET k=1"), _blocker_statement(None, "Query", None)
    ('UPDATE t SET k=1', '')
    >>> _blocker_statement(None, "Sleep", None).startswith("(idle; last statement unknown")
    True
    """
    if query or last:
        return str(query or last)
    return "(idle; " + LAST_UNKNOWN[1:] if command == "Sleep" else ""


def _mysql_rows(value: Any, panels: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The row lock waits and the pending metadata locks, each waiter beside
    each session granted a lock on the same object, in the blocking view's
    columns; an idle blocker's statement is its transaction's last one."""
    trx = panels.get(TRANSACTIONS)
    last = {t.get("id"): t.get("last_statement") or "" for t in trx if isinstance(t, dict)} if isinstance(trx, list) else {}
    out = []
    for r in value if isinstance(value, list) else []:
        if not isinstance(r, dict):
            continue
        out.append({
            "pid": r.get("waiting_id"), "wait_s": r.get("wait_s"), "mode": r.get("lock_mode") or "",
            "relation": r.get("lock_table") or "", "lock_type": "row", "query": r.get("waiting_query") or "",
            "blocking_pid": r.get("blocking_id"), "blocking_state": r.get("blocking_command") or "",
            "blocking_xact_age_s": r.get("blocking_trx_age_s"),
            "blocking_query": _blocker_statement(r.get("blocking_query"), r.get("blocking_command"),
                                                 last.get(r.get("blocking_id"))),
        })
    mdl = panels.get(METADATA_LOCKS)
    held = [m for m in mdl if isinstance(m, dict) and m.get("status") == "GRANTED"] if isinstance(mdl, list) else []
    for w in mdl if isinstance(mdl, list) else []:
        if not isinstance(w, dict) or w.get("status") != "PENDING":
            continue
        for h in held:
            if h.get("object") == w.get("object") and h.get("id") != w.get("id"):
                out.append({
                    "pid": w.get("id"), "wait_s": w.get("time_s"), "mode": w.get("lock_type") or "",
                    "relation": w.get("object") or "", "lock_type": "metadata", "query": w.get("query") or "",
                    "blocking_pid": h.get("id"), "blocking_state": h.get("command") or "",
                    "blocking_xact_age_s": None,
                    "blocking_query": _blocker_statement(h.get("query"), h.get("command"), last.get(h.get("id"))),
                })
    return out


PG_BLOCKING = TableSpec(BLOCKING, TITLE, COLS, "wait_s", alert=lambda r: "red")
MYSQL_BLOCKING = TableSpec("locks", TITLE, COLS, "wait_s", alert=lambda r: "red", rows=_mysql_rows)


def blocking_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    """A line saying so when nobody waits (an empty table says nothing)."""
    spec = PG_BLOCKING if snap.kind == "postgresql" else MYSQL_BLOCKING
    rows = rows_for(spec, snap)
    if isinstance(rows, list) and not rows:
        return [Text("no session waits for a lock", "dim")]
    return []
