"""`benchtop ab` on the harness's MariaDB: an A/A comparison and one whose
sides differ in a server setting, a few rounds of 1 s each.  ab.json has
its shape, each round's order is the order its runs really started in,
every round's results folder is on disk, and the setting is the side's
during its runs and the server's own again afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from benchtop.target.leftovers import ChangeRecord
from tests.fixtures.servers import Server, mysql_admin_exec, retry

pytestmark = [pytest.mark.realdb, pytest.mark.alone]

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
        started, turn = {}, {}
        for side in "ab":
            folder = out / f"round-{r['round']:02d}-{side}"
            assert r[side]["folder"] == folder.name and r[side]["tps"] > 0
            started[side] = json.loads((folder / "summary.json").read_text())["started_at"]
            notes = [json.loads(line)["text"] for line in (folder / "timeline.jsonl").read_text().splitlines()]
            turn[side] = next((n for n in notes if n.startswith("benchtop ab: took turns")), "")
        first, second = r["order"]
        if ab["turn_s"]:  # both ran at once, taking turns: the order recorded is which took the first
            assert "(first turn)" in turn[first] and "(second turn)" in turn[second], turn
            # half of each run's 2 s; a turn ends late when the host gives its thread no CPU in time
            assert all(abs(r[side]["ran_s"] - 1.0) < 0.25 for side in "ab"), r
        else:
            assert started[first] < started[second]  # the order recorded is the order run
    return ab


def test_an_a_a_comparison(mysql_tables: Server, tmp_path: Path) -> None:
    ab = _ab(mysql_tables, tmp_path / "aa", 2, 1, "--a", "", "--b", "")
    assert ab["metrics"]["tps"]["ci_low"] is None  # two rounds: too few for a 95% interval
    assert ab["verdict"] == "undecided"
    # seed 1 draws both orders in two rounds
    assert {tuple(r["order"]) for r in ab["rounds"]} == {("a", "b"), ("b", "a")}
    assert ab["sides"]["a"]["verdict"]["of"] == 2
    assert ab["turn_s"] == 0.1  # sides that set no settings take turns


def test_a_setting_is_the_sides_during_its_runs_and_restored(mysql_tables: Server, tmp_path: Path) -> None:
    name = "innodb_flush_log_at_trx_commit"
    was = mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0]
    mysql_admin_exec(mysql_tables, f"SET GLOBAL {name} = 2")  # neither side's value
    try:
        out = tmp_path / "flush"
        ab = _ab(mysql_tables, out, 2, 5, "--admin-dsn", mysql_tables.admin_dsn(),
                 "--a", f"--set {name}=1", "--b", f"--set {name}=0")
        assert ab["sides"]["a"]["settings"] == {name: 1} and ab["sides"]["b"]["settings"] == {name: 0}
        assert ab["turn_s"] == 0  # a setting holds for every session: one whole run of each side
        for r in ab["rounds"]:
            for side, value in (("a", 1), ("b", 0)):
                summary = json.loads((out / r[side]["folder"] / "summary.json").read_text())
                assert summary["validity"]["settings"][name] == value
        assert mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0] == 2
        assert ChangeRecord(mysql_tables.target()).changes() == []  # nothing left for `benchtop restore`
    finally:
        mysql_admin_exec(mysql_tables, f"SET GLOBAL {name} = {was}")


def test_restore_finds_what_a_killed_comparison_left_changed_through_the_admins_socket(
        mysql_tables: Server, tmp_path: Path) -> None:
    """ab records a side's settings under --admin-dsn's address (here the
    server's socket); `benchtop restore` given the run's --dsn (host:port)
    and --admin-dsn found nothing there before ('nothing to restore'), and a
    later run given both did not warn of them."""
    if mysql_tables.socket is None:
        pytest.skip("the admin reaches the server by its socket: this server has none here")
    name = "innodb_flush_log_at_trx_commit"
    was = mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0]
    mysql_admin_exec(mysql_tables, f"SET GLOBAL {name} = 2")
    password = f":{quote(mysql_tables.admin_password, safe='')}" if mysql_tables.admin_password else ""
    admin = f"mysql://{quote(mysql_tables.admin_user, safe='')}{password}@localhost/?unix_socket={mysql_tables.socket}"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MYSQL_PWD=mysql_tables.password or "")
    target = ["--engine", "mysql", "--dsn", mysql_tables.dsn(), "--admin-dsn", admin]
    try:
        proc = subprocess.Popen([sys.executable, "-m", "benchtop", "ab", "--headless", *target, *SIZE,
                                 "--workload", "oltp_point_select", "--rounds", "20", "--round-time", "1",
                                 "--warmup", "0.2", "--out", str(tmp_path / "ab"), "--a", f"--set {name}=0", "--b", ""],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                env=env, cwd=str(ROOT))
        try:
            retry(lambda: mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0] == 0, timeout=60, interval=0.1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        assert mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0] == 0  # left changed
        # a later run given the same target options says so at its start (it looked under --dsn's address only)
        run = subprocess.run([sys.executable, "-m", "benchtop", "run", "--headless", *target, *SIZE, "--workload",
                              "oltp_point_select", "--time", "0.5", "--warmup", "0", "--out", str(tmp_path / "run")],
                             capture_output=True, text=True, timeout=60, env=env, cwd=str(ROOT),
                             stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stderr
        assert (f"benchtop: warning: {mysql_tables.socket} still has settings a benchtop run (pid {proc.pid}, "
                in run.stderr and f"{name} (was 2)" in run.stderr), run.stderr
        res = subprocess.run([sys.executable, "-m", "benchtop", "restore", *target], capture_output=True, text=True,
                             timeout=60, env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stderr
        assert f"restored on {mysql_tables.socket}: {name} (was 2)" in res.stdout, res.stdout + res.stderr
        assert mysql_admin_exec(mysql_tables, f"SELECT @@GLOBAL.{name}")[0][0] == 2
        assert not any(Path(ChangeRecord(mysql_tables.target()).path.parent).glob("*.json"))
    finally:
        mysql_admin_exec(mysql_tables, f"SET GLOBAL {name} = {was}")


def test_a_duet_of_mariadb_and_postgresql(mysql_tables: Server, pg_server: Server, tmp_path: Path) -> None:
    """--duet: each round runs both servers' loads at once (their runs
    overlap), each with half the stated threads, said in the banner."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    prepared = subprocess.run([sys.executable, "-m", "benchtop", "prepare", "--workload", "oltp_point_select",
                               "--engine", "postgresql", "--dsn", pg_server.dsn(), *SIZE],
                              capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT))
    assert prepared.returncode == 0 or "already" in prepared.stderr, prepared.stderr
    out = tmp_path / "duet"
    res = subprocess.run([sys.executable, "-m", "benchtop", "ab", "--headless", "--workload", "oltp_point_select",
                          *SIZE, "--threads", "4", "--rounds", "2", "--round-time", "1", "--warmup", "0.2",
                          "--monitor-interval", "1", "--seed", "3", "--duet", "--out", str(out),
                          "--a", f"--engine mysql --dsn {mysql_tables.dsn()}",
                          "--b", f"--engine postgresql --dsn {pg_server.dsn()}"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert "duet: A and B run at once, each with half the stated threads: A 4 -> 2, B 4 -> 2" in res.stdout
    assert [line.split(":")[0] for line in res.stdout.splitlines() if line.startswith("round ")] == \
        ["round 1/2 (together)", "round 2/2 (together)"]
    for password in {mysql_tables.password, pg_server.password} - {None, ""}:
        assert f":{password}@" not in res.stdout + (out / "ab.json").read_text()
    ab = json.loads((out / "ab.json").read_text())["ab"]
    assert ab["duet"] and ab["complete"] and len(ab["rounds"]) == 2
    assert ab["metrics"]["tps"]["ratio"] > 0
    for r in ab["rounds"]:
        spans = {}
        for side, kind in (("a", "mysql"), ("b", "postgresql")):
            summary = json.loads((out / r[side]["folder"] / "summary.json").read_text())
            assert summary["target"].startswith(f"{kind}://") and summary["threads"] == 2
            spans[side] = (summary["started_at"], summary["started_at"] + summary["time_s"])
        # at the same time: each run started before the other ended
        assert spans["a"][0] < spans["b"][1] and spans["b"][0] < spans["a"][1]
