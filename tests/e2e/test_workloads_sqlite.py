"""The new workloads end to end on the embedded SQLite engine: prepare, a
short multi-threaded run, and their consistency conditions afterwards."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchtop.commands.check import main as check_main
from tests.e2e.conftest import ROOT, run_benchtop

TPCC_SMALL = ["--workload", "tpcc", "--scale", "2", "--customers", "300", "--items", "1000"]


def _prepare_and_run(db: Path, args: list[str], *run_args: str) -> str:
    res = run_benchtop("prepare", "--engine", "sqlite", "--db", str(db), "--threads", "2", *args, timeout=60)
    assert res.returncode == 0, res.stderr
    res = run_benchtop("--headless", "--engine", "sqlite", "--db", str(db), *args, *run_args, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_tpcc_runs_and_stays_consistent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "tpcc.db"
    out = _prepare_and_run(db, TPCC_SMALL, "--time", "2", "--threads", "2")
    assert "transactions:" in out
    with sqlite3.connect(db) as con:
        new_orders = con.execute("SELECT COUNT(*) FROM orders1 WHERE o_id > 300").fetchone()[0]
        remote_lines = con.execute("SELECT COUNT(*) FROM order_line1 WHERE ol_supply_w_id <> ol_w_id").fetchone()[0]
        remote_pay = con.execute("SELECT COUNT(*) FROM history1 WHERE h_c_w_id <> h_w_id").fetchone()[0]
        delivered = con.execute("SELECT COUNT(*) FROM orders1 WHERE o_id > 210 AND o_carrier_id IS NOT NULL").fetchone()[0]
    assert new_orders > 50 and delivered > 0
    assert remote_lines > 0 and remote_pay > 0  # 1% of items, 15% of payments
    capsys.readouterr()
    assert check_main(["--engine", "sqlite", "--db", str(db), *TPCC_SMALL]) == 0
    report = capsys.readouterr().out
    assert report.count("PASS") == 11 and "11 of 11 checks passed" in report

    # one corruption per condition, each on its own table set 1 rows
    corruptions = {
        "1": "UPDATE warehouse1 SET w_ytd = w_ytd + 1 WHERE w_id = 2",
        "3": "DELETE FROM new_orders1 WHERE no_o_id = (SELECT MAX(no_o_id) - 5 FROM new_orders1)",
        "7": "UPDATE order_line1 SET ol_delivery_d = NULL WHERE ol_o_id = 1 AND ol_d_id = 1 AND ol_w_id = 1"
             " AND ol_number = 1",
        "9": "UPDATE history1 SET h_amount = h_amount + 1 WHERE rowid = (SELECT MIN(rowid) FROM history1"
             " WHERE h_w_id = 1 AND h_d_id = 4)",
        "10": "UPDATE customer1 SET c_balance = c_balance + 1 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1",
        "2": "UPDATE district1 SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 2 AND d_id = 2",
        "4, 6": "DELETE FROM order_line1 WHERE ol_w_id = 2 AND ol_d_id = 5 AND ol_number = 1 AND ol_o_id ="
                " (SELECT MAX(o_id) FROM orders1 WHERE o_w_id = 2 AND o_d_id = 5 AND o_carrier_id IS NULL)",
    }
    with sqlite3.connect(db) as con:
        for sql in corruptions.values():
            assert con.execute(sql).rowcount >= 1, sql
    assert check_main(["--engine", "sqlite", "--db", str(db), *TPCC_SMALL]) == 1
    failed = {ln.split("condition ")[1].split(":")[0] for ln in capsys.readouterr().out.splitlines()
              if ln.startswith("FAIL")}
    # every condition catches one of them: the history row also breaks 8
    # (warehouse), the balance 12, the lost new order 5
    assert failed == {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "12"}


def test_tpcc_mix_is_at_or_above_the_minimums(tmp_path: Path) -> None:
    db = tmp_path / "tpcc.db"
    # ten whole decks of 23 cards on one thread
    out = _prepare_and_run(db, TPCC_SMALL, "--events", "230", "--time", "0", "--threads", "1", "--json")
    summary = json.loads([ln for ln in out.splitlines() if '"summary"' in ln][-1])
    mix = summary["txn_types"]
    total = sum(mix.values())
    assert total + summary["rollbacks"] == 230 and mix["payment"] == 100
    for name, floor in {"payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0}.items():
        assert 100 * mix[name] / total >= floor, (name, mix)
    # tpmC: committed new orders per minute; the rolled back 1% are left out
    assert summary["tpmC"] == pytest.approx(mix["new_order"] / summary["time_s"] * 60, rel=0.01)


def test_tpcb_keeps_pgbench_balances(tmp_path: Path) -> None:
    db = tmp_path / "tpcb.db"
    # counted transactions (--time only as a bound): 500 history rows, a few tenths of a second
    _prepare_and_run(db, ["--workload", "tpcb", "--scale", "2"], "--events", "500", "--time", "30", "--threads", "2")
    res = run_benchtop("--headless", "--engine", "sqlite", "--db", str(db), "--workload", "tpcb-select-only",
                       "--scale", "2", "--events", "500", "--time", "30", timeout=60)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(db) as con:
        counts = con.execute("SELECT (SELECT COUNT(*) FROM pgbench_accounts), (SELECT COUNT(*) FROM pgbench_tellers),"
                             " (SELECT COUNT(*) FROM pgbench_branches), (SELECT COUNT(*) FROM pgbench_history)").fetchone()
        sums = con.execute("SELECT (SELECT SUM(abalance) FROM pgbench_accounts), (SELECT SUM(tbalance) FROM pgbench_tellers),"
                           " (SELECT SUM(bbalance) FROM pgbench_branches), (SELECT SUM(delta) FROM pgbench_history)").fetchone()
    assert counts[:3] == (200000, 20, 2) and counts[3] > 100
    assert len(set(sums)) == 1  # every delta went to one account, teller and branch, and to history
    assert check_main(["--engine", "sqlite", "--db", str(db), "--workload", "tpcb"]) == 0


def test_linkbench_at_a_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lb.db"
    wl = ["--workload", "linkbench", "--nodes", "2000"]
    out = _prepare_and_run(db, wl, "--time", "1", "--threads", "2", "--rate", "400")
    total = int(out.split("total number of events:")[1].split()[0])
    assert 300 <= total <= 500
    with sqlite3.connect(db) as con:
        links, counted = con.execute("SELECT (SELECT COUNT(*) FROM linktable WHERE visibility = 1),"
                                     " (SELECT SUM(count) FROM counttable)").fetchone()
    assert links > 7000 and counted == links
    assert check_main(["--engine", "sqlite", "--db", str(db), *wl]) == 0
    assert "PASS  table set 1  condition count = visible links" in capsys.readouterr().out


def test_bank_example_rolls_back_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "bank.db"
    wl = ["--workload", str(ROOT / "workloads" / "examples" / "bank_transfer.toml"), "--accounts", "50",
          "--initial-balance", "100"]
    out = _prepare_and_run(db, wl, "--time", "1", "--threads", "2")
    assert "rolled back by the workload" in out
    assert check_main(["--engine", "sqlite", "--db", str(db), *wl]) == 0
    assert "PASS" in capsys.readouterr().out


def test_expressions_in_the_native_interpreter(tmp_path: Path) -> None:
    """The C interpreter computes what the compiler's docs promise."""
    wl = tmp_path / "expr.toml"
    wl.write_text("""
[options]
scale = 5
[strings]
syl = "BAR,OUGHT,ABLE,PRI,PRES,ESE,ANTI,CALLY,ATION,EING"
[schema]
tables = 1
create.default = ["CREATE TABLE r (n INTEGER, a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER, s TEXT)"]
drop.default = ["DROP TABLE IF EXISTS r"]
[[load]]
insert = "INSERT INTO r (n) VALUES "
rows = 0
columns = ["seq"]
[[transaction]]
script = '''
set n = n + 1
set a = n * 7 - 30
set b = a / 4 + a % 4 * 100
set c = min(a, 3) + max(n, 2) * (n >= 3)
set w = uniform(1, scale)
set other = uniform(1, scale - 1)
set d = other + (other >= w) != w
set e = nurand(255, 0, 999)
set $s = words(syl, 371, 3)
exec begin: BEGIN
exec write: INSERT INTO r (n, a, b, c, d, e, s) VALUES (:n, :a, :b, :c, :d, :e, :$s)
rollback if n == 4
exec commit: COMMIT
'''
""")
    db = tmp_path / "expr.db"
    _prepare_and_run(db, ["--workload", str(wl)], "--events", "5", "--threads", "1")
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT n, a, b, c, d, e, s FROM r ORDER BY n").fetchall()
    assert [r[0] for r in rows] == [1, 2, 3, 5]  # transaction 4 rolled back
    for n, a, b, c, d, e, s in rows:
        sa = n * 7 - 30
        q = abs(sa) // 4 * (1 if sa >= 0 else -1)
        assert (a, b) == (sa, q + (sa - q * 4) * 100)
        assert c == min(sa, 3) + max(n, 2) * (n >= 3)
        assert d == 1 and 0 <= e <= 999 and s == "PRICALLYOUGHT"
