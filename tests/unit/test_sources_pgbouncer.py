"""PgBouncer admin console parsing: rows keyed by name, 1.18..1.25 layouts,
SHOW STATS totals as rates (rows from shared/reference/server-captures.txt)."""

from __future__ import annotations

from benchtop.sources.pgbouncer import state_counts, stats_rates, typed_row
from benchtop.sources.rates import CounterTracker

POOLS_118 = (
    "database|user|cl_active|cl_waiting|cl_active_cancel_req|cl_waiting_cancel_req|sv_active|sv_active_cancel"
    "|sv_being_canceled|sv_idle|sv_used|sv_tested|sv_login|maxwait|maxwait_us|pool_mode",
    "sbtest|sbtest|8|0|0|0|8|0|0|0|0|0|0|0|0|transaction",
)

STATS_118_COLUMNS = (
    "database, total_xact_count, total_query_count, total_received, total_sent, total_xact_time, "
    "total_query_time, total_wait_time, avg_xact_count, avg_query_count, avg_recv, avg_sent, avg_xact_time, "
    "avg_query_time, avg_wait_time"
).split(", ")
STATS_118_ROW = ["sbtest", "743059", "1001410", "87915173", "63759401", "442094907", "391110792", "88675"] + ["0"] * 7


def _row(header: str, line: str) -> dict[str, str]:
    return dict(zip(header.split("|"), line.split("|")))


def test_pools_rows_keyed_by_column_name_with_ints():
    row = typed_row(_row(*POOLS_118))
    assert row["database"] == "sbtest" and row["pool_mode"] == "transaction"
    assert row["cl_active"] == 8 and row["sv_active"] == 8 and row["maxwait_us"] == 0


def test_pools_1_24_extra_column_is_kept_as_text():
    header, line = POOLS_118
    row = typed_row(_row(header + "|load_balance_hosts", line + "|1"))
    assert row["load_balance_hosts"] == "1"
    assert row["cl_active"] == 8


def test_client_and_server_counts_by_state():
    pools = [typed_row(_row(*POOLS_118)), {"database": "pgbouncer", "cl_active": 1, "sv_idle": 2}]
    assert state_counts(pools, "cl_")["active"] == 9
    servers = state_counts(pools, "sv_")
    assert servers["active"] == 8 and servers["idle"] == 2 and servers["total"] == 10


def test_stats_rates_from_1_18_totals():
    first = typed_row(dict(zip(STATS_118_COLUMNS, STATS_118_ROW)))
    later = dict(
        first,
        total_xact_count=743059 + 200,
        total_query_count=1001410 + 800,
        total_xact_time=442094907 + 200 * 1500,
        total_query_time=391110792 + 800 * 300,
        total_wait_time=88675 + 200 * 50,
    )
    counters = lambda r: {k: v for k, v in r.items() if k.startswith("total_")}  # noqa: E731
    tracker = CounterTracker()
    tracker.advance(counters(first), now=0.0)
    rates = stats_rates(tracker.advance(counters(later), now=2.0))
    assert rates["xact_per_s"] == 100.0
    assert rates["query_per_s"] == 400.0
    assert rates["avg_xact_time_us"] == 1500.0
    assert rates["avg_query_time_us"] == 300.0
    assert rates["avg_wait_time_us"] == 50.0
    assert rates["wait_time_us_per_s"] == 5000.0
    assert "server_assignments_per_s" not in rates  # a 1.23+ column, absent in 1.18


def test_stats_rates_include_1_23_assignment_count_when_present():
    tracker = CounterTracker()
    tracker.advance({"total_xact_count": 0, "total_server_assignment_count": 10}, now=0.0)
    rates = stats_rates(tracker.advance({"total_xact_count": 5, "total_server_assignment_count": 30}, now=1.0))
    assert rates["server_assignments_per_s"] == 20.0
    assert rates["avg_xact_time_us"] is None  # no total_xact_time column: no average rather than a wrong one
