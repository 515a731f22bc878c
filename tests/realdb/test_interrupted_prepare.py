"""A prepare stopped by SIGTERM on MariaDB and PostgreSQL says in one line
what it left and how to go on; a run refuses the half-loaded tables (naming
table, rows found and asked); the next prepare resumes (complete tables kept,
the others loaded again) and the run then goes.  In a database of its own, so
the session's sbtest tables stay as the other tests left them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.e2e.conftest import ROOT
from tests.fixtures.dbhelpers import mysql_admin_exec, mysql_connect, pg_admin_exec, pg_connect, retry
from tests.realdb.test_run_servers import bt

pytestmark = pytest.mark.realdb
DB = "interrupted_prepare"
# enough rows that a SIGTERM sent once the first batch (10000 rows) is visible still lands while loading
# (two seconds and more of load per table here), few enough that the resumed load is short
ROWS = 60000
SIZE = ["--tables", "2", "--table-size", str(ROWS)]


@pytest.fixture(params=["mysql", "postgresql"])
def own_database(request):
    server = request.getfixturevalue("mysql_server" if request.param == "mysql" else "pg_server")
    if server.kind == "mysql":
        mysql_admin_exec(server, f"DROP DATABASE IF EXISTS {DB}")
        mysql_admin_exec(server, f"CREATE DATABASE {DB}")
        mysql_admin_exec(server, f"GRANT ALL ON {DB}.* TO '{server.user}'@'%'")
    else:
        pg_admin_exec(server, f"DROP DATABASE IF EXISTS {DB}")
        pg_admin_exec(server, f"CREATE DATABASE {DB} OWNER {server.user}")
    yield replace(server, database=DB)
    if server.kind == "mysql":
        mysql_admin_exec(server, f"DROP DATABASE IF EXISTS {DB}")
    else:
        pg_admin_exec(server, f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def rows_in(server, table: str) -> int:
    connect = mysql_connect if server.kind == "mysql" else pg_connect
    with connect(server) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {table}")
        return int(cur.fetchone()[0])


def test_sigterm_during_prepare_says_what_it_left_and_the_next_prepare_resumes(own_database) -> None:
    server = own_database
    scheme = "mysql" if server.kind == "mysql" else "postgresql"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MYSQL_PWD=server.password, PGPASSWORD=server.password)
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchtop", "prepare", "--engine", "mysql" if scheme == "mysql" else "postgres",
         "--dsn", f"{scheme}://{server.user}@{server.host}:{server.port}/{DB}", "--threads", "2", *SIZE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        retry(lambda: rows_in(server, "sbtest1") > 0, timeout=60, interval=0.1)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    last = stderr.strip().splitlines()[-1]
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert last.startswith("benchtop: prepare of oltp_read_write interrupted (SIGTERM) while loading: left "), last
    assert f"of {ROWS} rows" in last and "run the same `benchtop prepare` again to finish" in last
    assert "`benchtop cleanup`" in last

    # a run refuses the half-loaded tables in one line: table, rows found and asked
    r = bt(server, "--headless", *SIZE, "--time", "1")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"rows, not the {ROWS} this run asks for" in r.stderr and "benchtop prepare" in r.stderr

    # the next prepare resumes instead of failing on "already exists"
    r = bt(server, "prepare", *SIZE)
    assert r.returncode == 0, r.stderr
    assert "Resuming:" in r.stderr and "already exists" not in r.stderr
    assert rows_in(server, "sbtest1") == rows_in(server, "sbtest2") == ROWS
    r = bt(server, "--headless", *SIZE, "--time", "1", "--workload", "oltp_point_select")
    assert r.returncode == 0, r.stderr

    # prepared again as it is: nothing to do, and other sizes are told apart
    assert bt(server, "prepare", *SIZE).returncode == 0
    r = bt(server, "prepare", "--tables", "2", "--table-size", "1000")
    assert r.returncode == 1 and f"sbtest1 already holds {ROWS} rows, more than the 1000 asked" in r.stderr


@pytest.mark.parametrize("workload", [["--workload", "tpcb"],
                                      ["--workload", "tpcc", "--scale", "1", "--customers", "30", "--items", "100"]])
def test_prepare_again_on_complete_tables_keeps_them(own_database, workload: list[str]) -> None:
    """Indexes, keys and constraints already there (a kept table set gets
    them built again, in case the interrupted prepare had not): no error."""
    assert bt(own_database, "prepare", *workload).returncode == 0
    r = bt(own_database, "prepare", *workload)
    assert r.returncode == 0, r.stderr
    assert "already complete, kept" in r.stderr
    assert bt(own_database, "--headless", *workload, "--time", "1").returncode == 0
