"""The latest deadlock as a MariaDB server wrote it (SHOW ENGINE INNODB
STATUS from a real deadlock, kept in data/): both sessions, statements,
table and which one was rolled back."""

from __future__ import annotations

from pathlib import Path

from benchtop.sources.fields import DeadlockPanel
from benchtop.sources.mysql_trx import latest_deadlock

DATA = Path(__file__).parent / "data" / "innodb_status_deadlock_mariadb.txt"


def test_mariadb_deadlock_text() -> None:
    dl = latest_deadlock(DATA.read_text())
    assert dl is not None and dl.at.startswith("2026-11-26 18:54:00")
    assert [(t.n, t.thread_id, t.query) for t in dl.transactions] == [
        (1, 36, "UPDATE dl SET v = v + 1 WHERE id = 1"), (2, 35, "UPDATE dl SET v = v + 1 WHERE id = 2")]
    assert dl.victim == 1 and all(t.table == "`sbtest`.`dl`" and t.lock_mode == "X" for t in dl.transactions)
    # the panel as snapshots and recordings hold it reads back the same
    assert DeadlockPanel.of({"deadlock": dl.as_panel()}) == dl
