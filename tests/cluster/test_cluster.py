"""Runs on many load hosts, on a real local two-node Ray cluster on loopback
(tests/cluster/conftest.py): merged counts are the hosts' sum, merged
percentiles those of one histogram fed every sample, knobs reach every host
within one interval, a killed actor is survived, results, headless lines
and the summary carry the hosts, the password never reaches Ray's records, the TUI shows
per-host rows."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchtop.engine.histogram import Histogram
from benchtop.options.run_options import options_from_argv
from benchtop.record.controller import Sample
from benchtop.record.formats import summary_text
from benchtop.run.headless import LinePrinter, run_headless
from benchtop.session import RunSession
from tests.cluster.conftest import LOOPBACK_ENV, LocalCluster
from tests.e2e.conftest import ROOT, run_benchtop

REPORT = 0.5


def _session(cluster: LocalCluster, *args: str) -> RunSession:
    opts = options_from_argv("run", ["--cluster", cluster.address, "--load-hosts", "2", "--report-interval",
                                     str(REPORT), "--no-monitor", *args])
    return RunSession(opts, monitor=False, instrumentation=False, progress=None)


def _drive(ctl, intervals: int, between=None) -> list[Sample]:  # type: ignore[no-untyped-def]
    """Samples once per report interval; `between(i)` runs after the i-th."""
    out = []
    for i in range(intervals):
        time.sleep(REPORT)
        out.append(ctl.sample())
        if between is not None:
            between(i)
    return out


def _all_reported(ctl) -> Sample:  # type: ignore[no-untyped-def]
    """The next sample in which every live host answered (a loaded machine
    can make one late for an interval: its reading then comes next time)."""
    for _ in range(10):
        s = _drive(ctl, 1)[-1]
        if s.fields["hosts_reporting"] == len(ctl.group.live()):
            return s
    raise AssertionError("some host never answered")


def _host_histograms(ctl) -> Histogram:  # type: ignore[no-untyped-def]
    total = Histogram.empty()
    for h in ctl.group.hosts:
        last = ctl.group.full_sample(h)
        total = total + (last.latency - (h.base.latency if h.base is not None else Histogram.empty()))
    return total


def test_null_engine_merged_counts_are_the_hosts_sum(ray_cluster: LocalCluster) -> None:
    out = io.StringIO()
    samples: list[Sample] = []
    with _session(ray_cluster, "--engine", "null", "--workload", "oltp_point_select", "--threads", "2",
                  "--rate", "4000", "--time", "2.2") as session:
        ctl = session.controller()
        # one host per node, each with its share
        assert sorted(h.node_id for h in ctl.group.hosts) == sorted(ray_cluster.nodes)
        assert [h.threads for h in ctl.group.hosts] == [1, 1]
        assert [h.rate for h in ctl.group.hosts] == [2000.0, 2000.0]
        read = ctl.sample
        ctl.sample = lambda: samples.append(read()) or samples[-1]  # type: ignore[method-assign]
        summary = run_headless(ctl, LinePrinter(out, False, 95.0))
    assert len(samples) >= 3
    for s in samples[1:]:
        assert len(s.hosts) == 2
        # a host late on a loaded machine shows 0 here and its transactions in the next interval
        assert s.interval.transactions == sum(r.transactions for r in s.hosts)
        if s.fields["hosts_reporting"] == 2:
            assert all(r.transactions > 0 and r.threads == 1 for r in s.hosts)
    assert any(s.fields["hosts_reporting"] == 2 for s in samples[1:])
    assert [h.host for h in summary.hosts] == ["h1", "h2"]
    assert summary.transactions == sum(h.transactions for h in summary.hosts)
    assert all(h.transactions > 0 for h in summary.hosts)
    # exact merge: the run's histogram is every host's added bucket by bucket
    assert summary.latency == _host_histograms(ctl)
    assert summary.latency.total == summary.transactions
    # headless text: each interval's line(s) in sysbench's format (two in rate mode), then a line per host
    blocks = out.getvalue().split("thds: 2 ")[1:]
    assert blocks
    for block in blocks:
        hosts = [x for x in block.splitlines() if x.startswith("    h")]
        assert [x.split(":")[0] for x in hosts] == ["    h1 127.0.0.1", "    h2 127.0.0.1"]
        assert all(" thds: 1 tps: " in x for x in hosts)
    text = summary_text(summary, 95.0)
    assert "load hosts: 2, 2 to the end" in text
    assert [x.split()[0] for x in text.splitlines() if x.startswith(("      h1 ", "      h2 "))] == ["h1", "h2"]


def test_sqlite_results_folder_and_json_lines_carry_the_hosts(ray_cluster: LocalCluster, tmp_path: Path) -> None:
    out = tmp_path / "res"
    done = run_benchtop("--headless", "--json", "--cluster", ray_cluster.address, "--load-hosts", "2",
                        "--threads", "2", "--time", "1.5", "--report-interval", str(REPORT), "--engine", "sqlite",
                        "--workload", "oltp_point_select", "--out", str(out), env=LOOPBACK_ENV, cwd=tmp_path,
                        timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    # Ray's own lines go to the results folder, never to the terminal
    assert "logging.cc" not in done.stderr and "unexpected internal error" not in done.stderr
    assert (out / "ray.log").exists()
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    intervals = [x for x in lines if x["type"] == "interval"]
    summary = [x for x in lines if x["type"] == "summary"][-1]
    assert intervals and all(x["hosts_reporting"] in (1, 2) for x in intervals)
    assert any(x["hosts_reporting"] == 2 for x in intervals)
    assert [h["host"] for h in summary["hosts"]] == ["h1", "h2"]
    assert summary["transactions"] == sum(h["transactions"] for h in summary["hosts"]) > 0
    assert json.loads((out / "summary.json").read_text())["hosts"] == summary["hosts"]
    per_host = [json.loads(x) for x in (out / "hosts.jsonl").read_text().splitlines()]
    assert {x["host"] for x in per_host} == {"h1", "h2"}
    assert {x["type"] for x in per_host} == {"host_interval"}
    tags = {x.split(",", 1)[0] for x in (out / "latency-hosts.hlog").read_text().splitlines() if x.startswith("Tag=")}
    assert tags == {"Tag=h1", "Tag=h2"}
    merged = [x for x in (out / "latency.hlog").read_text().splitlines() if x and x[0].isdigit()]
    assert len(intervals) <= len(merged) <= len(intervals) + 1  # + the part of an interval before the stop


def test_a_run_from_a_source_tree_loads_the_installed_package_on_the_hosts(ray_cluster: LocalCluster,
                                                                          tmp_path: Path) -> None:
    # Ray puts the driver's folder first on its workers' import path: run
    # from a folder holding an unbuilt benchtop (the cloned project's own),
    # the hosts must still import the package the driver runs
    tree = tmp_path / "clone"
    (tree / "benchtop").mkdir(parents=True)
    (tree / "benchtop" / "__init__.py").write_text('raise ImportError("the source tree, not the installed package")\n')
    env = {**os.environ, **LOOPBACK_ENV, "PYTHONPATH": str(ROOT)}
    # -P: the driver itself does not take its folder onto the path, as an installed `benchtop` does not
    done = subprocess.run([sys.executable, "-P", "-m", "benchtop", "--headless", "--cluster", ray_cluster.address,
                           "--load-hosts", "2", "--threads", "2", "--time", "1", "--engine", "null"],
                          capture_output=True, text=True, timeout=180, env=env, cwd=tree, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "load hosts: 2, 2 to the end" in done.stdout
    assert "logging.cc" not in done.stderr and "unexpected internal error" not in done.stderr


def test_knobs_reach_every_host_within_one_interval(ray_cluster: LocalCluster) -> None:
    with _session(ray_cluster, "--engine", "null", "--workload", "oltp_point_select", "--threads", "2",
                  "--rate", "2000", "--time", "0") as session:
        ctl = session.controller()
        ctl.start()
        _drive(ctl, 1)
        t = time.monotonic()
        ctl.set_threads(4)
        ctl.set_rate(6000)
        applied_s = time.monotonic() - t  # set_* return once every host has applied the change
        s = _all_reported(ctl)
        assert [h.reading.sample.threads_target for h in ctl.group.hosts] == [2, 2]
        assert [h.reading.sample.rate for h in ctl.group.hosts] == [3000.0, 3000.0]
        assert s.interval.rate_target == 6000.0
        ctl.set_paused(True)
        _all_reported(ctl)
        assert all(h.reading.sample.paused for h in ctl.group.hosts)
        ctl.set_paused(False)
        ctl.set_host_threads("h2", 3)
        _all_reported(ctl)
        assert [h.reading.sample.threads_target for h in ctl.group.hosts] == [2, 3] and ctl.threads == 5
        ctl.stop("test")
    assert applied_s < 5 * REPORT
    kinds = [e.text for e in ctl.timeline if e.kind in ("threads", "rate")]
    assert kinds == ["threads 4", "rate 6000/s", "threads 3 on h2 (5 in all)"]


def test_a_killed_actor_is_survived(ray_cluster: LocalCluster, tmp_path: Path) -> None:
    with _session(ray_cluster, "--engine", "null", "--workload", "oltp_point_select", "--threads", "2",
                  "--rate", "4000", "--time", "0", "--out", str(tmp_path / "res")) as session:
        ctl = session.controller()
        ctl.start()
        victim = ctl.group.hosts[1]

        def kill(i: int) -> None:
            if i == 1:
                ray_cluster.ray.kill(victim.actor, no_restart=True)

        samples = _drive(ctl, 6, kill)
        summary = ctl.stop("test")
    gone = next(i for i, s in enumerate(samples) if [r.state for r in s.hosts][1:] == ["lost"])
    after = samples[gone:]
    assert gone <= 3 and len(after) >= 3
    assert all(s.fields["hosts_reporting"] <= 1 and s.hosts[1].state == "lost" for s in after)
    assert sum(s.interval.transactions for s in after) > 0  # the survivor goes on
    assert after[-1].interval.threads == 1 and ctl.threads == 1  # the lost host's thread is gone from the totals
    lost = [e for e in ctl.timeline if e.kind == "host" and "lost" in e.text]
    assert len(lost) == 1 and "h2" in lost[0].text
    assert summary.hosts[1].lost_at is not None and summary.hosts[0].lost_at is None
    assert summary.transactions == sum(h.transactions for h in summary.hosts)
    saved = json.loads((tmp_path / "res" / "summary.json").read_text())
    assert saved["hosts_reporting"] == 1 and "lost_at" in saved["hosts"][1]
    timeline = (tmp_path / "res" / "timeline.jsonl").read_text()
    assert "load host h2" in timeline and "lost" in timeline
    # every interval of the survivor reached the results folder, and the last one stop() read
    intervals = [json.loads(x) for x in (tmp_path / "res" / "intervals.jsonl").read_text().splitlines()]
    assert len(intervals) == len([s for s in samples if s.counted]) + (ctl.final_sample() is not None)


@pytest.mark.realdb
def test_mariadb_merged_counts_and_the_password_stays_out_of_ray(ray_cluster: LocalCluster, mysql_server,
                                                                 tmp_path: Path) -> None:
    from tests.fixtures.servers import mysql_admin_exec

    password = "Cl-" + os.urandom(6).hex()
    for sql in ("CREATE DATABASE IF NOT EXISTS bt_cluster", "DROP USER IF EXISTS 'bt_cluster'@'%'",
                f"CREATE USER 'bt_cluster'@'%' IDENTIFIED BY '{password}'",
                "GRANT ALL ON bt_cluster.* TO 'bt_cluster'@'%'"):
        mysql_admin_exec(mysql_server, sql)
    dsn = f"mysql://bt_cluster@{mysql_server.host}:{mysql_server.port}/bt_cluster"
    common = ["--engine", "mysql", "--dsn", dsn, "--tables", "1", "--table-size", "2000"]
    env = {**LOOPBACK_ENV, "MYSQL_PWD": password}
    prep = run_benchtop("prepare", *common, env=env, cwd=tmp_path)
    assert prep.returncode == 0, prep.stderr[-2000:]
    done = run_benchtop("--headless", "--json", "--cluster", ray_cluster.address, "--load-hosts", "2",
                        "--threads", "2", "--time", "1.5", "--report-interval", str(REPORT), "--workload",
                        "oltp_point_select", *common, env=env, cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = [json.loads(x) for x in done.stdout.splitlines() if '"summary"' in x][-1]
    assert summary["transactions"] == sum(h["transactions"] for h in summary["hosts"])
    assert all(h["transactions"] > 0 for h in summary["hosts"])
    assert password not in done.stdout + done.stderr
    # Ray's own records of the session: logs, the GCS's files, the actors' command lines
    session_dir = Path(ray_cluster.ray._private.worker._global_node.get_session_dir_path())
    for path in session_dir.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 50_000_000:
            assert password.encode() not in path.read_bytes(), path
    for proc in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert password.encode() not in proc.read_bytes()
        except OSError:
            continue


async def test_the_tui_shows_a_row_per_host(ray_cluster: LocalCluster) -> None:
    from benchtop.screens.app import BenchtopApp
    from benchtop.screens.widgets.hosts import HostRows

    with _session(ray_cluster, "--engine", "null", "--workload", "oltp_point_select", "--threads", "2",
                  "--rate", "2000", "--time", "0") as session:
        ctl = session.controller()
        ctl.start()
        app = BenchtopApp(ctl)
        async with app.run_test(size=(100, 30)) as pilot:
            rows = app.screen.query_one(HostRows)
            for _ in range(150):
                await pilot.pause(0.1)
                text = rows.render().plain
                if rows.has_class("shown") and "2/2 reporting" in text:
                    break
            await pilot.press("plus", "plus")
            for _ in range(50):
                await pilot.pause(0.1)
                if [h.threads for h in ctl.group.hosts] == [2, 2]:
                    break
            await pilot.press("q")
    assert rows.has_class("shown")
    lines = text.splitlines()
    assert lines[1].startswith("all") and "2/2 reporting" in lines[1]
    assert [x.split()[0] for x in lines[2:]] == ["h1", "h2"]
    assert [h.threads for h in ctl.group.hosts] == [2, 2]



def test_transaction_types_merge_across_hosts(ray_cluster: LocalCluster) -> None:
    with _session(ray_cluster, "--engine", "null", "--workload", "tpcc", "--threads", "2", "--rate", "2000",
                  "--time", "0") as session:
        ctl = session.controller()
        ctl.start()
        samples = _drive(ctl, 3)
        summary = ctl.stop("test")
    assert any(s.interval.txn_latency_ms for s in samples[1:])
    # a type counts its committed transactions: the workload's own rollbacks are in the totals only
    committed = summary.transactions - summary.rollbacks
    assert sum(summary.txn_types.values()) == committed > 0
    # per-type histograms come with each host's reading and add up like the totals (read after the workers
    # were joined, they may hold each worker's last transaction, which the totals read at the stop do not)
    typed = sum(v["count"] for v in summary.txn_latency_ms.values())
    assert committed <= typed <= committed + 2
    assert set(summary.txn_latency_ms) <= set(ctl.program.txn_names)


def test_metrics_have_a_series_per_load_host_and_the_merged_totals(ray_cluster: LocalCluster) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from benchtop.metrics import MeteredController, RunMetrics

    with _session(ray_cluster, "--engine", "null", "--workload", "oltp_point_select", "--threads", "2",
                  "--rate", "2000", "--time", "1.2") as session:
        ctl = session.controller()
        metrics = RunMetrics("null", ctl.workload, ctl.target)
        summary = run_headless(MeteredController(ctl, metrics), LinePrinter(io.StringIO(), False, 95.0))
    assert summary is not None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    lines = generate_latest(registry).decode().splitlines()
    hosts = {line.split("{")[1].split(",")[0]: float(line.rsplit(" ", 1)[1])
             for line in lines if line.startswith("benchtop_host_transactions_total{")}
    assert sorted(hosts) == ['host="h1"', 'host="h2"']
    assert sum(hosts.values()) == summary.transactions
    assert f"benchtop_transactions_total {float(summary.transactions)}" in lines
