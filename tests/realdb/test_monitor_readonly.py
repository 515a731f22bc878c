"""Monitor mode issues only reads: proven from the servers' own statement
logs (MariaDB general log, PostgreSQL log_statement=all)."""

from __future__ import annotations

import io
import json
import re

import pytest

from benchtop.commands.monitor import main
from tests.fixtures.servers import Server

pytestmark = pytest.mark.realdb

# SELECT/SHOW, and session-only SETs (never SET GLOBAL / PERSIST).
_READ = re.compile(r"^\s*(SELECT|SHOW|BEGIN|COMMIT|ROLLBACK|START TRANSACTION READ ONLY)\b", re.I)
_SESSION_SET = re.compile(r"^\s*SET\s+(?!GLOBAL\b|PERSIST\b|PERSIST_ONLY\b|@@global\.)", re.I)


def _is_read(statement: str) -> bool:
    """
    >>> [_is_read(s) for s in ("SELECT 1", "SHOW GLOBAL STATUS", "SET SESSION max_statement_time = 2",
    ...                        "SET GLOBAL general_log = ON", "UPDATE t SET a = 1", "select * from x_reset",
    ...                        "BEGIN READ ONLY; SET LOCAL lock_timeout = 1; SELECT 1", "BEGIN; UPDATE t SET a = 1")]
    [True, True, True, False, False, True, True, False]
    """
    body = "\n".join(line for line in statement.splitlines() if not line.lstrip().startswith("--"))
    # several statements sent as one (a transaction's opening and its query): each must read
    return all(_READ.match(part) or _SESSION_SET.match(part) for part in body.split(";") if part.strip())


def test_monitor_runs_only_reads(mysql_server: Server, pg_server: Server, pgbouncer_server: Server) -> None:
    out = io.StringIO()
    with mysql_server.statement_log() as mylog, pg_server.statement_log() as pglog:
        rc = main(
            [
                "--mysql",
                mysql_server.dsn(),
                "--pgsql",
                pg_server.dsn(),
                "--pgbouncer",
                pgbouncer_server.dsn(),
                "--headless",
                "--json",
                "--count",
                "3",
                "--interval",
                "0.3",
            ],
            out=out,
        )
        my_statements = mylog.statements(user=mysql_server.user)
        pg_statements = pglog.statements(user=pg_server.user)
    assert rc == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 3
    for line in lines:
        assert {s["kind"] for s in line["sources"].values()} >= {"mysql", "postgresql", "pgbouncer"}
        assert all(s["ok"] for s in line["sources"].values()), line
    # the monitor did talk to both servers, and only read
    assert any("performance_schema" in s for s in my_statements)
    assert any("pg_stat_bgwriter" in s or "pg_stat_checkpointer" in s for s in pg_statements)
    # every query behind the top lists ran, and only read
    for needle in ("information_schema.PROCESSLIST", "events_statements_summary_by_digest", "INNODB_LOCK_WAITS"):
        assert any(needle in s for s in my_statements), needle
    for needle in ("pg_blocking_pids", "pg_stat_statements", "pg_statio_user_tables", "pg_statio_user_indexes",
                   "pg_stat_progress_vacuum"):  # fmt: skip
        assert any(needle in s for s in pg_statements), needle
    writes = [s for s in my_statements + pg_statements if not _is_read(s)]
    assert writes == []
    # no statistics reset called (reading a view's stats_reset column is a read)
    assert not any(re.search(r"_reset\s*\(", s) for s in my_statements + pg_statements)
    # tagged, so the lists can leave the monitor's own work out
    parts = [p.strip() for s in my_statements + pg_statements for p in s.split(";") if p.strip()]
    untagged = [p for p in parts if _READ.match(p) and "benchtop-monitor" not in p
                and p.split()[0].upper() in ("SELECT", "SHOW")]  # fmt: skip
    assert untagged == []
    for line in lines:
        mysql, pg, bouncer = (line["sources"][k] for k in ("mysql", "postgresql", "pgbouncer"))
        assert isinstance(mysql["processlist"], list) and isinstance(mysql["locks"], list)
        assert isinstance(mysql["top_statements"], list)
        assert isinstance(pg["activity"], list) and isinstance(pg["top_statements"], list)
        assert isinstance(pg["tables"], list)
        assert all(isinstance(bouncer[k], list) for k in ("pools", "stats", "clients", "servers"))
        own = [r for r in mysql["processlist"] + pg["activity"] if "benchtop-monitor" in str(r.get("query"))]
        assert own == []


def test_required_panels_are_present(mysql_server: Server, pg_server: Server, pgbouncer_server: Server) -> None:
    out = io.StringIO()
    argv = ["--mysql", mysql_server.dsn(), "--pgsql", pg_server.dsn(), "--pgbouncer", pgbouncer_server.dsn()]
    assert main(argv + ["--headless", "--json", "--count", "2", "--interval", "0.3", "--no-os"], out=out) == 0
    last = json.loads(out.getvalue().splitlines()[-1])["sources"]
    assert set(last) == {"mysql", "postgresql", "pgbouncer"}
    assert {"lsn", "checkpoint_lsn", "checkpoint_age_bytes", "dirty_pages_pct"} <= set(last["mysql"]["innodb"])
    assert isinstance(last["mysql"]["waits"], list)
    assert {"checkpoints", "wal_bytes_per_s", "cache_hit_ratio"} <= set(last["postgresql"])
    assert isinstance(last["pgbouncer"]["pools"], list) and "cl_active" in last["pgbouncer"]["pools"][0]
