"""The native MySQL and PostgreSQL drivers end to end, through the command
line, against the harness's real servers."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import run_benchtop
from tests.fixtures.servers import mysql_admin_exec, pg_admin_exec

pytestmark = pytest.mark.realdb

OLTP = ["oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp_point_select", "oltp_update_index",
        "oltp_update_non_index", "oltp_insert", "oltp_delete", "select_random_points", "select_random_ranges"]
SIZE = ["--tables", "2", "--table-size", "2000"]


def engine_of(server) -> str:
    return "mysql" if server.kind == "mysql" else "postgres"


def bt(server, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """benchtop against a fixture server, password through the environment."""
    scheme = "mysql" if server.kind == "mysql" else "postgresql"
    dsn = f"{scheme}://{server.user}@{server.host}:{server.port}/{server.database}"
    env = {"MYSQL_PWD": server.password} if server.kind == "mysql" else {"PGPASSWORD": server.password}
    return run_benchtop(*args, "--engine", engine_of(server), "--dsn", dsn, env=env, timeout=timeout)


def summary_of(res: subprocess.CompletedProcess[str]) -> dict:
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=["mysql", "postgresql"])
def prepared(request):
    server = request.getfixturevalue("mysql_server" if request.param == "mysql" else "pg_server")
    res = bt(server, "cleanup", *SIZE)
    res = bt(server, "prepare", *SIZE, "--threads", "2")
    assert res.returncode == 0, res.stderr
    yield server
    bt(server, "cleanup", *SIZE)


@pytest.mark.parametrize("workload", OLTP)
def test_each_oltp_workload_runs_prepared(prepared, workload: str) -> None:
    # 200 transactions (tenths of a second; --time only as a bound): every statement of the
    # workload has run many times over, with no need to wait out a second each
    s = summary_of(bt(prepared, "--headless", "--json", "--time", "30", "--events", "200", "--threads", "2",
                      "--workload", workload, *SIZE))
    assert s["transactions"] > 0 and s["errors_by_kind"].get("fatal", 0) == 0
    if workload == "oltp_delete":
        # the tables may now hold fewer rows than asked, which the next run
        # would refuse: the next workloads get them as prepared
        bt(prepared, "cleanup", *SIZE)
        assert bt(prepared, "prepare", *SIZE, "--threads", "2").returncode == 0


@pytest.mark.parametrize("workload", ["oltp_read_write", "oltp_insert"])
def test_text_protocol(prepared, workload: str) -> None:
    s = summary_of(bt(prepared, "--headless", "--json", "--time", "30", "--events", "200", "--threads", "2", "--no-prepare",
                      "--workload", workload, *SIZE))
    assert s["transactions"] > 0


def test_read_write_statement_mix(prepared) -> None:
    s = summary_of(bt(prepared, "--headless", "--json", "--time", "30", "--events", "200", "--workload", "oltp_read_write", *SIZE))
    n = s["transactions"]
    assert s["reads"] == 14 * n and s["writes"] == 4 * n and s["other"] == 2 * n


def test_missing_tables_tell_to_prepare(prepared) -> None:
    res = bt(prepared, "--headless", "--time", "1", "--tables", "9")
    assert res.returncode == 1
    assert "benchtop prepare" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_wrong_password_is_one_line(prepared) -> None:
    scheme = "mysql" if prepared.kind == "mysql" else "postgresql"
    res = run_benchtop("--headless", "--time", "1", "--engine", engine_of(prepared), "--dsn",
                       f"{scheme}://{prepared.user}:wrong-pw@{prepared.host}:{prepared.port}/{prepared.database}")
    assert res.returncode == 1
    assert res.stderr.startswith("benchtop: error: cannot connect") and "wrong-pw" not in res.stderr


DEADLOCK = """
[[transaction]]
name = "forward"
script = '''
exec begin: BEGIN
exec write: UPDATE bt_dl SET v = v + 1 WHERE id = 1
sleep 3000
exec write: UPDATE bt_dl SET v = v + 1 WHERE id = 2
exec commit: COMMIT
'''

