"""Per-operation costs, sizes, totals and the report against the real
servers: the per-op ratios against a hand computation from /proc over the
same run, the WAL total against the server's own LSN difference, database
growth after inserts, and `benchtop report` of two runs showing the setting
that differs, with plots whose series are named in the PNG files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchtop.options.run_options import options_from_argv
from benchtop.run.headless import LinePrinter, run_headless
from benchtop.session import RunSession
from tests.e2e.conftest import run_benchtop
from tests.fixtures.servers import mysql_admin_exec, pg_admin_exec

pytestmark = pytest.mark.realdb

SIZE = ["--tables", "1", "--table-size", "2000"]


def _hand_reading() -> dict[str, int]:
    """/proc read by hand: context switches, busy CPU jiffies, sectors
    written on whole physical disks (as iostat and vmstat count them)."""
    out = {"ctxt": 0, "busy": 0, "wsec": 0}
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0] == "cpu":
            user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f[1:9])
            out["busy"] = user + nice + system + irq + softirq + steal
        elif f[0] == "ctxt":
            out["ctxt"] = int(f[1])
    disks = {p.name for p in Path("/sys/block").iterdir() if "/virtual/" not in str(p.resolve())}
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] in disks:
            out["wsec"] += int(f[9])
    return out


def _run_in_process(argv: list[str], before=None, after=None):
    opts = options_from_argv("run", argv)
    with RunSession(opts, progress=None, prepare_missing=True) as session:
        ctl = session.controller()
        session.recorder.start()
        hand0 = _hand_reading()
        if before:
            before()
        summary = run_headless(ctl, LinePrinter(None, False, 95.0))
        extra = after() if after else None
        hand1 = _hand_reading()
    assert summary is not None
    return summary, {k: hand1[k] - hand0[k] for k in hand0}, extra


def test_pg_per_op_matches_proc_and_wal_matches_lsn(pg_server, tmp_path):
    lsn: dict[str, int] = {}

    def read_lsn(key: str):
        [(v,)] = pg_admin_exec(pg_server, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
        lsn[key] = int(v)

    summary, hand, _ = _run_in_process(
        ["--engine", "postgres", "--dsn", pg_server.dsn(), *SIZE, "--workload", "oltp_write_only",
         "--threads", "2", "--time", "3", "--out", str(tmp_path / "pg")],
        before=lambda: read_lsn("start"), after=lambda: read_lsn("end"))
    n = summary.transactions
    costs = summary.costs
    assert n > 0 and costs is not None and costs.per_op is not None and costs.totals is not None
    assert costs.sizes is not None
    po = costs.per_op
    # benchtop's window lies inside the hand one, which also holds the run's start and end (connecting,
    # the first and last polls of the target) and, on a shared host, everyone else's work in those moments:
    # never more than the hand figure, and most of it
    assert po.context_switches is not None and po.cpu_s is not None and po.kb_written is not None
    cs = po.context_switches * n
    assert 0.25 * hand["ctxt"] <= cs <= hand["ctxt"] * 1.001
    ticks = os.sysconf("SC_CLK_TCK")
    assert 0.25 * hand["busy"] / ticks <= po.cpu_s * n <= hand["busy"] / ticks * 1.001 + 0.02
    kb = po.kb_written * n
    assert 0 < kb <= hand["wsec"] * 512 / 1024 * 1.001
    # the WAL total is the server's own LSN difference over the run
    wal = costs.totals.wal_bytes
    assert wal is not None
    lsn_diff = lsn["end"] - lsn["start"]
    assert abs(wal - lsn_diff) <= 0.05 * lsn_diff + 65536, (wal, lsn_diff)
    assert po.wal_bytes == pytest.approx(wal / n, rel=1e-3)
    sizes = costs.sizes
    assert (sizes.database_bytes.end or 0) > 0
    if os.geteuid() == 0:  # the server's process is found by its listening socket
        assert (sizes.server_rss_bytes.end or 0) > 0 and (po.server_cpu_s or 0) > 0
    # the same numbers in summary.json, per interval in intervals.jsonl, settings in settings.json
    saved = json.loads((tmp_path / "pg" / "summary.json").read_text())
    assert saved["per_op"] == po.to_dict() and saved["totals"]["wal_bytes"] == wal
    intervals = [json.loads(line) for line in (tmp_path / "pg" / "intervals.jsonl").read_text().splitlines()]
    # an interval in which nothing completed (a host busy elsewhere) has no per-operation figures to give
    assert all(iv["per_op"]["context_switches"] > 0 for iv in intervals if iv["transactions"] > 0)
    settings = json.loads((tmp_path / "pg" / "settings.json").read_text())
    assert "shared_preload_libraries" in settings["server"] and "swappiness" in settings["host"]


def test_mysql_database_grows_with_inserts(mysql_server, tmp_path):
    summary, _, _ = _run_in_process(
        ["--engine", "mysql", "--dsn", mysql_server.dsn(), *SIZE, "--workload", "oltp_insert",
         "--threads", "2", "--time", "2"])
    assert summary.costs is not None and summary.costs.sizes is not None and summary.costs.totals is not None
    db = summary.costs.sizes.database_bytes
    assert (summary.costs.totals.rows_inserted or 0) >= summary.transactions > 0
    assert (db.end or 0) > (db.start or 0) > 0, db


@pytest.fixture
def flush_restored(mysql_server):
    [(before,)] = mysql_admin_exec(mysql_server, "SELECT @@innodb_flush_log_at_trx_commit")
    yield
    mysql_admin_exec(mysql_server, f"SET GLOBAL innodb_flush_log_at_trx_commit = {int(before)}")


def test_report_of_two_runs_shows_settings_tables_and_plots(mysql_server, tmp_path, flush_restored):
    base = ["--headless", "--json", "--engine", "mysql", "--dsn", mysql_server.dsn(), *SIZE,
            "--workload", "oltp_read_write", "--threads", "2", "--time", "2",
            "--monitor-interval", "0.5"]  # rates need two monitor polls: four of them, in 2 s
    env = {"MYSQL_PWD": mysql_server.password or ""}
    run_benchtop("cleanup", *base[2:6], *SIZE, env=env)  # an earlier test may have left other rows
    assert run_benchtop("prepare", *base[2:6], *SIZE, env=env).returncode == 0
    mysql_admin_exec(mysql_server, "SET GLOBAL innodb_flush_log_at_trx_commit = 1")
    first = run_benchtop(*base, "--out", str(tmp_path / "durable"), env=env)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout.splitlines()[-1])
    assert {"per_op", "by_type", "sizes", "totals", "client_cpu"} <= set(summary)
    mysql_admin_exec(mysql_server, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
    second = run_benchtop(*base, "--out", str(tmp_path / "relaxed"), env=env)
    assert second.returncode == 0, second.stderr
    folders = [str(tmp_path / "durable"), str(tmp_path / "relaxed")]
    report = run_benchtop("report", *folders)
    assert report.returncode == 0, report.stderr
    out = report.stdout
    for title in ("Per transaction", "Sizes", "Totals", "Settings that differ", "Validity"):
        assert title in out
    [row] = [line.split() for line in out.splitlines() if line.startswith("innodb_flush_log_at_trx_commit")]
    assert row[1:] == ["1", "2"]
    assert "relaxed: validity: breaks ACID durability: innodb_flush_log_at_trx_commit=2" in out
    pngs = run_benchtop("report", *folders, "--png", str(tmp_path / "png"))
    assert pngs.returncode == 0, pngs.stderr
    from PIL import Image

    def series(name: str) -> list[str]:
        with Image.open(tmp_path / "png" / f"{name}.png") as im:
            return im.info["Description"].split("; ")

    # (the test server's binary log runs with sync_binlog=0: both runs are marked UNSAFE)
    lat = series("latency_over_time")
    assert [label.split()[-1] for label in lat] == ["p50", "p95", "p99"] * 2
    assert lat[0].startswith("durable") and lat[3].startswith("relaxed")
    cdf = series("latency_cdf")
    assert [label.split()[0] for label in cdf] == ["durable", "relaxed"]
    names = ["wal_rate", "database_size", "dirty_pages", "cpu"]
    if os.geteuid() == 0:  # the OS source finds the server's process by its listening socket
        names.append("server_rss")
    for name in names:
        assert {label.split()[0] for label in series(name)} == {"durable", "relaxed"}, name
