"""The public metric names, listed: dashboards and alerts are written
against them, so they stay what they are whatever the panels inside
benchtop are called (benchtop/metrics/names.py declares them)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from benchtop.engine.histogram import Histogram
from benchtop.metrics.monitor_metrics import MonitorMetrics
from benchtop.metrics.run_metrics import RunMetrics
from benchtop.record.controller import Sample
from benchtop.record.samples import IntervalStats
from benchtop.sources.base import SourceSnapshot

RUN_NAMES = {
    "benchtop_run_info", "benchtop_run_start_time_seconds", "benchtop_run_finished", "benchtop_transactions_total",
    "benchtop_queries_total", "benchtop_errors_total", "benchtop_reconnects_total",
    "benchtop_type_transactions_total", "benchtop_group_transactions_total", "benchtop_group_threads",
    "benchtop_group_rate_target", "benchtop_host_transactions_total", "benchtop_host_threads",
    "benchtop_latency_seconds", "benchtop_service_latency_seconds", "benchtop_threads", "benchtop_rate_target",
    "benchtop_queue", "benchtop_concurrency",
}

MONITOR_NAMES = {
    "benchtop_monitor_up", "benchtop_monitor_poll_seconds",
    "benchtop_mysql_settings", "benchtop_mysql_threads", "benchtop_mysql_status_rates", "benchtop_mysql_innodb",
    "benchtop_mysql_binlog", "benchtop_mysql_rows", "benchtop_mysql_database", "benchtop_mysql_deadlock",
    "benchtop_postgresql_settings", "benchtop_postgresql_checkpoints", "benchtop_postgresql_wal",
    "benchtop_postgresql_wal_position", "benchtop_postgresql_cache_hit_ratio", "benchtop_postgresql_database",
    "benchtop_postgresql_sessions", "benchtop_postgresql_standby",
    "benchtop_pgbouncer_client_states", "benchtop_pgbouncer_server_states", "benchtop_pgbouncer_lists",
    "benchtop_proxysql_global", "benchtop_proxysql_global_rates", "benchtop_proxysql_pool_wait",
    "benchtop_proxysql_ages_s",
    "benchtop_os_cpu", "benchtop_os_disk", "benchtop_os_server_process", "benchtop_os_load", "benchtop_os_memory",
    # panels of rows: one family per numeric column
    "benchtop_pgbouncer_pools_cl_waiting", "benchtop_pgbouncer_stats_xact_per_s",
    "benchtop_proxysql_connection_pool_queries", "benchtop_proxysql_hostgroup_waits_wait_ms_per_s",
    "benchtop_postgresql_replication_lag_bytes",
}

# every panel a source produces, as a poll fills it (a number each, one row each)
_N = {"n": 1.0}
PANELS: dict[str, dict[str, Any]] = {
    "mysql": {"settings": {"max_connections": 151}, "threads": _N, "status_rates": _N, "innodb": _N, "binlog": _N,
              "rows": _N, "database": {"name": "sbtest", "size_bytes": 1}, "deadlock": {"at": "x", "victim": 1},
              "waits": [_N], "locks": [_N], "processlist": [_N], "top_statements": [_N], "transactions": [_N],
              "metadata_locks": [_N], "replica": [_N]},
    "postgresql": {"settings": {"max_connections": 100}, "checkpoints": _N, "wal": _N, "wal_bytes_per_s": 1.0,
                   "wal_position": {"lsn_bytes": 1}, "cache_hit_ratio": _N, "database": _N, "sessions": _N,
                   "wait_events": [_N], "autovacuum_workers": 1, "activity": [_N], "standby": _N,
                   "replication": [{"client_addr": "10.0.0.2", "lag_bytes": 5}], "tables": [_N], "indexes": [_N],
                   "vacuum": [_N], "top_statements": [_N]},
    "pgbouncer": {"version": "PgBouncer 1.22", "pools": [{"database": "db", "cl_waiting": 3}], "client_states": _N,
                  "server_states": _N, "stats": [{"database": "db", "xact_per_s": 9.0}], "clients": [_N],
                  "servers": [_N], "lists": _N},
    "proxysql": {"connection_pool": [{"hostgroup": 1, "Queries": 7}], "servers": [_N], "global": _N,
                 "global_rates": _N, "commands": [_N], "processlist": [_N], "query_rules": [_N],
                 "query_rule_config": [_N], "digest_top": [_N], "pool_wait": _N,
                 "hostgroup_waits": [{"hostgroup": 1, "wait_ms_per_s": 2.0}], "ages_s": _N},
    "os": {"cpu": _N, "disk": _N, "run_queue": 1, "context_switches_per_s": 1.0, "server_process": _N,
           "server_processes": [_N], "load": _N, "memory": _N, "disks": [_N]},
}


def _families(collector: Any) -> set[str]:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return {line.split()[2] for line in generate_latest(reg).decode().splitlines() if line.startswith("# TYPE")}


def test_the_monitors_metric_names_stay() -> None:
    m = MonitorMetrics()
    for kind, panels in PANELS.items():
        m.observe(SourceSnapshot(name=kind, kind=kind, t=1.0, ok=True, panels=panels))
    assert _families(m) == MONITOR_NAMES


def test_a_runs_metric_names_stay() -> None:
    hist = Histogram.from_values_ns([1_000_000])
    iv = IntervalStats(t=1.0, dt=1.0, threads=4, rate_target=0.0, paused=False, transactions=1, tps=1.0, qps=0.0,
                       reads_per_s=0.0, writes_per_s=0.0, other_per_s=0.0, errors_per_s=0.0, reconnects_per_s=0.0,
                       errors={}, latency_ms={"avg": 1.0}, service_latency_ms={}, queue=0.0, concurrency=1.0,
                       latency=hist, service=hist, txn_by_type=(1,))
    m = RunMetrics("sqlite", "oltp_read_write", "sqlite:x", txn_names=("read_write",))
    m.add(Sample(iv, counted=True, t=1.0))
    assert _families(m) == RUN_NAMES
