"""The ProxySQL stand-in is faithful to a real ProxySQL 2.7.1 admin capture."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pymysql
import pytest

from tests.proxysql_standin import Standin, start_standin
from tests.proxysql_standin.schema import VERSION

# The capture from a real ProxySQL 2.7.1: ../shared/reference when it is beside
# the checkout, else the copy kept with the stand-in.
_SHARED = Path(__file__).resolve().parents[3] / "shared" / "reference" / "proxysql-admin-capture.txt"
_KEPT = Path(__file__).resolve().parents[1] / "proxysql_standin" / "proxysql-admin-capture.txt"
CAPTURE = _SHARED if _SHARED.is_file() else _KEPT
_VAR_STRING = 253


@dataclass(frozen=True)
class Capture:
    columns: dict[str, list[str]]  # per table, as SELECT * returned them
    show_tables: list[str]  # SHOW TABLES FROM stats
    creates: dict[str, str]  # SHOW CREATE TABLE text per table
    global_names: list[str]  # stats_mysql_global Variable_Name, in order


def _parse_capture(text: str) -> Capture:
    columns: dict[str, list[str]] = {}
    show_tables: list[str] = []
    global_names: list[str] = []
    for block in re.split(r"^mysql> ", text, flags=re.M)[1:]:
        query, _, body = block.partition("\n")
        first_column = re.findall(r"^\| (\w+)\s+\|", body, flags=re.M)[1:]  # [0] is the header
        if query.startswith("SHOW TABLES FROM stats"):
            show_tables = first_column
            continue
        if query == "SELECT * FROM stats_mysql_global;":
            global_names = first_column
        m = re.match(r"SELECT \* FROM (?:stats\.)?(\w+)", query)
        if not m:
            continue
        if "columns returned" in body:
            cols = re.findall(r"^\s+\d+\. (\w+)$", body, flags=re.M)
        else:
            header = next(line for line in body.splitlines() if line.startswith("|"))
            cols = [c.strip() for c in header.strip("|").split("|")]
        columns.setdefault(m.group(1), cols)
    creates = dict(re.findall(r"table: (\w+)\nCreate Table: (CREATE TABLE .*?)\n(?=\*{5}|\n)", text, flags=re.S))
    return Capture(columns, show_tables, creates, global_names)


needs_capture = pytest.mark.skipif(not CAPTURE.is_file(), reason=f"{CAPTURE} not present")


@pytest.fixture(scope="module")
def capture() -> Capture:
    return _parse_capture(CAPTURE.read_text())


@pytest.fixture
def standin():
    s = start_standin()
    yield s
    s.stop()


def _connect(s: Standin, user: str = "admin", password: str = "admin") -> pymysql.connections.Connection:
    return pymysql.connect(host=s.host, port=s.port, user=user, password=password, autocommit=True, read_timeout=5)


def _query(conn, sql: str) -> tuple[list[str], list[tuple]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return [d[0] for d in cur.description or ()], list(cur.fetchall())


@needs_capture
def test_capture_parser_found_every_part(capture):
    assert {"stats_mysql_connection_pool", "stats_mysql_processlist", "stats_mysql_errors"} <= capture.columns.keys()
    assert len(capture.show_tables) == 24
    assert len(capture.creates) == 5
    assert capture.global_names[0] == "ProxySQL_Uptime" and len(capture.global_names) > 100


@needs_capture
def test_show_tables_from_stats_equals_capture(standin, capture):
    with _connect(standin) as conn:
        names, rows = _query(conn, "SHOW TABLES FROM stats")
    assert names == ["tables"]
    assert [r[0] for r in rows] == capture.show_tables


@needs_capture
def test_every_captured_table_has_the_same_columns_in_order(standin, capture):
    with _connect(standin) as conn:
        for table, expected in capture.columns.items():
            names, _ = _query(conn, f"SELECT * FROM stats.{table}")
            assert names == expected, table


@needs_capture
def test_show_create_table_is_byte_identical(standin, capture):
    with _connect(standin) as conn:
        for table, expected in capture.creates.items():
            names, rows = _query(conn, f"SHOW CREATE TABLE stats.{table}")
            assert names == ["table", "Create Table"]
            assert rows == [(table, expected)], table


@needs_capture
def test_global_status_variables_equal_capture(standin, capture):
    with _connect(standin) as conn:
        # SELECT * scans in insertion order, as the capture did (selecting
        # Variable_Name alone would walk the primary key index instead).
        names, rows = _query(conn, "SELECT * FROM stats_mysql_global")
    assert [r[names.index("Variable_Name")] for r in rows] == capture.global_names


def test_version_queries(standin):
    with _connect(standin) as conn:
        assert _query(conn, "SELECT @@admin-version") == (["@@admin-version"], [(VERSION,)])
        assert _query(conn, "SELECT version()") == (["version()"], [(VERSION,)])
    assert VERSION == "2.7.1-16-g2726c27"


def test_values_are_strings_null_is_null_and_columns_are_var_string(standin):
    standin.simulate_traffic(1.0)
    with _connect(standin) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM stats_mysql_processlist")
        assert {d[1] for d in cur.description} == {_VAR_STRING}
        rows = [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
    assert rows and all(r["extended_info"] is None for r in rows)
    assert all(isinstance(v, str) for r in rows for k, v in r.items() if k != "extended_info")
    assert rows[0]["time_ms"].isdigit()


def test_empty_result_set_still_has_columns(standin):
    with _connect(standin) as conn:
        names, rows = _query(conn, "SELECT * FROM stats_mysql_errors")
    assert rows == [] and names[:3] == ["hostgroup", "hostname", "port"]


def test_reading_a_reset_table_returns_then_zeroes_counters(standin):
    standin.simulate_traffic(2.0)
    with _connect(standin) as conn:
        _, before = _query(conn, "SELECT Queries, ConnUsed FROM stats.stats_mysql_connection_pool_reset")
        _, after = _query(conn, "SELECT Queries, ConnUsed FROM stats.stats_mysql_connection_pool")
        _, digests = _query(conn, "SELECT count_star FROM stats_mysql_query_digest_reset")
        _, digests_after = _query(conn, "SELECT count_star FROM stats_mysql_query_digest")
    assert sum(int(q) for q, _ in before) > 0
    assert [q for q, _ in after] == ["0"] * len(after)
    assert [u for _, u in after] == [u for _, u in before]  # gauges survive
    assert digests and digests_after == []


def test_admin_reads_runtime_tables_stats_user_cannot(standin):
    with _connect(standin) as conn:
        names, rows = _query(conn, "SELECT * FROM runtime_mysql_servers")
    assert names[:4] == ["hostgroup_id", "hostname", "port", "gtid_port"] and rows
    with _connect(standin, "stats", "stats") as conn:
        _, glob = _query(conn, "SELECT * FROM stats.stats_mysql_global")
        assert glob
        with pytest.raises(pymysql.MySQLError) as exc:
            _query(conn, "SELECT * FROM runtime_mysql_servers")
    assert exc.value.args == (1045, "ProxySQL Admin Error: no such table: runtime_mysql_servers")


def test_bad_sql_and_unknown_tables_give_proxysql_errors(standin):
    with _connect(standin) as conn:
        with pytest.raises(pymysql.MySQLError) as exc:
            _query(conn, "SELEKT 1")
        assert exc.value.args == (1045, 'ProxySQL Admin Error: near "SELEKT": syntax error')
        with pytest.raises(pymysql.MySQLError) as exc:
            _query(conn, "SELECT * FROM stats_nope")
        assert exc.value.args[1] == "ProxySQL Admin Error: no such table: stats_nope"
        assert _query(conn, "SELECT 1") == (["1"], [("1",)])  # the session survives errors


def test_wrong_password_is_refused(standin):
    with pytest.raises(pymysql.err.OperationalError) as exc:
        _connect(standin, "admin", "wrong")
    assert exc.value.args[0] == 1045


def test_ping_init_db_and_queries_seen(standin):
    with _connect(standin) as conn:
        conn.ping(reconnect=False)
        conn.select_db("stats")
        _query(conn, "SELECT * FROM stats_mysql_users")
    assert "SELECT * FROM stats_mysql_users" in standin.queries_seen


def test_execute_shapes_tables_and_hostgroup_pool_is_optional(standin):
    standin.execute("UPDATE stats_mysql_connection_pool SET status = 'SHUNNED' WHERE srv_host = '10.0.0.3'")
    with _connect(standin) as conn:
        _, rows = _query(conn, "SELECT status FROM stats_mysql_connection_pool WHERE srv_host = '10.0.0.3'")
        _, tables = _query(conn, "SHOW TABLES FROM stats")
    assert rows == [("SHUNNED",)]
    assert ("stats_mysql_hostgroup_connection_pool",) not in tables
    with start_standin(hostgroup_pool=True) as other, _connect(other) as conn:
        _, tables = _query(conn, "SHOW TABLES FROM stats")
    assert ("stats_mysql_hostgroup_connection_pool",) in tables


def test_stop_drops_connected_clients(standin):
    conn = _connect(standin)
    standin.stop()
    with pytest.raises(pymysql.err.OperationalError):
        _query(conn, "SELECT 1")
