"""The version-selected SQL loader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchtop.sources import sql

SQL_DIR = Path(sql.__file__).parent


def test_every_sql_file_is_named_query_post_version():
    files = list(SQL_DIR.rglob("*.sql"))
    assert files
    for f in files:
        assert re.fullmatch(r"[a-z0-9_]+_post_\d{6}\.sql", f.name), f.name


def test_monitor_sql_is_read_only():
    for f in SQL_DIR.rglob("*.sql"):
        body = "\n".join(line for line in f.read_text().splitlines() if not line.lstrip().startswith("--"))
        assert body.strip().split()[0].upper() in ("SELECT", "SHOW"), f.name


def test_picks_newest_file_not_newer_than_the_server():
    assert sql.get("postgresql", "checkpoints", 170000) != sql.get("postgresql", "checkpoints", 169999)
    assert sql.get("postgresql", "checkpoints", 179999) == sql.get("postgresql", "checkpoints", 170000)


def test_unknown_query_raises():
    with pytest.raises(sql.SQLNotFound):
        sql.get("postgresql", "nope", 150000)
    assert not sql.available("postgresql", "nope", 150000)
