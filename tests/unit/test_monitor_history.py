"""The monitor's history buffer (panels/history.py): bounded per source,
one value per poll, gaps filled, and each source kind's main rates read
from panels shaped as its source writes them."""

from __future__ import annotations

from typing import Any

import pytest

from benchtop.panels.history import History, metrics_for
from benchtop.sources.base import Missing, SourceSnapshot
from tests.tui.fakes import MYSQL_PANELS, PG_TOP_PANELS, PGB_PANELS, PROXYSQL_PANELS


# stats_mysql_global as ProxySQL 2.x reports it has the pool's failed gets too
PROXY_PANELS = dict(PROXYSQL_PANELS, global_rates=dict(PROXYSQL_PANELS["global_rates"], ConnPool_get_conn_failure=0.0))


def _snap(kind: str, t: float, panels: dict[str, Any]) -> SourceSnapshot:
    return SourceSnapshot(kind, kind, t, True, panels=panels)


def test_bounded_and_one_value_per_poll() -> None:
    h = History(metrics_for("proxysql"), keep=5)
    for i in range(12):
        h.add(_snap("proxysql", 100.0 + 2 * i, dict(PROXYSQL_PANELS, global_rates={"Questions": float(i)})))
    assert len(h) == 5 and h.values("queries") == (7.0, 8.0, 9.0, 10.0, 11.0)
    assert h.span_s == 8.0 and h.step_s == 2.0  # the polls' own times, not an assumed interval


def test_a_poll_without_the_value_repeats_the_last() -> None:
    h = History(metrics_for("proxysql"), keep=10)
    h.add(_snap("proxysql", 0.0, PROXYSQL_PANELS))
    h.add(_snap("proxysql", 1.0, dict(PROXYSQL_PANELS, connection_pool=Missing("stats_mysql_connection_pool"))))
    assert h.values("connections in use") == (2.0, 2.0)  # a chart has no holes
    empty = History(metrics_for("proxysql"))
    empty.add(_snap("proxysql", 0.0, {}))
    assert empty.values("queries") == (0.0,)


@pytest.mark.parametrize(("kind", "panels", "expected"), [
    ("mysql", MYSQL_PANELS, {"queries", "commits", "redo written", "checkpoint age", "threads running"}),
    ("postgresql", PG_TOP_PANELS, {"commits", "WAL written", "active sessions", "cache hit", "rows changed"}),
    ("pgbouncer", PGB_PANELS, {"transactions", "clients waiting", "clients active"}),
    ("proxysql", PROXY_PANELS, {"queries", "connections in use", "pool get failures"}),
])  # fmt: skip
def test_each_kind_reads_its_main_rates(kind: str, panels: dict[str, Any], expected: set[str]) -> None:
    metrics = metrics_for(kind)
    assert {m.label for m in metrics} == expected
    unread = [m.label for m in metrics if m.get(panels) is None]
    assert not unread, f"{kind}: {unread} not found in panels shaped as the source writes them"


def test_proxysql_and_postgres_figures() -> None:
    pg = {m.label: m for m in metrics_for("postgresql")}
    assert pg["cache hit"].get(PG_TOP_PANELS) == pytest.approx(99.8)  # a percentage on the chart's axis
    px = {m.label: m for m in metrics_for("proxysql")}
    assert px["queries"].get(PROXYSQL_PANELS) == 999.0
    pool = [{"ConnUsed": 3, "ConnFree": 1}, {"ConnUsed": 4, "ConnFree": 0}, {"ConnUsed": None}]
    assert px["connections in use"].get({"connection_pool": pool}) == 7.0


def test_the_first_polls_without_a_rate_take_the_first_rate_not_zero() -> None:
    """A rate needs two polls: the first poll's chart point is not a drop to 0
    (which set the range on screen to 'min 0/s' and the cache hit to 'min 0.0%')."""
    h = History(metrics_for("postgresql"))
    first = dict(PG_TOP_PANELS, database=dict(PG_TOP_PANELS["database"], commits_per_s=None),
                 cache_hit_ratio={"interval": None, "cumulative": 0.99})
    h.add(_snap("postgresql", 0.0, first))
    h.add(_snap("postgresql", 1.0, dict(PG_TOP_PANELS, cache_hit_ratio={"interval": 0.95, "cumulative": 0.99})))
    assert h.values("cache hit") == (pytest.approx(95.0), pytest.approx(95.0))
    assert min(h.values("commits")) == PG_TOP_PANELS["database"]["commits_per_s"]
