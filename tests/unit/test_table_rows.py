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
