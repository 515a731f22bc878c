"""benchtop/target/pq.py against a real PostgreSQL: every query of the
PostgreSQL source gives the columns and value types psycopg gave it (the
panels were written against those), and failures carry what the source
tells apart: the SQLSTATE, and whether the connection is gone."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from psycopg.rows import dict_row

from benchtop.sources import sql
from benchtop.target.connection import libpq_conninfo, libpq_params
from benchtop.target.pq import Connection, PqError
from tests.fixtures.servers import Server, pg_admin_exec, pg_connect

pytestmark = pytest.mark.realdb

SQL_DIR = Path(sql.__file__).parent / "postgresql"
# read twice in a row, these stay the same (the others count activity)
STABLE = {"settings", "settings_all", "indexes", "replication", "statement_texts"}


def _pq(server: Server) -> Connection:
    return Connection(libpq_conninfo(libpq_params(server.target(), timeout_s=5.0)))


def _types(rows: list[dict]) -> set[tuple[str, str]]:
    return {(k, type(v).__name__) for r in rows for k, v in r.items() if v is not None}


def test_every_source_query_reads_as_psycopg_read_it(pg_server: Server) -> None:
    with pg_connect(pg_server, row_factory=dict_row) as ref, _pq(pg_server) as conn:
        assert conn.server_version == ref.info.server_version
        names = sorted({f.name.split("_post_")[0] for f in SQL_DIR.glob("*.sql")})
        ids = [r["queryid"] for r in conn.query(sql.get("postgresql", "top_statements", conn.server_version))][:3]
        checked = 0
        for name in names:
            try:
                text = sql.get("postgresql", name, conn.server_version)
            except sql.SQLNotFound:
                continue
            params = {"ids": ids} if "%(ids)s" in text else None
            want = ref.execute(text, params).fetchall()
            got = conn.query(text, params)
            assert [list(r) for r in got[:1]] == [list(r) for r in want[:1]], name
            assert _types(got) == _types(want), name
            if name in STABLE:
                assert got == want, name
            checked += 1
        assert checked >= 12 and ids


def test_a_large_result_with_nulls_empty_texts_and_non_ascii_reads_as_psycopg_read_it(pg_server: Server) -> None:
    """Its values come out of libpq in one buffer (bt_pq_pack), not one call each."""
    text = ("SELECT g AS n, CASE WHEN g % 3 = 0 THEN NULL ELSE 'é' || repeat('x', g % 5) END AS t, "
            "CASE WHEN g % 4 = 0 THEN '' END AS e, g::float8 / 7 AS f FROM generate_series(1, 2000) g")
    with pg_connect(pg_server, row_factory=dict_row) as ref, _pq(pg_server) as conn:
        got = conn.query(text)
        assert got == ref.execute(text).fetchall()
        assert {r["e"] for r in got} == {"", None} and got[2]["t"] is None and got[0]["t"] == "éx"
        assert conn.query("SELECT 1 AS a WHERE false") == []
        assert conn.query("SELECT FROM generate_series(1, 2)") == [{}, {}]


def test_a_failed_statement_keeps_the_connection_and_names_its_sqlstate(pg_server: Server) -> None:
    with _pq(pg_server) as conn:
        with pytest.raises(PqError) as err:
            conn.query("SELECT 1/0")
        assert (err.value.sqlstate, err.value.lost, str(err.value)) == ("22012", False, "division by zero")
        conn.query("BEGIN READ ONLY")
        with pytest.raises(PqError) as err:
            conn.query("CREATE TABLE pq_must_not_exist (a int)")
        assert err.value.sqlstate == "25006" and conn.in_transaction
        conn.query("ROLLBACK")
        assert not conn.in_transaction
        assert conn.query("SELECT '{1,NULL}'::int4[] AS a, 1.5::numeric AS n, true AS b") == [
            {"a": [1, None], "n": Decimal("1.5"), "b": True}]


def test_a_terminated_backend_is_a_lost_connection(pg_server: Server) -> None:
    with _pq(pg_server) as conn:
        pg_admin_exec(pg_server, "SELECT pg_terminate_backend(%s)", [conn.backend_pid])
        with pytest.raises(PqError) as err:
            conn.query("SELECT 1")
        assert err.value.lost


def test_a_refused_connection_says_why(pg_server: Server) -> None:
    target = pg_server.target()
    params = {**libpq_params(target, timeout_s=2.0), "dbname": "no_such_database_here"}
    with pytest.raises(PqError) as err:
        Connection(libpq_conninfo(params))
    assert err.value.lost and "no_such_database_here" in str(err.value)


def test_server_notices_stay_off_stderr(pg_server: Server, capfd: pytest.CaptureFixture[str]) -> None:
    # libpq's default prints them, which would land under the TUI
    with _pq(pg_server) as conn:
        conn.query("DO $$BEGIN RAISE NOTICE 'benchtop notice probe'; END$$")
        conn.query("SET LOCAL statement_timeout = 1000")  # outside a transaction: a WARNING
    assert "benchtop notice probe" not in capfd.readouterr().err
