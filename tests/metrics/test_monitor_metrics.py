"""The monitor's snapshots as gauges: mappings of numbers per field, rows of
the few stable panels labelled by what names them, nothing per query text."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from benchtop.metrics.monitor_metrics import MonitorMetrics
from benchtop.sources.base import Missing, SourceSnapshot


def _scrape(m: MonitorMetrics) -> list[str]:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(m)
    return [line for line in generate_latest(reg).decode().splitlines() if not line.startswith("#")]


def test_pools_checkpoints_and_sessions() -> None:
    m = MonitorMetrics()
    m.observe(SourceSnapshot(name="pgbouncer", kind="pgbouncer", t=1.0, ok=True, poll_ms=3.0, panels={
        "pools": [{"database": "sbtest", "user": "sbtest", "pool_mode": "transaction", "cl_active": 4,
                   "cl_waiting": 12, "maxwait": 0.5}],
        "clients": [{"database": "sbtest", "addr": "127.0.0.1", "port": 5555, "state": "active"}],
    }))
    m.observe(SourceSnapshot(name="pg", kind="postgresql", t=1.0, ok=False, panels={
        "checkpoints": {"checkpoint_age_pct": 42.5, "requested": 1, "note": "text is left out"},
        "sessions": [{"query": "SELECT 1", "duration_s": 3.0}],
        "waits": Missing("needs pg_monitor"),
    }))
    lines = _scrape(m)
    assert ('benchtop_pgbouncer_pools_cl_waiting{database="sbtest",pool_mode="transaction",source="pgbouncer",'
            'user="sbtest"} 12.0') in lines
    assert 'benchtop_postgresql_checkpoints{field="checkpoint_age_pct",source="pg"} 42.5' in lines
    assert 'benchtop_monitor_up{kind="postgresql",source="pg"} 0.0' in lines
    assert not [line for line in lines if "SELECT" in line or "clients" in line or "note" in line]
