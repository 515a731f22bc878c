"""Per-operation costs from plain readings: per-type attribution (writes to
the types that write, the rest by service time), run totals from two target
snapshots, the client-CPU warning, units and labels, and the report's
settings difference."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from benchtop.engine.histogram import Histogram
from benchtop.engine.sample import ERROR_KINDS, EngineSample
from benchtop.record.costs import APPORTIONED, RunCosts, costs_text
from benchtop.report.tables import settings_diff
from benchtop.report.tables import per_op_table
from benchtop.run.costs import CostMeter, Work, client_cpu, type_service_s
from benchtop.run.target_readings import totals_between
from benchtop.sources.base import SourceSnapshot
from benchtop.target import Target
from benchtop.workload import builtin_program


def test_types_get_each_interval_s_work_by_their_share():
    meter = CostMeter("null", Target("null"), probe_target=False)
    # an insert phase then a query phase: inserts write, queries read
    meter.count(Work(1.0, reads=0, kb_written=900.0, cpu_s=1.0), (90, 10))
    meter.count(Work(1.0, reads=100, kb_written=0.0, cpu_s=1.0), (0, 100))
    ins, query = meter._type_work  # noqa: SLF001 - the accumulated work is what the test checks
    assert ins.kb_written == pytest.approx(810.0) and query.kb_written == pytest.approx(90.0)
    assert ins.per_op(90).kb_written == pytest.approx(9.0)
    assert query.per_op(110).reads == pytest.approx(100 / 110, rel=1e-4)
    assert (ins.cpu_s + query.cpu_s) == pytest.approx(2.0)  # nothing lost, nothing counted twice


def test_totals_from_two_postgresql_snapshots():
    def snap(lsn: int, timed: int, ins: int, size: int) -> SourceSnapshot:
        return SourceSnapshot("pg", "postgresql", 0.0, True, panels={
            "wal_position": {"lsn_bytes": lsn}, "checkpoints": {"timed": timed, "requested": 1},
            "database": {"size_bytes": size, "tup_inserted": ins, "tup_updated": 5, "tup_deleted": 0}})

    t = totals_between(snap(1000, 3, 10, 8192), snap(51000, 4, 110, 16384))
    assert t.to_dict() == {"wal_bytes": 50000, "checkpoints_timed": 1, "checkpoints_requested": 0,
                 "rows_inserted": 100, "rows_updated": 0, "rows_deleted": 0}
    assert totals_between(None, snap(1, 1, 1, 1)).wal_bytes is None


def test_client_cpu_is_quiet_when_the_client_is_light():
    cc = client_cpu(Work(10.0, cpu_s=5.0, idle_s=15.0, client_cpu_s=1.0), 10000, 4)
    assert cc.warning is None and cc.per_op_us == 100.0 and cc.host_busy_pct == 25.0


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


def test_writes_and_wal_go_to_the_types_that_write():
    """Issue 34's i1.q10: 7.4 MB of WAL from 20,496 inserts was shared by
    busy time, 0.2 KB to each read-only query and to each insert; by
    Callaghan's convention each insert carries total / inserts (0.36 KiB)."""
    program = builtin_program("insert_benchmark", "postgresql")
    assert program.writing_types == (True, False, False, False)
    meter = CostMeter("postgres", Target("null"), probe_target=False)
    wal, inserts, queries = 7.4 * 2**20, 20_496, (30_000, 30_000, 30_000)
    for _ in range(4):  # four equal intervals; the queries take most of the workers' time
        meter.count(Work(1.0, kb_written=4000.0, cpu_s=2.0, wal_bytes=wal / 4),
                    (inserts // 4, *(q // 4 for q in queries)), (0.1, 0.3, 0.3, 0.3), program.writing_types)
    ins, *reads = meter._type_work  # noqa: SLF001
    assert ins.wal_bytes == pytest.approx(wal) and ins.kb_written == pytest.approx(16000.0)
    assert ins.per_op(inserts).wal_bytes == pytest.approx(wal / inserts, rel=1e-3)  # ~378 B = 0.37 KiB
    assert all(q.wal_bytes == 0.0 and q.kb_written == 0.0 for q in reads)
    assert ins.cpu_s == pytest.approx(0.8) and sum(q.cpu_s for q in reads) == pytest.approx(7.2)  # by busy time


def test_background_writes_go_to_what_ran():
    """An interval with no writing transaction (a checkpoint's writes while
    only queries ran) is not lost: it goes to the types that ran."""
    meter = CostMeter("postgres", Target("null"), probe_target=False)
    meter.count(Work(1.0, kb_written=100.0), (0, 10), (), (True, False))
    assert [w.kb_written for w in meter._type_work] == [0.0, 100.0]  # noqa: SLF001


def test_cost_text_names_units_sources_and_apportioning():
    summary = {"per_op": {"reads": 0.0, "kb_read": 0.0, "kb_written": 1559 / 1024, "context_switches": 2.0,
                          "cpu_s": 0.0004, "wal_bytes": 1559.0, "server_cpu_s": 0.0002},
               "log_name": "redo",
               "by_type": {"insert": {"ops": 10, "wal_bytes": 378.0, "kb_written": 1.0, "apportioned": APPORTIONED},
                           "query": {"ops": 30, "wal_bytes": 0.0, "kb_written": 0.0, "apportioned": APPORTIONED}},
               "totals": {"wal_bytes": 7.4 * 2**20}}
    lines = costs_text(RunCosts.from_dict(summary))
    assert lines[0] == ("per transaction: host reads 0.00  read 0 B  written 1.52 KiB  cs 2.0  CPU 0.400 ms"
                        "  server redo 1.52 KiB  CPU 0.200 ms")
    assert lines[1] == f"per type ({APPORTIONED}):"
    assert lines[2] == "  insert (10): host written 1.00 KiB  server redo 378 B"
    assert "totals: redo 7.4 MiB" in lines[4] and "WAL" not in " ".join(lines[:1] + lines[2:])
    assert not any(" KB" in line or " MB" in line for line in lines)


def test_report_table_marks_apportioned_rows(tmp_path):
    class Run:
        label = "i1.q10"
        steps: list = []
        summary = {"per_op": {"kb_written": 1.0}, "by_type": {"insert": {"ops": 1, "kb_written": 2.0}}}
        costs = RunCosts.from_dict(summary)

    table = per_op_table([Run()])  # type: ignore[list-item]
    assert table is not None and table.rows[1][0] == "  insert *" and APPORTIONED in table.note
    assert "host wKiB/op" in table.columns and "srv WAL|redo KiB/op" in table.columns


def test_run_costs_read_back_write_summary_json_as_it_was():
    """summary.json's cost objects, as a run wrote them before they were typed:
    read and written again, the same keys in the same order with the same values."""
    per_op = {"reads": 0.5, "kb_read": 4.0, "kb_written": 12.25, "context_switches": 30.0, "cpu_s": 0.00125,
              "wal_bytes": 2048.0, "server_cpu_s": None}
    saved = {
        "per_op": per_op,
        "log_name": "redo",
        "by_type": {"insert": {"ops": 10, **per_op, "apportioned": APPORTIONED}},
        "sizes": {"database_bytes": {"start": 8192, "end": 16384, "growth_per_hour": 29491200.0},
                  "server_rss_bytes": {"start": None, "end": None, "growth_per_hour": None}},
        "totals": {"wal_bytes": 50000, "checkpoints_timed": 1, "checkpoints_requested": 0,
                   "rows_inserted": 100, "rows_updated": None, "rows_deleted": 0},
        "client_cpu": {"cpu_s": 0.16, "per_op_us": 211.082, "cores": 0.152, "per_worker_cores": 0.152,
                       "host_busy_pct": 100.0, "warning": "the host's CPU was 100.0% busy"},
        "host": {"settings": {"swappiness": 60}, "flags": ["vm.swappiness=60: advice is 1-10"]},
    }
    again = RunCosts.from_dict(saved).to_dict()
    assert json.dumps(again) == json.dumps(saved)


def _sample(lat_ns: tuple[int, ...], svc_ns: tuple[int, ...], by_type: tuple[int, ...]) -> EngineSample:
    h = Histogram.from_values_ns([])
    return EngineSample(
        t=1.0, state="running", threads_target=11, threads_running=11, in_flight=0, unfinished=0, paused=False,
        rate=1000.0, transactions=sum(by_type), rollbacks=0, reads=0, writes=0, other=0,
        errors=dict.fromkeys(ERROR_KINDS, 0), retries=0, reconnects=0, connects=11, connect_ns_sum=0,
        connect_ns_max=0, latency_ns_sum=sum(lat_ns), latency_ns_min=0, latency_ns_max=0,
        service_ns_sum=sum(svc_ns), service_ns_max=0, busy_ns=0, queue_ns=0.0, tickets_due=0,
        txn_by_type=by_type, txn_ns_by_type=lat_ns, rows_loaded=0, error="", latency=h, service=h,
        svc_ns_by_type=svc_ns)


def test_types_share_by_service_time_not_by_open_loop_queue_time():
    """Issue 43's i1.q10: one inserter held at 1,000/s fell behind, so each
    insert's latency carried seconds of waiting for its ticket; split by
    latency, inserts took 98.7% of the host's CPU (4.424 ms each) and the
    queries 0.003 ms.  The workers' service time is what the host worked on."""
    prev = _sample((0,) * 4, (0,) * 4, (0,) * 4)
    # 1,000 inserts that waited 2 s each for their tickets and ran 1 ms; 30,000 queries of 1 ms
    lat = (1_000 * 2_001_000_000, 10_000 * 1_000_000, 10_000 * 1_000_000, 10_000 * 1_000_000)
    svc = (1_000 * 1_000_000, 10_000 * 1_000_000, 10_000 * 1_000_000, 10_000 * 1_000_000)
    cur = _sample(lat, svc, (1_000, 10_000, 10_000, 10_000))
    busy = type_service_s(prev, cur, 4)
    assert busy == pytest.approx([1.0, 10.0, 10.0, 10.0])
    meter = CostMeter("postgres", Target("null"), probe_target=False)
    meter.count(Work(1.0, cpu_s=3.1, server_cpu_s=2.0), cur.txn_by_type, busy, (True, False, False, False))
    ins, *queries = meter._type_work  # noqa: SLF001
    # every transaction ran 1 ms, so each costs the same CPU, the server's included
    assert ins.per_op(1_000).cpu_s == pytest.approx(queries[0].per_op(10_000).cpu_s)
    assert ins.cpu_s / 3.1 == pytest.approx(1 / 31) and queries[0].server_cpu_s > 0
    assert type_service_s(prev, cur, 1) == [] and type_service_s(prev, replace(cur, svc_ns_by_type=()), 4) == []
