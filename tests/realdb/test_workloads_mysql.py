"""TPC-C and TPC-B on the harness's MariaDB: a multi-threaded TPC-C run
leaves the database consistent; pgbench's script keeps its balances."""

from __future__ import annotations

import subprocess

import pytest

from benchtop.commands.check import main as check_main
from tests.e2e.conftest import run_benchtop
from tests.fixtures.servers import mysql_connect

pytestmark = pytest.mark.realdb

TPCC = ["--workload", "tpcc", "--scale", "2", "--customers", "300", "--items", "1000"]


def bt(server, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    dsn = f"mysql://{server.user}@{server.host}:{server.port}/{server.database}"
    return run_benchtop(*args, "--engine", "mysql", "--dsn", dsn, env={"MYSQL_PWD": server.password}, timeout=timeout)


def ok(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_tpcc_multithreaded_run_is_consistent(mysql_server, monkeypatch, capsys) -> None:
    bt(mysql_server, "cleanup", *TPCC)
    ok(bt(mysql_server, "prepare", *TPCC, "--threads", "2"))
    try:
        out = ok(bt(mysql_server, "--headless", *TPCC, "--time", "2", "--threads", "4", "--trx-level", "RC"))
        assert int(out.split("total number of events:")[1].split()[0]) > 50
        monkeypatch.setenv("MYSQL_PWD", mysql_server.password)
        dsn = f"mysql://{mysql_server.user}@{mysql_server.host}:{mysql_server.port}/{mysql_server.database}"
        capsys.readouterr()
        assert check_main(["--engine", "mysql", "--dsn", dsn, *TPCC]) == 0
        assert "11 of 11 checks passed" in capsys.readouterr().out
        with mysql_connect(mysql_server) as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.table_constraints "
                        "WHERE constraint_type = 'FOREIGN KEY' AND table_schema = DATABASE() AND table_name LIKE '%%1'")
            assert cur.fetchone()[0] == 10  # --use-fk (default on), as sysbench-tpcc
    finally:
        bt(mysql_server, "cleanup", *TPCC)


def test_tpcb_balances_add_up(mysql_server) -> None:
    bt(mysql_server, "cleanup", "--workload", "tpcb")
    ok(bt(mysql_server, "prepare", "--workload", "tpcb", "--threads", "2"))
    try:
        ok(bt(mysql_server, "--headless", "--workload", "tpcb", "--time", "1", "--threads", "2"))
        ok(bt(mysql_server, "--headless", "--workload", "tpcb-select-only", "--time", "1", "--threads", "2"))
        with mysql_connect(mysql_server) as conn, conn.cursor() as cur:
            cur.execute("SELECT (SELECT SUM(abalance) FROM pgbench_accounts), (SELECT SUM(tbalance) FROM pgbench_tellers),"
                        " (SELECT SUM(bbalance) FROM pgbench_branches), (SELECT SUM(delta) FROM pgbench_history),"
                        " (SELECT COUNT(*) FROM pgbench_history)")
            a, t, b, h, n = cur.fetchone()
        assert n > 10 and a == t == b == h
    finally:
        bt(mysql_server, "cleanup", "--workload", "tpcb")


def test_linkbench_at_a_rate_keeps_counts(mysql_server, monkeypatch, capsys) -> None:
    wl = ["--workload", "linkbench", "--nodes", "2000"]
    bt(mysql_server, "cleanup", *wl)
    ok(bt(mysql_server, "prepare", *wl, "--threads", "2"))
    try:
        out = ok(bt(mysql_server, "--headless", *wl, "--time", "2", "--threads", "4", "--rate", "500",
                    "--arrival", "poisson"))
        assert 700 <= int(out.split("total number of events:")[1].split()[0]) <= 1300
        monkeypatch.setenv("MYSQL_PWD", mysql_server.password)
        dsn = f"mysql://{mysql_server.user}@{mysql_server.host}:{mysql_server.port}/{mysql_server.database}"
        capsys.readouterr()
        assert check_main(["--engine", "mysql", "--dsn", dsn, *wl]) == 0
        assert "1 of 1 checks passed" in capsys.readouterr().out
    finally:
        bt(mysql_server, "cleanup", *wl)
