"""`benchtop ab` on the harness's MariaDB: an A/A comparison and one whose
sides differ in a server setting, a few rounds of 1 s each.  ab.json has
its shape, each round's order is the order its runs really started in,
every round's results folder is on disk, and the setting is the side's
during its runs and the server's own again afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchtop.target.leftovers import ChangeRecord
from tests.fixtures.servers import Server, mysql_admin_exec

pytestmark = pytest.mark.realdb

ROOT = Path(__file__).parents[2]
SIZE = ["--tables", "1", "--table-size", "1000"]
OUTCOMES = {"b_faster", "b_slower", "no_difference", "undecided"}


def _benchtop(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MYSQL_PWD=server.password or "")
    return subprocess.run([sys.executable, "-m", "benchtop", *args, "--engine", "mysql", "--dsn", server.dsn(), *SIZE],
                          capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def mysql_tables(mysql_server: Server) -> Server:
    res = _benchtop(mysql_server, "prepare", "--workload", "oltp_point_select")
    assert res.returncode == 0 or "already" in res.stderr, res.stderr
    return mysql_server


def _ab(server: Server, out: Path, rounds: int, seed: int, *args: str) -> dict:
    res = _benchtop(server, "ab", "--headless", "--workload", "oltp_point_select", "--threads", "2",
                    "--rounds", str(rounds), "--round-time", "1", "--warmup", "0.2", "--monitor-interval", "1",
                    "--seed", str(seed), "--out", str(out), *args)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len([line for line in lines if line.startswith("round ")]) == rounds, res.stdout
    assert any(line.startswith(("B is ", "no difference")) for line in lines), res.stdout
    ab = json.loads((out / "ab.json").read_text())["ab"]
    assert ab["verdict"] in OUTCOMES and ab["complete"] and ab["seed"] == seed
    tps = ab["metrics"]["tps"]
    assert {"ratio", "ci_low", "ci_high", "p_value", "verdict"} <= set(tps) and tps["ratio"] > 0
    assert {"p50_ms", "p95_ms", "p99_ms", "errors"} <= set(ab["metrics"])
    assert len(ab["rounds"]) == rounds
    for r in ab["rounds"]:
        assert sorted(r["order"]) == ["a", "b"]
        started = {}
        for side in "ab":
            folder = out / f"round-{r['round']:02d}-{side}"
            assert r[side]["folder"] == folder.name and r[side]["tps"] > 0
            started[side] = json.loads((folder / "summary.json").read_text())["started_at"]
        first, second = r["order"]
        assert started[first] < started[second]  # the order recorded is the order run
    return ab


def test_an_a_a_comparison(mysql_tables: Server, tmp_path: Path) -> None:
    ab = _ab(mysql_tables, tmp_path / "aa", 2, 1, "--a", "", "--b", "")
    assert ab["metrics"]["tps"]["ci_low"] is None  # two rounds: too few for a 95% interval
    assert ab["verdict"] == "undecided"
    # seed 1 draws both orders in two rounds
    assert {tuple(r["order"]) for r in ab["rounds"]} == {("a", "b"), ("b", "a")}
    assert ab["sides"]["a"]["verdict"]["of"] == 2


def test_a_setting_is_the_sides_during_its_runs_and_restored(mysql_tables: Server, tmp_path: Path) -> None:
    name = "innodb_flush_log_at_trx_commit"
    was = mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0]
    mysql_admin_exec(mysql_tables, f"SET GLOBAL {name} = 2")  # neither side's value
    try:
        out = tmp_path / "flush"
        ab = _ab(mysql_tables, out, 2, 5, "--admin-dsn", mysql_tables.admin_dsn(),
                 "--a", f"--set {name}=1", "--b", f"--set {name}=0")
        assert ab["sides"]["a"]["settings"] == {name: 1} and ab["sides"]["b"]["settings"] == {name: 0}
        for r in ab["rounds"]:
            for side, value in (("a", 1), ("b", 0)):
                summary = json.loads((out / r[side]["folder"] / "summary.json").read_text())
                assert summary["validity"]["settings"][name] == value
        assert mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0] == 2
        assert ChangeRecord(mysql_tables.target()).changes() == []  # nothing left for `benchtop restore`
    finally:
        mysql_admin_exec(mysql_tables, f"SET GLOBAL {name} = {was}")
