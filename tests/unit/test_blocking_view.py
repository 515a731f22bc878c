"""The blocking view's rows from MariaDB/MySQL panels: a row lock wait, and
a pending metadata lock beside each session granted one on the same object
(an ALTER queued behind an open transaction), an idle blocker's statement
from its transaction's last one; the headless text's line for it."""

from __future__ import annotations

from benchtop.panels.headless import summary_lines
from benchtop.panels.views import rows_for, views_for
from benchtop.sources.base import SourceSnapshot

PANELS = {
    "locks": [{"waiting_id": 9, "waiting_query": "UPDATE t SET v = 2 WHERE id = 1", "wait_s": 3, "blocking_id": 8,
               "blocking_query": None, "blocking_command": "Sleep", "blocking_trx_age_s": 40,
               "lock_table": "`sbtest`.`t`", "lock_mode": "X"}],
    "metadata_locks": [
        {"id": 12, "status": "PENDING", "lock_type": "EXCLUSIVE", "object": "sbtest.sbtest1", "time_s": 5,
         "command": "Query", "query": "ALTER TABLE sbtest1 COMMENT 'x'"},
        {"id": 11, "status": "GRANTED", "lock_type": "SHARED_READ", "object": "sbtest.sbtest1", "time_s": 30,
         "command": "Sleep", "query": None},
        {"id": 12, "status": "GRANTED", "lock_type": "SHARED_UPGRADABLE", "object": "sbtest.sbtest1", "time_s": 5,
         "command": "Query", "query": "ALTER TABLE sbtest1 COMMENT 'x'"},
    ],
    "transactions": [{"id": 8, "last_statement": "UPDATE t SET v = 1 WHERE id = 1"},
                     {"id": 11, "last_statement": "SELECT * FROM sbtest1 LIMIT 1"}],
}


def _rows(panels: dict) -> list[dict]:
    snap = SourceSnapshot("mysql", "mysql", 0.0, True, panels=panels)
    view = next(v for v in views_for("mysql") if v.key == "blocking")
    rows = rows_for(view.tables[0], snap)
    assert isinstance(rows, list)
    return rows


def test_row_lock_and_metadata_lock_waits_with_their_blockers() -> None:
    row, mdl = _rows(PANELS)
    assert (row["pid"], row["mode"], row["relation"], row["blocking_pid"]) == (9, "X", "`sbtest`.`t`", 8)
    assert row["blocking_query"] == "UPDATE t SET v = 1 WHERE id = 1"  # idle: its last statement
    # the ALTER waits for the open transaction's shared lock, not for its own granted one
    assert (mdl["pid"], mdl["mode"], mdl["relation"], mdl["blocking_pid"]) == (12, "EXCLUSIVE", "sbtest.sbtest1", 11)
    assert mdl["lock_type"] == "metadata" and mdl["blocking_query"] == "SELECT * FROM sbtest1 LIMIT 1"


def test_headless_text_names_the_wait_only_while_there_is_one() -> None:
    snap = SourceSnapshot("mysql", "mysql", 0.0, True, panels=PANELS)
    [line] = [ln for ln in summary_lines(snap) if "who holds it up" in ln]
    assert "(+1 more)" in line and "EXCLUSIVE" in line and "sbtest.sbtest1" in line and "11" in line
    quiet = SourceSnapshot("mysql", "mysql", 0.0, True, panels={"locks": [], "metadata_locks": []})
    assert not _rows(quiet.panels) and not [ln for ln in summary_lines(quiet) if "who holds it up" in ln]


def test_an_idle_blockers_unknown_statement_is_said_not_left_blank() -> None:
    # the test server's events_statements_current consumer is off: the blocker's column was empty
    panels = {**PANELS, "transactions": [{"id": 8, "last_statement": None}, {"id": 11, "last_statement": None}]}
    row, mdl = _rows(panels)
    for r in (row, mdl):
        assert r["blocking_query"].startswith("(idle; last statement unknown: performance_schema's "
                                              "events_statements_current consumer is off)")
