"""What the monitor's text says is what is so: a running session is not
called idle, an instrument enabled while the monitor runs is seen, hints are
shown as written, numbers carry no exponent and one spelling of each unit."""

from __future__ import annotations

from typing import Any

from benchtop.panels.units import mib, ms, size, usec
from benchtop.panels.views.mysql import MYSQL_PROCESSLIST
from benchtop.sources.base import Missing
from benchtop.sources.fields import TRANSACTIONS


def _trx(command: str) -> dict[str, Any]:
    return {"id": 7, "state": "RUNNING", "age_s": 0.0, "rows_locked": 3, "command": command, "idle_s": 0.0}


def test_a_session_the_processlist_shows_running_is_not_idle_in_trx():
    # the transactions panel, read a moment before, still saw it sleeping
    procs = [{"id": 7, "command": "Query", "time_s": 0.2, "state": "updating", "query": "UPDATE t SET k=k+1"}]
    rows = MYSQL_PROCESSLIST.rows(procs, {"processlist": procs, TRANSACTIONS: [_trx("Sleep")]})
    assert rows[0]["state"] == "updating" and not rows[0].get("in_trx")
    sleeping = [{"id": 7, "command": "Sleep", "time_s": 12.0, "state": "", "query": ""}]
    rows = MYSQL_PROCESSLIST.rows(sleeping, {"processlist": sleeping, TRANSACTIONS: [_trx("Sleep")]})
    assert rows[0]["state"].startswith("idle in trx") and rows[0]["in_trx"]


def test_the_metadata_lock_instrument_is_read_again_until_it_is_on(monkeypatch):
    from benchtop.sources.mysql import MySQLSource
    from benchtop.target import Target

    src = MySQLSource("m", Target(kind="mysql"))
    enabled = ["NO"]
    monkeypatch.setattr(src, "_rows", lambda stmt, *a: [(enabled[0],)])
    monkeypatch.setattr(src, "_dicts", lambda query, *a: [])
    first = src._metadata_locks({"performance_schema": "ON"})
    assert isinstance(first, Missing) and first.what == "metadata lock instrument off"
    enabled[0] = "YES"  # UPDATE performance_schema.setup_instruments while the monitor runs
    assert src._metadata_locks({"performance_schema": "ON"}) == []


def test_numbers_never_carry_an_exponent():
    assert usec(999.7) == "1ms" and usec(999_700.0) == "1s" and ms(0.99987) == "1ms"
    assert [usec(v) for v in (1000.0, 998.0, 0.01)] == ["1ms", "998µs", "0.01µs"]
    assert all("e" not in ms(10.0 ** k) for k in range(-8, 5))


def test_bytes_spelled_one_way():
    assert size(0) == "0 B" and mib(0) == "0 B" and mib(56.1 * 2**20) == "56.1 MiB"


def test_standby_lag_at_80_columns_is_time_and_a_paused_replay_is_said():
    from benchtop.panels.views.replication import PG_REPLICAS, pg_replication_summary
    from benchtop.panels.views.spec import fits
    from benchtop.sources.base import SourceSnapshot
    from benchtop.sources.fields import STANDBY

    narrow = [c.label for c in PG_REPLICAS.cols if fits(c, 80)]
    assert "Replay lag" in narrow and not any("MiB" in c or "not replayed" in c for c in narrow)
    assert next(c for c in PG_REPLICAS.cols if c.label == "Replay lag").key == "replay_lag_s"
    standby = {"in_recovery": True, "receive_lsn": "0/3000100", "replay_lsn": "0/3000000", "replay_gap_bytes": 256.0,
               "receiver_status": "streaming", "sender": "127.0.0.1:5432", "replay_paused": True}
    snap = SourceSnapshot(name="pg", kind="postgresql", t=0.0, ok=True, panels={STANDBY: standby})
    text = "\n".join(t.plain for t in pg_replication_summary(snap, 80))
    assert "replay is paused" in text and "a standby of 127.0.0.1:5432" in text


def test_an_estimated_statement_ranks_after_the_measured_ones():
    from benchtop.panels.headless import summary_lines
    from benchtop.panels.views.mysql import MYSQL_STATEMENTS
    from benchtop.panels.views.spec import sorted_rows
    from benchtop.sources.base import SourceSnapshot

    top = [{"query": "SELECT sleep(?)", "total_ms_per_s": 900.0, "sampled": True, "sessions_running": 2},
           {"query": "UPDATE sbtest1 SET k=k+1", "total_ms_per_s": 300.0, "calls_per_s": 50.0},
           {"query": "SELECT c FROM sbtest1", "total_ms_per_s": 120.0, "calls_per_s": 400.0}]
    rows = MYSQL_STATEMENTS.rows(top, {})
    ranked = sorted_rows(rows, MYSQL_STATEMENTS.sort, True, MYSQL_STATEMENTS.later)
    assert [r["query"] for r in ranked] == ["UPDATE sbtest1 SET k=k+1", "SELECT c FROM sbtest1", "SELECT sleep(?)"]
    snap = SourceSnapshot(name="m", kind="mysql", t=0.0, ok=True, panels={"top_statements": top})
    line = next(s for s in summary_lines(snap) if s.startswith("top statements"))
    assert "UPDATE sbtest1" in line and "~est" not in line
