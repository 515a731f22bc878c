"""MySQL/MariaDB transactions as innotop shows them: open InnoDB
transactions with their sessions, the latest deadlock from SHOW ENGINE
INNODB STATUS with both statements, and contended metadata locks.  Pure
functions from what the server returns to the panels of benchtop.sources.fields."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from benchtop.sources.fields import DeadlockPanel, DeadlockTrx, TrxRow
from benchtop.sources.rates import to_number
from benchtop.sources.base import flatten

_DEADLOCK_HEAD = re.compile(r"^-+\nLATEST DETECTED DEADLOCK\n-+\n", re.M)
_NEXT_SECTION = re.compile(r"^-+\n[A-Z][A-Z /]+\n-+\n", re.M)
_TRX_HEAD = re.compile(r"^\*\*\* \((\d+)\) TRANSACTION:\n", re.M)


def _int(v: Any) -> int | None:
    n = to_number(v)
    return int(n) if n is not None else None


def _text(v: Any) -> str | None:
    if isinstance(v, (bytes, bytearray)):
        v = v.decode(errors="replace")
    return flatten(v) if v is not None else None


def transaction_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The transactions panel from the transactions query's rows.

    >>> transaction_rows([{"id": 12, "state": "RUNNING", "age_s": 30, "rows_locked": 1, "undo_entries": 1,
    ...                    "command": "Sleep", "idle_s": 29, "query": None,
    ...                    "last_statement": "UPDATE t\\n  SET v = 1 WHERE id = 2"}])[0]["last_statement"]
    'UPDATE t SET v = 1 WHERE id = 2'
    """
    out = []
    for r in rows:
        out.append(TrxRow(
            id=_int(r.get("id")), state=_text(r.get("state")), age_s=to_number(r.get("age_s")),
            rows_locked=_int(r.get("rows_locked")), undo_entries=_int(r.get("undo_entries")),
            lock_structs=_int(r.get("lock_structs")), isolation=_text(r.get("isolation")),
            user=_text(r.get("user")), host=_text(r.get("host")), db=_text(r.get("db")),
            command=_text(r.get("command")), idle_s=to_number(r.get("idle_s")),
            query=_text(r.get("query")), last_statement=_text(r.get("last_statement")),
        ).as_row())
    return out


def latest_deadlock(status: str) -> DeadlockPanel | None:
    r"""The LATEST DETECTED DEADLOCK section of SHOW ENGINE INNODB STATUS:
    each transaction's session, table, lock and statement, and which one
    InnoDB rolled back (None when the server has seen none since it started).

    >>> text = (  # MySQL 8's wording; MariaDB's is tested on a server's own text
    ...   "------------------------\nLATEST DETECTED DEADLOCK\n------------------------\n2026-11-26 10:00:00 0x7f\n"
    ...   "*** (1) TRANSACTION:\nTRANSACTION 9, ACTIVE 3 sec starting index read\n"
    ...   "MySQL thread id 41, OS thread handle 1, query id 5 localhost root updating\n"
    ...   "UPDATE dl SET v = 1\n  WHERE id = 2\n*** (1) HOLDS THE LOCK(S):\n"
    ...   "RECORD LOCKS space id 2 page no 4 n bits 72 index PRIMARY of table `sbtest`.`dl` trx id 9 lock_mode X\n"
    ...   "*** (2) TRANSACTION:\nTRANSACTION 10, ACTIVE 2 sec starting index read\n"
    ...   "MySQL thread id 42, OS thread handle 2, query id 6 localhost root updating\nUPDATE dl SET v = 2 WHERE id = 1\n"
    ...   "*** WE ROLL BACK TRANSACTION (2)\n------------\nTRANSACTIONS\n------------\nTrx id counter 11\n")
    >>> d = latest_deadlock(text)
    >>> d.at, d.victim, [(t.n, t.thread_id, t.active_s, t.table, t.lock_mode, t.query) for t in d.transactions]
    ('2026-11-26 10:00:00 0x7f', 2, [(1, 41, 3.0, '`sbtest`.`dl`', 'X', 'UPDATE dl SET v = 1 WHERE id = 2'), (2, 42, 2.0, None, None, 'UPDATE dl SET v = 2 WHERE id = 1')])
    >>> latest_deadlock("=====\nTRANSACTIONS\n") is None
    True
    """
    head = _DEADLOCK_HEAD.search(status)
    if head is None:
        return None
    body = status[head.end():]
    end = _NEXT_SECTION.search(body)
    body = body[: end.start()] if end else body
    at = body.strip().splitlines()[0].strip() if body.strip() else ""
    victim_m = re.search(r"\*\*\* WE ROLL BACK TRANSACTION \((\d+)\)", body)
    heads = list(_TRX_HEAD.finditer(body))
    trx = []
    for i, m in enumerate(heads):
        block = body[m.end(): heads[i + 1].start() if i + 1 < len(heads) else len(body)]
        trx.append(_deadlock_trx(int(m.group(1)), block))
    return DeadlockPanel(at, int(victim_m.group(1)) if victim_m else None, tuple(trx))


def _deadlock_trx(n: int, block: str) -> DeadlockTrx:
    lines = block.splitlines()
    thread_id, query_lines = None, []
    for i, line in enumerate(lines):
        m = re.match(r"(?:MySQL|MariaDB) thread id (\d+)", line)
        if m:
            thread_id = int(m.group(1))
            for q in lines[i + 1:]:  # the statement: up to the next *** line
                if q.startswith("***"):
                    break
                query_lines.append(q)
            break
    active = re.search(r"ACTIVE (\d+) sec", block)
    table = re.search(r" of table (`[^`]+`\.`[^`]+`)", block)
    mode = re.search(r"lock[_ ]mode (\w+)", block)
    return DeadlockTrx(n, thread_id, float(active.group(1)) if active else None, table.group(1) if table else None,
                       mode.group(1) if mode else None, flatten("\n".join(query_lines)) or None)


def metadata_lock_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Holders and waiters of contended metadata locks, statements on one line.

    >>> metadata_lock_rows([{"id": 7, "status": "PENDING", "lock_type": "EXCLUSIVE", "object": "sbtest.t",
    ...                      "time_s": 3, "query": "ALTER TABLE t\\n ADD c INT"}])[0]["query"]
    'ALTER TABLE t ADD c INT'
    """
    out = []
    for r in rows:
        row = {k: _text(v) if isinstance(v, (str, bytes, bytearray)) else v for k, v in r.items()}
        row["id"], row["time_s"] = _int(r.get("id")), to_number(r.get("time_s"))
        out.append(row)
    return out
