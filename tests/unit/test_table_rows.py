"""A run's check of the loaded tables' rows stays cheap: a table that cannot
be counted within the limit is taken as loaded, a short one is reported, a
server that cannot be reached is an error."""

from __future__ import annotations

import pytest

from benchtop.engine import ConnectError, ConnSettings, EngineError
from benchtop.workload import load_program, tables


def _program():
    return load_program("oltp_read_write", "mysql", {"tables": "2", "table_size": "1000"})


def test_a_table_too_big_to_count_in_time_is_taken_as_loaded(monkeypatch):
    seen: list[float] = []

    def count(conn: ConnSettings, name: str) -> int | None:
        seen.append(conn.query_timeout_s)
        if name == "sbtest1":
            raise EngineError(f"no reply within --query-timeout {conn.query_timeout_s:g} s")
        return 400

    monkeypatch.setattr(tables, "count_rows", count)
    short = tables.short_tables(_program(), ConnSettings(driver="mysql"))
    assert [(r.name, r.found, r.asked) for r in short] == [("sbtest2", 400, 1000)]
    assert set(seen) == {tables.RUN_COUNT_LIMIT_S}


def test_an_unreachable_server_is_an_error_not_a_skip(monkeypatch):
    def count(conn: ConnSettings, name: str) -> int | None:
        raise ConnectError("no reply within the connect timeout")

    monkeypatch.setattr(tables, "count_rows", count)
    with pytest.raises(ConnectError):
        tables.short_tables(_program(), ConnSettings(driver="mysql"))


def test_a_queue_the_transactions_consume_has_no_floor(monkeypatch):
    # TPC-C's delivery takes rows off new_orders that new orders add: after a peer's run (sysbench-tpcc)
    # it held 8,843 of the 9,000 rows prepare loads, and the run must not call that an interrupted prepare;
    # the tables nothing consumes keep their floor
    program = load_program("tpcc", "mysql", {"tables": "1", "scale": "1"})
    assert tables.consumed(program, 1) == {"new_orders1"}
    asked = tables.asked_rows(program, 1)

    def count(conn: ConnSettings, name: str) -> int | None:
        return asked[name].rows // 2 if name in ("new_orders1", "stock1") else asked[name].rows

    monkeypatch.setattr(tables, "count_rows", count)
    short = tables.short_tables(program, ConnSettings(driver="mysql"))
    assert [r.name for r in short] == ["stock1"]
    # oltp_read_write deletes a row and inserts it back in one transaction: not a queue
    assert tables.consumed(_program(), 1) == set()
