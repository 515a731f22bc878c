"""The report's server/OS series come from monitor.jsonl records placed on
the run's clock, and every time plot carries the run's marks."""

from __future__ import annotations

from pathlib import Path

from benchtop.record.analysis import Validity
from benchtop.report.data import RunData
from benchtop.report.plots import build_plots


def _run(monitor: list[dict], timeline: list[dict]) -> RunData:
    return RunData(folder=Path("."), name="r", summary={"started_at": 1000.0, "tps": 1.0},
                   config={}, intervals=[{"t": 1.0, "tps": 10.0, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0}},
                                         {"t": 2.0, "tps": 12.0, "latency_ms": {"p50": 1.5, "p95": 2.5, "p99": 4.0}}],
                   timeline=timeline, histogram={}, validity=Validity("durable"), monitor=monitor)


def test_series_from_monitor_records_on_the_run_clock():
    monitor = [
        {"t": 1001.0, "sources": {"pg": {"kind": "postgresql", "ok": True, "wal_bytes_per_s": 2 * 2**20,
                                         "database": {"size_bytes": 2 * 2**20}}}},
        {"t": 1002.0, "sources": {"os": {"kind": "os", "ok": True, "cpu": {"user_pct": 50.0, "system_pct": 10.0,
                                                                         "iowait_pct": 1.0},
                                         "server_process": {"rss_bytes": 3 * 2**20}}}},
        {"t": 1003.0, "sources": {"bouncer": {"kind": "pgbouncer", "ok": True, "clients": {"waiting": 4}}}},
        {"t": 1004.0, "sources": {"pg": {"kind": "postgresql", "ok": False, "error": "gone"}}},
    ]
    plots = {p.name: p for p in build_plots([_run(monitor, [{"t": 1.5, "kind": "threads", "text": "threads 4"},
                                                             {"t": 1.7, "kind": "note", "text": "warm-up over"}])])}
    assert (plots["wal_rate"].series[0].x, plots["wal_rate"].series[0].y) == ((1.0,), (2.0,))  # MiB/s
    assert plots["database_size"].series[0].y == (2.0,)
    assert [s.label for s in plots["cpu"].series] == ["r user", "r sys", "r iowait"]
    assert plots["server_rss"].series[0].y == (3.0,)
    assert plots["pool_waits"].series[0].x == (3.0,) and plots["pool_waits"].series[0].y == (4.0,)
    assert [s.label for s in plots["latency_over_time"].series] == ["r p50", "r p95", "r p99"]
    assert plots["latency_over_time"].series[2].y == (3.0, 4.0)
    for name in ("throughput", "latency_over_time", "wal_rate", "cpu"):
        assert plots[name].marks == ((1.5, "threads 4"),)  # notes are not marks
    assert "checkpoint_age" not in plots  # no source had it
