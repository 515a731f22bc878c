"""Building sources from CLI specs."""

from __future__ import annotations

import pytest

from benchtop.sources.mysql import MySQLSource
from benchtop.sources.os import OSSource
from benchtop.sources.pgbouncer import PgBouncerSource
from benchtop.sources.postgres import PostgresSource
from benchtop.sources.registry import build_sources, is_local, parse_spec
from benchtop.target import TargetError


def test_sources_named_by_kind_and_numbered():
    sources = build_sources(
        [
            ("mysql", "mysql://a@db1:3306/x"),
            ("pgbouncer", "postgresql://u@pool:6432/pgbouncer"),
            ("mysql", "mysql://a@db2:3306/x"),
            ("postgresql", "postgresql://u@pg/x"),
        ],
        with_os=True,
    )
    assert [(s.name, type(s)) for s in sources] == [
        ("mysql", MySQLSource),
        ("pgbouncer", PgBouncerSource),
        ("mysql-2", MySQLSource),
        ("postgresql", PostgresSource),
        ("os", OSSource),
    ]
    assert sources[1].target.kind == "pgbouncer"


def test_mismatched_scheme_is_one_line_error():
    with pytest.raises(TargetError, match="--pgbouncer needs a pgbouncer:// DSN"):
        parse_spec("pgbouncer", "mysql://a@h/x")


def test_local_detection():
    assert is_local(parse_spec("mysql", "mysql://a@127.0.0.1:3306/x"))
    assert not is_local(parse_spec("mysql", "mysql://a@db.example:3306/x"))
