"""Cluster runs' per-host rows read like the merged line beside them: the
same percentile and precision, and a host given no threads says it is idle
instead of printing a latency of 0.00."""

from __future__ import annotations

import numpy as np

from benchtop.cluster.controller import host_line
from benchtop.cluster.loadhost import SparseCounts
from benchtop.cluster.merge import Stacked
from benchtop.engine.histogram import Histogram
from benchtop.record.formats import summary_text
from benchtop.record.samples import HostInterval, HostSummary, RunSummary
from benchtop.screens.widgets.hosts import hosts_text


def _sparse(h: Histogram) -> SparseCounts:
    return SparseCounts.of_dense(np.array(h.counts, dtype=np.uint64))


def _summary(hosts: tuple[HostSummary, ...]) -> RunSummary:
    h = Histogram.from_values_ns([40_000] * 10)
    return RunSummary(10.0, 4, 0.0, 10, 0, 0, 0, 0, {}, 0, 1, 0.1,
                      {"min": 0.04, "avg": 0.04, "max": 0.04, "p50": 0.04, "p95": 0.0432, "p99": 0.0432}, {}, h, h,
                      hosts=hosts)


def test_interval_host_line_uses_the_run_percentile_and_digits() -> None:
    row = HostInterval("h1", "10.0.0.1", "ok", 4, 1000, 1000.0, 0.0, {"p50": 0.03, "p95": 0.0432, "p99": 0.07}, 4, 50.0)
    line = host_line(row, 95.0)
    assert "lat (ms,95%): 0.0432" in line  # was "lat (ms,99%): 0.00" beside a merged 95% line
    idle = host_line(HostInterval("h2", "10.0.0.2", "ok", 0, 0, 0.0, 0.0, {"p95": 0.0}, 0, 1.0), 95.0)
    assert "idle" in idle and "lat" not in idle


def test_stacked_rows_carry_the_run_percentile() -> None:
    h = Histogram.from_values_ns([1_000_000] * 990 + [50_000_000] * 10)
    st = Stacked.of([_sparse(h)], len(h.counts))
    _, pcts = st.latency_ms((50.0, 95.0, 99.0, 99.9))
    assert set(pcts) == {"p50", "p95", "p99", "p999", "max"}
    assert pcts["p999"][0] > pcts["p99"][0]


def test_summary_host_table_matches_the_merged_latency() -> None:
    hosts = (HostSummary("h1", "10.0.0.1", 4, 10, 1.0, {"p95": 0.0432, "p99": 0.05}, 0),
             HostSummary("h2", "10.0.0.2", 0, 0, 0.0, {"p95": 0.0, "p99": 0.0}, 0))
    text = summary_text(_summary(hosts), 95.0)
    lines = [line for line in text.splitlines() if line.strip().startswith(("host", "h1", "h2"))]
    assert "p95 ms" in lines[0]
    assert lines[1].split()[-1] == "0.0432"
    assert "idle: no threads given to this host" in lines[2] and " -  idle" in lines[2]  # no 0.00 latency


def test_tui_host_rows_mark_an_idle_host() -> None:
    rows = [HostInterval("h1", "n1", "ok", 4, 10, 10.0, 0.0, {"p99": 1.0}, 4, 50.0),
            HostInterval("h2", "n2", "ok", 0, 0, 0.0, 0.0, {"p99": 0.0}, 0, 1.0)]
    text = hosts_text(rows, None).plain
    assert "idle (0 threads)" in text.splitlines()[-1]
