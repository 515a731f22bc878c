"""PostgreSQL source parsing and version selection, with rows from the PG 15
capture in shared/reference/server-captures.txt."""

from __future__ import annotations

import pytest

from benchtop.sources import sql
from benchtop.sources.base import Missing
from benchtop.sources.postgres import (
    activity_panels,
    cache_hit_panel,
    checkpoints_panel,
    database_panel,
    parse_lsn,
    replication_panel,
    settings_panel,
    wal_panel,
)
from benchtop.sources.rates import CounterTracker, Interval

BGWRITER = {
    "timed": 0,
    "requested": 40,
    "buffers_written": 192478,
    "write_time_ms": 3019.0,
    "sync_time_ms": 2107.0,
    "buffers_clean": 58,
    "maxwritten_clean": 0,
    "buffers_backend": 96030,
    "buffers_backend_fsync": 0,
    "buffers_alloc": 76004,
}


@pytest.mark.parametrize(
    "version, view, absent",
    [
        (150020, "pg_stat_bgwriter", "pg_stat_checkpointer"),
        (160004, "pg_stat_bgwriter", "pg_stat_checkpointer"),
        (170002, "pg_stat_checkpointer", "num_done"),
        (180000, "num_done", "buffers_backend"),
    ],
)
def test_checkpoint_query_follows_the_version(version, view, absent):
    text = sql.get("postgresql", "checkpoints", version)
    assert view in text and absent not in text
    # every variant names its columns the same way
    for column in ("AS timed", "AS requested", "buffers_written", "AS write_time_ms", "AS sync_time_ms"):
        assert column in text


def test_wal_view_by_version():
    assert "wal_sync_time" in sql.get("postgresql", "wal", 150020)
    assert "wal_sync_time" not in sql.get("postgresql", "wal", 180001)
    with pytest.raises(sql.SQLNotFound):
        sql.get("postgresql", "wal", 130012)


def test_checkpoints_rates_per_hour_and_second():
    later = dict(BGWRITER, requested=41, buffers_written=192478 + 3000, write_time_ms=3019.0 + 600)
    tracker = CounterTracker()
    tracker.advance(BGWRITER, now=0.0)
    # per hour over the counters' window (since the stats reset), not one poll's rate times 3,600
    panel = checkpoints_panel(dict(later, timed=33, counted_s=3 * 3600.0), tracker.advance(later, now=10.0))
    assert panel["requested"] == 41
    assert panel["requested_per_h"] == 13.7
    assert panel["timed_per_h"] == 11.0 and panel["per_h_over_s"] == 3 * 3600.0
    assert panel["buffers_written_per_s"] == 300.0
    assert panel["write_time_ms_per_s"] == 60.0


def test_wal_bytes_from_lsn_text():
    # two samples 1 s apart from the capture: 917568 bytes
    assert parse_lsn("0/7580EAA0") - parse_lsn("0/7572EA60") == 917568


def test_wal_panel_rates():
    iv = Interval({"wal_bytes": 1940532648, "wal_fpi": 167257}, {"wal_bytes": 1940621806, "wal_fpi": 167265}, 2.0)
    panel = wal_panel({"wal_bytes": 1940621806, "wal_fpi": 167265}, iv)
    assert panel["wal_bytes_per_s"] == (1940621806 - 1940532648) / 2
    assert panel["wal_fpi_per_s"] == 4.0


def test_cache_hit_ratio_interval_and_cumulative():
    iv = Interval({"blks_hit": 0, "blks_read": 0}, {"blks_hit": 0, "blks_read": 0}, 1.0)
    assert cache_hit_panel(iv) == {"interval": None, "cumulative": None}
    iv = Interval(None, {"blks_hit": 99, "blks_read": 1}, None)
    assert cache_hit_panel(iv) == {"interval": None, "cumulative": 0.99}


def test_database_growth_may_be_negative():
    row = {"datname": "sbtest", "size_bytes": 1000}
    iv = Interval({"size_bytes": 3000, "xact_commit": 10}, {"size_bytes": 1000, "xact_commit": 30}, 2.0)
    panel = database_panel(row, iv)
    assert panel["growth_bytes_per_s"] == -1000.0
    assert panel["commits_per_s"] == 10.0


def test_activity_ignores_idle_client_reads_and_background_sleep():
    rows = [
        {"backend_type": "client backend", "state": "active", "wait_event_type": "Lock", "wait_event": "tuple", "n": 2},
        {
            "backend_type": "client backend",
            "state": "active",
            "wait_event_type": "LWLock",
            "wait_event": "WALWrite",
            "n": 4,
        },
        {
            "backend_type": "client backend",
            "state": "idle in transaction",
            "wait_event_type": "Client",
            "wait_event": "ClientRead",
            "n": 1,
        },
        {
            "backend_type": "client backend",
            "state": "idle",
            "wait_event_type": "Client",
            "wait_event": "ClientRead",
            "n": 7,
        },
        {
            "backend_type": "checkpointer",
            "state": "",
            "wait_event_type": "Activity",
            "wait_event": "CheckpointerMain",
            "n": 1,
        },
    ]
    p = activity_panels(rows)
    assert p["sessions"] == {"active": 6, "idle in transaction": 1, "idle": 7, "total": 14}
    assert p["wait_events"] == [
        {"type": "LWLock", "event": "WALWrite", "count": 4},
        {"type": "Lock", "event": "tuple", "count": 2},
        {"type": "Client", "event": "ClientRead", "count": 1},
    ]
    assert p["autovacuum_workers"] == 0


def test_replication_missing_without_replicas_and_lag_in_bytes_with_one():
    assert isinstance(replication_panel([], 100), Missing)
    rows = [
        {
            "application_name": "standby1",
            "client_addr": "10.0.0.2",
            "state": "streaming",
            "sync_state": "async",
            "replay_lsn": "0/7572EA60",
            "replay_lag_s": 0.25,
        }
    ]
    (replica,) = replication_panel(rows, parse_lsn("0/7580EAA0"))
    assert replica["replay_lag_bytes"] == 917568
    assert replica["replay_lag_s"] == 0.25


def test_settings_flag_unsafe_and_pitr():
    rows = [
        {"name": "fsync", "setting": "on", "unit": None},
        {"name": "synchronous_commit", "setting": "off", "unit": None},
        {"name": "wal_level", "setting": "minimal", "unit": None},
        {"name": "max_wal_size", "setting": "1024", "unit": "MB"},
        {"name": "server_version", "setting": "15.20 (Debian 15.20-0+deb12u1)", "unit": None},
    ]
    p = settings_panel(rows)
    assert p["crash_safe"] is False and p["unsafe_because"] == ["synchronous_commit=off"]
    assert p["pitr_capable"] is False
    assert p["max_wal_size_bytes"] == 1024**3
    assert p["server_version"].startswith("15.20")