[[transaction]]
name = "backward"
script = '''
exec begin: BEGIN
exec write: UPDATE bt_dl SET v = v + 1 WHERE id = 2
sleep 3000
exec write: UPDATE bt_dl SET v = v + 1 WHERE id = 1
exec commit: COMMIT
'''
"""


def test_deadlocks_are_rolled_back_retried_and_counted(prepared, tmp_path: Path) -> None:
    admin = mysql_admin_exec if prepared.kind == "mysql" else pg_admin_exec
    admin(prepared, "DROP TABLE IF EXISTS bt_dl")
    admin(prepared, "CREATE TABLE bt_dl (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    admin(prepared, "INSERT INTO bt_dl VALUES (1, 0), (2, 0)")
    grant = ("GRANT ALL ON sbtest.bt_dl TO 'sbtest'@'%'" if prepared.kind == "mysql"
             else "GRANT ALL ON bt_dl TO sbtest")
    admin(prepared, grant)
    if prepared.kind == "postgresql":
        # PostgreSQL looks for a deadlock after deadlock_timeout (1 s): four workers can chain one deadlock into the
        # next for the whole run, so that none commits (CI: 3 s, deadlocks but 0 transactions); 100 ms keeps the
        # chains short
        admin(prepared, f"ALTER ROLE \"{prepared.user}\" SET deadlock_timeout = '100ms'")
    wl = tmp_path / "deadlock.toml"
    wl.write_text(DEADLOCK)
    try:
        # InnoDB finds a deadlock at once, PostgreSQL after its deadlock_timeout: a few of them each way
        seconds = "1" if prepared.kind == "mysql" else "3"
        s = summary_of(bt(prepared, "--headless", "--json", "--time", seconds, "--threads", "4", "--workload", str(wl)))
        assert s["errors_by_kind"].get("deadlock", 0) > 0
        assert s["transactions"] > 0
        # every committed transaction added exactly 2: nothing half-done was committed (those that
        # committed after the end are counted unfinished, not done, yet the server has them)
        rows = admin(prepared, "SELECT SUM(v) FROM bt_dl")
        total = int(rows[0][0])
        assert total % 2 == 0 and 2 * s["transactions"] <= total <= 2 * (s["transactions"] + s["unfinished"])
    finally:
        admin(prepared, "DROP TABLE IF EXISTS bt_dl")
        if prepared.kind == "postgresql":
            admin(prepared, f'ALTER ROLE "{prepared.user}" RESET deadlock_timeout')


def _benchtop_sessions(server) -> int:
    if server.kind == "mysql":
        return len(mysql_admin_exec(server, "SELECT id FROM information_schema.processlist WHERE user = 'sbtest'"))
    return len(pg_admin_exec(server, "SELECT pid FROM pg_stat_activity WHERE usename = 'sbtest' "
                                     "AND pid <> pg_backend_pid()"))


def _kill_benchtop_sessions(server) -> int:
    if server.kind == "mysql":
        rows = mysql_admin_exec(server, "SELECT id FROM information_schema.processlist WHERE user = 'sbtest'")
        for (pid,) in rows:
            try:
                mysql_admin_exec(server, f"KILL {int(pid)}")
            except Exception:  # noqa: BLE001 - the session may already be gone
                pass
        return len(rows)
    rows = pg_admin_exec(server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE usename = 'sbtest' AND pid <> pg_backend_pid()")
    return len(rows)


def test_killed_connections_reconnect_and_the_run_goes_on(prepared, tmp_path: Path) -> None:
    from tests.realdb.test_faults import intervals_of, start_run, stop_once

    out = tmp_path / "res"
    proc = start_run(prepared, out, 60, *SIZE, "--no-monitor")
    killed: list[int] = []
    try:
        # once both workers hold their connection (on a loaded machine that can take seconds)
        deadline = time.monotonic() + 10
        while _benchtop_sessions(prepared) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        killed.append(_kill_benchtop_sessions(prepared))
        at_kill = len(intervals_of(out))

        def going_on() -> bool:  # an interval begun after the kill, with both workers back and transactions
            ivs = intervals_of(out)
            return len(ivs) >= at_kill + 2 and ivs[-1]["tps"] > 0 and ivs[-1].get("connected", 2) == 2
        # ended once it has gone on (a SIGTERM), not by a --time long enough for it
        stdout, stderr = stop_once(proc, going_on)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    s = json.loads(stdout.strip().splitlines()[-1])
    assert killed and killed[0] >= 2
    assert s["reconnects"] >= 2 and s["transactions"] > 0
    assert s["errors_by_kind"].get("lost_connection", 0) >= 1


def test_reconnect_every_transaction_measures_connect_time(prepared) -> None:
    s = summary_of(bt(prepared, "--headless", "--json", "--time", "1", "--reconnect", "1",
                      "--workload", "oltp_point_select", *SIZE))
    assert s["connects"] >= s["transactions"] > 0
    assert s["connect_ms_avg"] > 0


def test_pipeline_mode(pg_server) -> None:
    bt(pg_server, "prepare", "--tables", "1", "--table-size", "1000")
    s = summary_of(bt(pg_server, "--headless", "--json", "--time", "1", "--pipeline", "--tables", "1",
                      "--table-size", "1000"))
    assert s["transactions"] > 0


def test_through_pgbouncer_transaction_pooling(pg_server, pgbouncer_server) -> None:
    bt(pg_server, "prepare", "--tables", "1", "--table-size", "1000")
    dsn = f"postgresql://{pgbouncer_server.user}@{pgbouncer_server.host}:{pgbouncer_server.port}/sbtest"
    res = run_benchtop("--headless", "--json", "--events", "400", "--time", "30", "--threads", "4", "--engine", "postgres",
                       "--dsn", dsn, "--workload", "oltp_read_write", "--tables", "1", "--table-size", "1000",
                       env={"PGPASSWORD": pgbouncer_server.password})
    s = summary_of(res)
    assert s["transactions"] > 0 and s["errors_by_kind"].get("fatal", 0) == 0


def test_several_hosts_run_against_the_one_that_answered_and_name_it(pg_server, tmp_path: Path) -> None:
    """issue 41: a DSN naming several servers; the header, the summary and config.json name the one reached."""
    bt(pg_server, "prepare", "--tables", "1", "--table-size", "1000")
    reached = f"{pg_server.host}:{pg_server.port}"
    dsn = f"postgresql://{pg_server.user}@{pg_server.host}:1,{reached}/{pg_server.database}"
    out = tmp_path / "run"
    res = run_benchtop("--headless", "--time", "1", "--engine", "postgres", "--dsn", dsn, "--tables", "1",
                       "--table-size", "1000", "--out", str(out), env={"PGPASSWORD": pg_server.password})
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].startswith(f"benchtop postgresql://{pg_server.user}@{reached}/"), res.stdout
    target = json.loads((out / "config.json").read_text())["target"]
    assert target["reached"] == reached and target["servers"] == [f"{pg_server.host}:1", reached]
    assert (target["host"], target["port"]) == (pg_server.host, pg_server.port)


SYSBENCH = shutil.which("sysbench")


def _sysbench(server, *args: str) -> subprocess.CompletedProcess[str]:
    if server.kind == "mysql":
        conn = ["--db-driver=mysql", f"--mysql-host={server.host}", f"--mysql-port={server.port}",
                f"--mysql-user={server.user}", f"--mysql-password={server.password}", f"--mysql-db={server.database}"]
    else:
        conn = ["--db-driver=pgsql", f"--pgsql-host={server.host}", f"--pgsql-port={server.port}",
                f"--pgsql-user={server.user}", f"--pgsql-password={server.password}", f"--pgsql-db={server.database}"]
    return subprocess.run([SYSBENCH, *args, *conn], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(SYSBENCH is None, reason="sysbench not installed (apt-get install sysbench)")
def test_sysbench_runs_on_benchtop_tables_and_back(prepared) -> None:
    res = _sysbench(prepared, "oltp_read_write", "--tables=2", "--table-size=2000", "--time=1", "run")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "transactions:" in res.stdout
    bt(prepared, "cleanup", *SIZE)
    res = _sysbench(prepared, "oltp_read_write", "--tables=2", "--table-size=2000", "prepare")
    assert res.returncode == 0, res.stdout + res.stderr
    s = summary_of(bt(prepared, "--headless", "--json", "--time", "30", "--events", "200", "--workload", "oltp_read_write", *SIZE))
    assert s["transactions"] > 0
    s = summary_of(bt(prepared, "--headless", "--json", "--time", "30", "--events", "200", "--workload", "oltp_insert", *SIZE))
    assert s["transactions"] > 0


CAPTURE = """
[[transaction]]
name = "capture"
script = '''
set lo = uniform(1, 200)
exec read -> got: SELECT id FROM bt_cap WHERE id >= :lo ORDER BY id
set d = got - lo
exec write: INSERT INTO bt_cap_log (d) VALUES (:d)
exec read: SELECT id, v FROM bt_cap WHERE id >= :lo ORDER BY id
exec read: SELECT id, REPEAT(v, 1000) FROM bt_cap WHERE id <= 3
exec read -> n: SELECT COUNT(*) FROM bt_cap
set d = n - 300
exec write: INSERT INTO bt_cap_log (d) VALUES (:d)
'''
"""


def test_captures_read_the_first_row_and_unread_rows_are_skipped(prepared, tmp_path: Path) -> None:
    """The MySQL driver fetches only a capture's first row and skips every
    other row of a result unparsed: the values captured must be right and the
    connection must stay in step with the server (an unread row left behind
    would be taken for the next statement's reply), rows of 90 kB (longer
    than the library's read-ahead cache) included."""
    admin = mysql_admin_exec if prepared.kind == "mysql" else pg_admin_exec
    for t in ("bt_cap", "bt_cap_log"):
        admin(prepared, f"DROP TABLE IF EXISTS {t}")
    admin(prepared, "CREATE TABLE bt_cap (id INTEGER PRIMARY KEY, v VARCHAR(100) NOT NULL)")
    admin(prepared, "CREATE TABLE bt_cap_log (d INTEGER NOT NULL)")
    values = ", ".join(f"({i}, '{'x' * 90}')" for i in range(1, 301))
    admin(prepared, f"INSERT INTO bt_cap VALUES {values}")
    for t in ("bt_cap", "bt_cap_log"):
        admin(prepared, f"GRANT ALL ON sbtest.{t} TO 'sbtest'@'%'" if prepared.kind == "mysql"
              else f"GRANT ALL ON {t} TO sbtest")
    wl = tmp_path / "capture.toml"
    wl.write_text(CAPTURE)
    try:
        s = summary_of(bt(prepared, "--headless", "--json", "--time", "1", "--threads", "2", "--workload", str(wl),
                          "--no-monitor"))
        assert s["transactions"] > 0 and s["errors"] == 0
        count, total, worst = admin(prepared, "SELECT COUNT(*), SUM(d), MAX(ABS(d)) FROM bt_cap_log")[0]
        # two rows a transaction; those that committed after the end are counted unfinished
        assert int(count) % 2 == 0 and 2 * s["transactions"] <= int(count) <= 2 * (s["transactions"] + s["unfinished"])
        assert int(total) == 0 and int(worst) == 0
    finally:
        for t in ("bt_cap", "bt_cap_log"):
            admin(prepared, f"DROP TABLE IF EXISTS {t}")


@pytest.mark.parametrize("kind", ["postgresql", "mysql"])
def test_a_dsns_socket_and_port_parameters_reach_that_server(request, kind: str, tmp_path: Path) -> None:
    # issue 41: postgresql://u@/db?host=DIR&port=P ran against 127.0.0.1:5432, another server
    server = request.getfixturevalue("pg_server" if kind == "postgresql" else "mysql_server")
    if not server.socket:
        pytest.skip("an external server: no socket known")
    # a workload of its own that needs no tables: the suite's other modules prepare theirs at other sizes
    workload = tmp_path / "select1.toml"
    workload.write_text('[workload]\nname = "select1"\n[[transaction]]\nname = "one"\nscript = "exec read: SELECT 1"\n')
    if kind == "postgresql":
        dsn = f"postgresql://{server.user}@/{server.database}?host={server.socket}&port={server.port}"
        reached = f"{server.socket.rstrip('/')}/.s.PGSQL.{server.port}"
    else:
        dsn = f"mysql://{server.user}@/{server.database}?socket={server.socket}"
        reached = server.socket
    env = {"MYSQL_PWD": server.password} if kind == "mysql" else {"PGPASSWORD": server.password}
    res = run_benchtop("--headless", "--json", "--engine", engine_of(server), "--dsn", dsn,
                       "--workload", str(workload), "--time", "1",
                       "--out", str(tmp_path / "run"), env=env)
    assert summary_of(res)["transactions"] > 0
    assert json.loads((tmp_path / "run" / "config.json").read_text())["target"]["servers"] == [reached]
