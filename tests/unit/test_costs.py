"""Per-operation costs from plain readings: per-type attribution by each
type's share of the interval, run totals from two target snapshots, the
client-CPU warning, and the report's settings difference."""

from __future__ import annotations

import pytest

from benchtop.report.tables import settings_diff
from benchtop.run.costs import CostMeter, Work, client_cpu
from benchtop.run.target_readings import totals_between
from benchtop.sources.base import SourceSnapshot
from benchtop.target import Target


def test_types_get_each_interval_s_work_by_their_share():
    meter = CostMeter("null", Target("null"), probe_target=False)
    # an insert phase then a query phase: inserts write, queries read
    meter.count(Work(1.0, reads=0, kb_written=900.0, cpu_s=1.0), (90, 10))
    meter.count(Work(1.0, reads=100, kb_written=0.0, cpu_s=1.0), (0, 100))
    ins, query = meter._type_work  # noqa: SLF001 - the accumulated work is what the test checks
    assert ins.kb_written == pytest.approx(810.0) and query.kb_written == pytest.approx(90.0)
    assert ins.per_op(90)["kb_written"] == pytest.approx(9.0)
    assert query.per_op(110)["reads"] == pytest.approx(100 / 110, rel=1e-4)
    assert (ins.cpu_s + query.cpu_s) == pytest.approx(2.0)  # nothing lost, nothing counted twice


def test_totals_from_two_postgresql_snapshots():
    def snap(lsn: int, timed: int, ins: int, size: int) -> SourceSnapshot:
        return SourceSnapshot("pg", "postgresql", 0.0, True, panels={
            "wal_position": {"lsn_bytes": lsn}, "checkpoints": {"timed": timed, "requested": 1},
            "database": {"size_bytes": size, "tup_inserted": ins, "tup_updated": 5, "tup_deleted": 0}})

    t = totals_between(snap(1000, 3, 10, 8192), snap(51000, 4, 110, 16384))
    assert t == {"wal_bytes": 50000, "checkpoints_timed": 1, "checkpoints_requested": 0,
                 "rows_inserted": 100, "rows_updated": 0, "rows_deleted": 0}
    assert totals_between(None, snap(1, 1, 1, 1))["wal_bytes"] is None


def test_client_cpu_is_quiet_when_the_client_is_light():
    cc = client_cpu(Work(10.0, cpu_s=5.0, idle_s=15.0, client_cpu_s=1.0), 10000, 4)
    assert cc["warning"] is None and cc["per_op_us"] == 100.0 and cc["host_busy_pct"] == 25.0


def test_settings_diff_names_only_what_differs():
    assert settings_diff([{"innodb_flush_log_at_trx_commit": "1", "max_connections": "200"},
                          {"innodb_flush_log_at_trx_commit": "2", "max_connections": "200"}]) == [
        ("innodb_flush_log_at_trx_commit", ["1", "2"])]


def test_types_share_by_busy_time_when_known():
    """A slow type takes more of the workers' time, so more of the interval's work."""
    meter = CostMeter("null", Target("null"), probe_target=False)
    meter.count(Work(1.0, cpu_s=1.0), (50, 50, 0, 0), busy_s=(0.75, 0.25))
    slow, fast = meter._type_work  # noqa: SLF001
    assert slow.cpu_s == pytest.approx(0.75) and fast.cpu_s == pytest.approx(0.25)
    assert meter._ops_by_type == [50, 50]  # noqa: SLF001
