"""A real Prometheus (Debian's `prometheus`) scrapes `--metrics-listen` of a
run every second; what its HTTP API answers afterwards must agree with the
run's summary.json, and the Grafana dashboard's queries answer (both read
the same run)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.fixtures.dbhelpers import retry
from tests.fixtures.local import free_port

pytestmark = pytest.mark.slow


def _prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("prometheus is not installed (CI is set: bash .ci/install-servers installs it)")
        pytest.skip("prometheus is not installed: apt-get install prometheus")
    return found


class Prometheus:
    def __init__(self, port: int) -> None:
        self.port = port

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        args = {"query": promql, **({"time": f"{at:.3f}"} if at is not None else {})}
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(args)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return list(body["data"]["result"])


@pytest.fixture(scope="module")
def prometheus_scraping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Prometheus, int]]:
    """A private Prometheus on a free loopback port, scraping 127.0.0.1:TARGET every second."""
    binary = _prometheus_binary()
    tmp_path = tmp_path_factory.mktemp("prometheus")
    target, port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs: [{{job_name: benchtop, static_configs: [{{targets: ['127.0.0.1:{target}']}}]}}]\n")
    log = open(tmp_path / "prometheus.log", "w")
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def ready() -> None:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2):
                pass
        retry(ready, timeout=30, interval=0.2)

        def scraping() -> None:  # the scrape loop has tried the (not yet listening) target once
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=2) as r:
                active = json.load(r)["data"]["activeTargets"]
            assert active and not active[0]["lastScrape"].startswith("0001")
        retry(scraping, timeout=30, interval=0.2)
        yield Prometheus(port), target
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@dataclass(frozen=True)
class ScrapedRun:
    prom: Prometheus
    target: int
    stderr: str
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def scraped_run(prometheus_scraping: tuple[Prometheus, int],
                tmp_path_factory: pytest.TempPathFactory) -> ScrapedRun:
    """One sqlite run of 4 s scraped by that Prometheus, which both tests
    read.  Its linger (up to 30 s) is ended with a Ctrl-C once a scrape of
    the finished run is queryable, instead of being waited out."""
    prom, target = prometheus_scraping
    out = tmp_path_factory.mktemp("scraped") / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", "--json", "--engine", "sqlite",
                             "--threads", "2", "--time", "4", "--metrics-listen", f"127.0.0.1:{target}",
                             "--metrics-linger", "30", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=env, cwd=str(ROOT))
    try:
        def finished_is_queryable() -> None:  # a scrape during the linger shows the finished run
            assert proc.poll() is None, "the run ended before its linger was scraped"
            finished = prom.query("last_over_time(benchtop_run_finished[5m])")
            assert finished and float(finished[0]["value"][1]) == 1
        retry(finished_is_queryable, timeout=60, interval=0.2)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    return ScrapedRun(prom, target, stderr, summary)


def test_prometheus_sees_the_summary_totals(scraped_run: ScrapedRun) -> None:
    prom, summary = scraped_run.prom, scraped_run.summary
    assert f"metrics: http://127.0.0.1:{scraped_run.target}/metrics" in scraped_run.stderr
    total = prom.query("max_over_time(benchtop_transactions_total[5m])")
    assert total and float(total[0]["value"][1]) == summary["transactions"]
    want = summary["latency_ms"]["p99"]
    # the last scrape holds the whole run's buckets: within one of them (ten per decade, a factor of 10^0.1)
    p99 = prom.query("histogram_quantile(0.99, sum by (le) (max_over_time(benchtop_latency_seconds_bucket[5m])))")
    assert p99, "no latency histogram in Prometheus"
    assert want / 10 ** 0.1 <= float(p99[0]["value"][1]) * 1000 <= want * 10 ** 0.1
    # increase() starts at the first scrape (the first second is not in it) and extrapolates: near, not exact
    p99 = prom.query("histogram_quantile(0.99, sum by (le) (increase(benchtop_latency_seconds_bucket[5m])))")
    assert want / 2 <= float(p99[0]["value"][1]) * 1000 <= want * 2
    threads = prom.query("max_over_time(benchtop_threads[5m])")
    assert float(threads[0]["value"][1]) == 2
    finished = prom.query("last_over_time(benchtop_run_finished[5m])")
    assert float(finished[0]["value"][1]) == 1, "the linger's scrapes must show the finished run"


def test_the_grafana_dashboard_queries_answer(scraped_run: ScrapedRun) -> None:
    prom = scraped_run.prom
    mid_run = scraped_run.summary["started_at"] + 3.5
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-dashboard.json").read_text())
    answered = {}
    for panel in dashboard["panels"]:
        for t in panel["targets"]:
            expr = t["expr"].replace("$job", ".*").replace("$__rate_interval", "3s")
            answered[(panel["title"], t["refId"])] = prom.query(expr, at=mid_run)
    for key in [("Transactions per second", "A"), ("Latency p50 / p95 / p99", "C"), ("Threads and rate target", "A")]:
        assert answered[key], f"{key} answered nothing"
    tps = float(answered[("Transactions per second", "A")][0]["value"][1])
    assert tps > 0
