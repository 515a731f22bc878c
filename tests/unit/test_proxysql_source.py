"""ProxySQLSource against the ProxySQL admin stand-in."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import time

import pymysql
import pytest

from benchtop.sources.base import Missing, SourceError
from benchtop.sources.proxysql import ProxySQLSource
from benchtop.target import fill_defaults, parse_dsn
from tests.proxysql_standin import Standin, start_standin

POOL_COLUMNS = [
    "hostgroup", "srv_host", "srv_port", "status", "ConnUsed", "ConnFree", "ConnOK", "ConnERR",
    "MaxConnUsed", "Queries", "Queries_GTID_sync", "Bytes_data_sent", "Bytes_data_recv", "Latency_us",
]  # fmt: skip


@pytest.fixture
def standin():
    s = start_standin()
    yield s
    s.stop()


def make_source(s: Standin, user: str = "admin", timeout_s: float = 3.0, **options) -> ProxySQLSource:
    # Exactly how `benchtop monitor --proxysql DSN` builds it.
    target = fill_defaults(parse_dsn(s.dsn(user)))
    return ProxySQLSource("proxysql", target, timeout_s, **options)


def _pool_by_server(snapshot) -> dict[str, dict]:
    return {r["srv_host"]: r for r in snapshot.panels["connection_pool"]}


def test_detects_proxysql_and_its_version(standin):
    source = make_source(standin)
    source.connect()
    assert source.version == "2.7.1-16-g2726c27"
    source.close()
    assert standin.queries_seen[:3] == ["SET NAMES utf8mb4", "SELECT @@admin-version", "SHOW TABLES FROM stats"]


def test_rates_between_polls_follow_simulated_traffic(standin):
    source = make_source(standin, digest_interval_s=0)
    first = source.poll()
    assert first.ok and first.interval_s is None
    assert _pool_by_server(first)["10.0.0.1"]["Queries_per_s"] is None
    standin.simulate_traffic(seconds=2.0, qps=1000)
    second = source.poll()
    dt = second.interval_s
    assert dt and dt > 0
    pool = _pool_by_server(second)
    primary = pool["10.0.0.1"]
    assert primary["Queries"] == 400  # UPDATE+INSERT+DELETE: 20% of 2000, all to hostgroup 0
    assert primary["Queries_per_s"] == pytest.approx(400 / dt, rel=1e-3)
    assert primary["Bytes_data_recv_per_s"] == pytest.approx(400 * 400 / dt, rel=1e-3)
    assert primary["ConnERR_per_s"] == 0.0
    assert primary["ConnUsed_pct"] == 20.0  # 2 used, 8 free
    assert (primary["weight"], primary["max_connections"]) == (1, 200)

    assert second.panels["global"]["Questions"] == 2000
    assert second.panels["global"]["mysql_listener_paused"] == "false"
    assert second.panels["global_rates"]["Questions"] == pytest.approx(2000 / dt, rel=1e-3)
    assert "ProxySQL_Uptime" not in second.panels["global_rates"]  # a gauge, not a counter

    select = next(c for c in second.panels["commands"] if c["Command"] == "SELECT")
    assert select["cnt_per_s"] == pytest.approx(1600 / dt, rel=1e-3)
    assert select["avg_us"] == 450.0  # 1200 x 300 us + 400 x 900 us
    assert select["buckets"]["cnt_500us"] == 1600 and select["buckets"]["cnt_INFs"] == 0

    rules = {r["rule_id"]: r for r in second.panels["query_rules"]}
    assert rules[2]["hits_per_s"] == pytest.approx(1600 / dt, rel=1e-3)
    assert (rules[2]["match_digest"], rules[2]["destination_hostgroup"]) == ("^SELECT", 1)

    top = second.panels["digest_top"]
    assert top[0]["digest_text"].startswith("UPDATE sbtest1") and top[0]["avg_us"] == 2000.0
    assert [r["time_ms_per_s"] for r in top] == sorted((r["time_ms_per_s"] for r in top), reverse=True)

    wait = second.panels["pool_wait"]
    assert wait["immediate_pct"] == 90.0
    assert wait["proxy_time_pct"] == 10.0  # the stand-in's backends take 90% of statement time
    assert wait["backend_time_ms_per_s"] + wait["proxy_time_ms_per_s"] == pytest.approx(
        wait["statement_time_ms_per_s"], abs=0.01
    )
    assert isinstance(second.panels["hostgroup_waits"], Missing)
    assert second.poll_ms > 0


def test_snapshot_json_has_pool_rows_keyed_by_proxysql_columns(standin):
    standin.simulate_traffic(1.0)
    out = json.loads(json.dumps(make_source(standin).poll().to_dict()))
    assert out["kind"] == "proxysql" and out["ok"] is True
    rows = out["stats_mysql_connection_pool"]  # ProxySQL's tables under their own names
    assert {"stats_mysql_global", "stats_mysql_commands_counters", "stats_mysql_processlist",
            "stats_mysql_query_rules", "stats_mysql_query_digest", "runtime_mysql_servers"} <= set(out)
    assert len(rows) == 3
    assert list(rows[0])[: len(POOL_COLUMNS)] == POOL_COLUMNS
    assert isinstance(rows[0]["Queries"], int) and rows[0]["status"] == "ONLINE"


def test_columns_are_read_by_name_missing_and_extra_ones_are_tolerated(standin):
    # ProxySQL 1.4 had no MaxConnUsed / Queries_GTID_sync, nor processlist status_flags / extended_info.
    for sql in (
        "ALTER TABLE stats.stats_mysql_connection_pool DROP COLUMN MaxConnUsed",
        "ALTER TABLE stats.stats_mysql_connection_pool DROP COLUMN Queries_GTID_sync",
        "ALTER TABLE stats.stats_mysql_connection_pool ADD COLUMN Future_col INT DEFAULT 7",
        "ALTER TABLE stats.stats_mysql_processlist DROP COLUMN extended_info",
        "ALTER TABLE stats.stats_mysql_processlist DROP COLUMN status_flags",
    ):
        standin.execute(sql)
    source = make_source(standin)
    source.poll()
    standin.execute("UPDATE stats_mysql_connection_pool SET Queries = Queries + 50, ConnUsed = 3, ConnFree = 1")
    snap = source.poll()
    row = _pool_by_server(snap)["10.0.0.2"]
    assert "MaxConnUsed" not in row and row["Future_col"] == 7
    assert row["Queries_per_s"] == pytest.approx(50 / snap.interval_s, rel=1e-3)
    assert row["ConnUsed_pct"] == 75.0
    assert isinstance(snap.panels["processlist"], list)


def test_stats_user_degrades_runtime_joins_with_a_hint(standin):
    standin.simulate_traffic(1.0)
    snap = make_source(standin, user="stats").poll()
    assert snap.ok
    servers = snap.panels["servers"]
    assert servers == Missing("runtime_mysql_servers not readable by this user", servers.hint)
    assert "admin" in servers.hint
    assert isinstance(snap.panels["query_rule_config"], Missing)
    pool = snap.panels["connection_pool"]
    assert len(pool) == 3 and "weight" not in pool[0]
    assert {r["rule_id"] for r in snap.panels["query_rules"]} == {1, 2}
    assert "match_digest" not in snap.panels["query_rules"][0]
    assert snap.to_dict()["runtime_mysql_servers"]["missing"] == "runtime_mysql_servers not readable by this user"


def test_only_reads_and_never_a_reset_table(standin):
    source = make_source(standin, digest_interval_s=0, processlist_interval_s=0)
    for _ in range(3):
        standin.simulate_traffic(1.0)
        source.poll()
    source.close()
    seen = standin.queries_seen
    assert len(seen) > 20
    assert not [q for q in seen if "_reset" in q.lower()]
    assert all(re.match(r"(SELECT|SHOW) ", q) or q == "SET NAMES utf8mb4" for q in seen), seen


def test_costly_tables_are_throttled(standin):
    source = make_source(standin)  # processlist and digests: at most every 5 s by default
    standin.simulate_traffic(1.0)
    first = source.poll()
    standin.execute("DELETE FROM stats_mysql_processlist")
    for _ in range(2):
        snap = source.poll()
    assert sum("stats_mysql_processlist" in q for q in standin.queries_seen) == 1
    assert sum("stats_mysql_query_digest" in q for q in standin.queries_seen) == 1
    assert len(first.panels["processlist"]) == 2
    assert snap.panels["processlist"] == first.panels["processlist"]  # reused, not re-read
    assert snap.panels["ages_s"]["processlist"] > 0


def test_digest_rereads_only_recently_seen_digests(standin):
    standin.simulate_traffic(1.0)
    source = make_source(standin, digest_interval_s=0)
    source.poll()
    standin.simulate_traffic(1.0)
    snap = source.poll()
    digest_queries = [q for q in standin.queries_seen if "stats_mysql_query_digest" in q]
    assert "WHERE" not in digest_queries[0] and "WHERE last_seen >=" in digest_queries[1]
    assert len(snap.panels["digest_top"]) == 5


def test_counter_reset_by_someone_else_gives_no_rate_not_a_negative_one(standin):
    standin.simulate_traffic(1.0)
    source = make_source(standin)
    source.poll()
    with pymysql.connect(host=standin.host, port=standin.port, user="admin", password="admin") as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM stats_mysql_connection_pool_reset")  # what another tool might do
    snap = source.poll()
    assert all(r["Queries_per_s"] is None for r in snap.panels["connection_pool"])


def test_hostgroup_wait_times_when_the_build_has_them():
    with start_standin(hostgroup_pool=True) as s:
        s.simulate_traffic(1.0)
        source = make_source(s)
        source.poll()
        s.simulate_traffic(2.0)
        snap = source.poll()
    rows = {r["hostgroup"]: r for r in snap.panels["hostgroup_waits"]}
    assert rows[1]["avg_wait_us"] == 12.5  # 1 wait of 250 us every 20 acquisitions
    assert rows[1]["acquisitions_per_s"] == pytest.approx(1600 / snap.interval_s, rel=1e-3)


def test_stopped_proxy_raises_one_line_source_error_then_reconnects(standin):
    source = make_source(standin)
    source.poll()
    port = standin.port
    standin.stop()
    with pytest.raises(SourceError) as lost:
        source.poll()
    assert "\n" not in str(lost.value) and "connection lost" in str(lost.value)
    assert source.try_reconnect() is False
    with start_standin(port=port) as restarted:
        assert source.try_reconnect() is True
        snap = source.poll()
        assert snap.ok and snap.interval_s is None  # counters restarted: no rate across the outage
        assert restarted.queries_seen


def test_hung_proxy_cannot_hang_a_poll(standin):
    source = make_source(standin, timeout_s=0.5)
    source.poll()
    standin.set_hung(True)
    started = time.monotonic()
    with pytest.raises(SourceError):
        source.poll()
    assert time.monotonic() - started < 2.0
    standin.set_hung(False)


def test_unreachable_and_wrong_password_are_one_line_errors(standin):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    target = fill_defaults(parse_dsn(f"proxysql://admin:admin@127.0.0.1:{free_port}"))
    with pytest.raises(SourceError) as refused:
        ProxySQLSource("p", target, 1.0).connect()
    assert "cannot connect" in str(refused.value) and "\n" not in str(refused.value)
    bad = fill_defaults(parse_dsn(f"proxysql://admin:nope@127.0.0.1:{standin.port}"))
    with pytest.raises(SourceError) as denied:
        ProxySQLSource("p", bad, 1.0).connect()
    assert "admin-admin_credentials" in str(denied.value)


@pytest.mark.realdb
def test_a_mysql_server_is_not_taken_for_proxysql(mysql_server):
    target = dataclasses.replace(mysql_server.target(), kind="proxysql")
    with pytest.raises(SourceError) as exc:
        ProxySQLSource("proxysql", target, 5.0).connect()
    assert "not a ProxySQL admin interface" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.realdb
def test_real_proxysql_when_one_is_given(proxysql_server):
    """Runs only with BENCHTOP_TEST_PROXYSQL_DSN: the same source against the real thing."""
    source = ProxySQLSource("proxysql", proxysql_server.target(), 5.0)
    first, second = source.poll(), source.poll()
    source.close()
    assert first.ok and second.ok and second.interval_s
    assert isinstance(second.panels["connection_pool"], list)
    assert isinstance(second.panels["global"], dict) and "Questions" in second.panels["global"]
