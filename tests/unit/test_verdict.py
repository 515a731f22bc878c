"""The verdict's rules as pure functions: intervals recorded while each limit
was staged on the private servers (tests/unit/data/verdict_signals.jsonl)
get their staged limit; quiet-host, remote-server and edge cases built from
them; the rules, thresholds and docs agree."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from benchtop.verdict import LIMITS, Signals, Verdict, decide
from benchtop.verdict import rules
from benchtop.verdict.decide import rank

DATA = Path(__file__).parent / "data" / "verdict_signals.jsonl"
DOCS = Path(__file__).parents[2] / "docs" / "verdict.md"


def recorded() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def stage(name: str) -> list[Signals]:
    return [Signals.from_dict(r["signals"]) for r in recorded() if r["stage"].startswith(name)]


def test_every_recorded_interval_names_its_staged_limit():
    by_stage: dict[str, Counter] = defaultdict(Counter)
    for r in recorded():
        by_stage[(r["stage"], r["want"])][decide(Signals.from_dict(r["signals"])).limit] += 1
    assert len(by_stage) == 15
    for (name, want), got in by_stage.items():
        assert got[want] == sum(got.values()), f"{name}: {dict(got)}"


def test_verdict_json_shape_and_text():
    v = decide(stage("MariaDB oltp_update_non_index")[0])
    d = v.to_dict()
    assert set(d) == {"limit", "confidence", "evidence", "next", "figures", "lowered_by"}
    assert d["limit"] == "locks" and 0 < d["confidence"] <= 1
    assert "sessions waiting on locks" in d["evidence"] and "row lock waits per write" in d["evidence"]
    # the saturated host's CPU is close behind: named as next
    assert d["next"]["limit"] == "server_cpu" and "mariadbd" in d["next"]["evidence"]
    assert v.text().startswith("bound by lock waits: ") and "; next: server CPU (mariadbd" in v.text()
    json.dumps(d)


def test_disk_evidence_names_the_syncs():
    v = decide(stage("PostgreSQL oltp_insert")[1])
    assert v.limit == "disk"
    assert "flushes per transaction" in v.evidence and "IO:WALSync" in v.evidence


def test_durable_commits_do_not_take_the_time_lock_waits_explain():
    s = stage("PostgreSQL oltp_update_non_index")[0]
    assert rules.flushes_per_txn(s) >= rules.COMMIT_FLUSHES  # every commit syncs the WAL
    v = decide(s)
    assert v.limit == "locks" and "Lock:transactionid" in v.evidence
    # the same syncs without the lock waits: the commits' flushes are the limit
    assert decide(replace(s, lock_waiting=0.0, top_lock_wait=None)).limit == "disk"


def test_quiet_host_closed_loop_with_nothing_busy_is_network():
    s = replace(stage("PostgreSQL oltp_point_select, 1 thread")[0], host_busy_pct=35.0, run_queue=1,
                server_cores=0.4, client_cores=0.2)
    v = decide(s)
    assert v.limit == "network" and "ms per query" in v.evidence
    # the same on a host others keep saturated is not the network's doing
    assert decide(replace(s, host_busy_pct=100.0, run_queue=6)).limit == "server_cpu"
    # slow queries are not round trips
    assert decide(replace(s, latency_ms=50.0)).limit == "unclear"


def test_quiet_host_server_cpu_from_its_own_cores():
    s = replace(stage("PostgreSQL oltp_point_select, 8 threads")[0], server_cores=1.62, client_cores=0.3,
                host_busy_pct=60.0, run_queue=1)
    v = decide(s)
    assert v.limit == "server_cpu" and "postgres 1.62 of 2 cores" in v.evidence


def test_remote_server_lowers_confidence_and_says_what_is_missing():
    s = stage("PostgreSQL tpcb-select-only")[3]
    local = decide(s)
    remote = decide(replace(s, server_cores=None, server_local=False).with_missing("server CPU (remote server)"))
    assert remote.limit == local.limit == "pool"
    assert remote.confidence < local.confidence
    unclear = decide(Signals(threads=4, tps=100.0, latency_ms=40.0, busy_workers=4.0,
                             missing=("server CPU (remote server)", "server waits")))
    assert unclear.limit == "unclear" and "not read: server CPU (remote server), server waits" in unclear.evidence


def test_open_loop_behind_its_rate_is_not_rate():
    s = stage("PostgreSQL oltp_point_select, 4 threads, --rate 50")[0]
    assert decide(s).limit == "rate"
    # a hiccup caught up within the interval (a backlog of 60 ms of arrivals) is still the rate's
    assert decide(replace(s, tps=50.1, backlog=3.0, busy_workers=1.9)).limit == "rate"
    assert decide(replace(s, tps=50.1, backlog=30.0, busy_workers=4.0)).limit != "rate"
    behind = replace(s, tps=20.0, backlog=35.0, busy_workers=4.0)
    v = decide(behind)
    assert v.limit != "rate" and "20.0 of 50 transactions/s delivered" in v.evidence


def test_client_cpu_counts_the_cores_it_may_use():
    s = stage("PostgreSQL SELECT 1 after a 20000-step client loop")[0]
    assert s.client_cpus == 1
    quiet = replace(s, client_cores=0.97, host_busy_pct=55.0, run_queue=1)
    assert decide(quiet).limit == "client_cpu"
    # the same cores with two CPUs to use are half of them: not the limit
    assert decide(replace(quiet, client_cpus=2, threads=2)).limit != "client_cpu"


def test_rules_are_data_and_documented():
    docs = DOCS.read_text()
    for rule in (*rules.RESOURCE_RULES, rules.RATE_RULE, rules.NETWORK_RULE):
        assert rule.limit in LIMITS and rule.threshold > 0 and rule.what
        assert f"`{rule.limit}`" in docs
    for name in ("POOL_WAITING_SHARE", "LOCK_WAITING_SHARE", "LOCK_WAITS_PER_WRITE", "IO_WAITING_SHARE",
                 "COMMIT_FLUSHES", "COMMIT_OFF_CPU", "DISK_UTIL", "SERVER_CPU_SHARE", "HOST_SATURATED", "MAIN_USER_SHARE",
                 "CLIENT_CPU_SHARE", "RATE_DELIVERED", "RATE_BACKLOG_S", "NETWORK_MAX_QUERY_MS", "NEIGHBOUR_WAIT_SHARE",
                 "NEIGHBOUR_MAIN_SHARE", "NETWORK_OUTSIDE_SHARE"):
        value = getattr(rules, name)
        assert f"`{name}`" in docs, name
        assert f"{value:g}" in docs or f"{value:.2f}" in docs, (name, value)


@pytest.mark.parametrize("field", ["server_cores", "client_cores", "busy_workers", "lock_waiting", "pool_waiting"])
def test_missing_signals_never_raise(field):
    for r in recorded():
        s = replace(Signals.from_dict(r["signals"]), **{field: None})
        v = decide(s)
        assert v.limit in LIMITS
        assert [c.rule.limit for c in rank(s)]


def test_summary_names_the_limit_of_each_steady_stretch():
    from benchtop.record.analysis import analyse, analysis_text

    def iv(t: float, threads: int, limit: str) -> dict:
        return {"t": t, "dt": 1.0, "tps": 1000.0 + t, "threads": threads,
                "verdict": {"limit": limit, "confidence": 0.9, "evidence": f"{limit} evidence", "next": None}}

    ivs = [iv(float(t), 4, "server_cpu") for t in range(1, 7)] + [iv(float(t), 16, "locks") for t in range(7, 13)]
    out = analyse(ivs, events=[{"t": 6.0, "kind": "threads", "text": "threads 16"}])
    segs = out["segments"]
    assert [s["verdict"]["limit"] for s in segs] == ["server_cpu", "locks"]
    assert segs[0]["verdict"]["share"] == 1.0 and segs[0]["verdict"]["evidence"] == "server_cpu evidence"
    text = analysis_text(out)
    assert "bound by server CPU in 100% of" in text and "bound by lock waits in 100% of" in text


def test_text_mode_prints_the_verdict_under_each_interval(capsys):
    import sys

    from benchtop.engine.histogram import Histogram
    from benchtop.record.controller import Sample
    from benchtop.record.samples import IntervalStats
    from benchtop.run.headless import LinePrinter

    h = Histogram.empty()
    stats = IntervalStats(1.0, 1.0, 2, 0.0, False, 100, 100.0, 0, 0, 0, 0, 0, 0, {}, {"p95": 1.0}, {}, 0, 0, h, h)
    verdict = decide(stage("PostgreSQL tpcb-select-only")[2])
    LinePrinter(sys.stdout, False, 95.0).interval(Sample(stats, True, 1.0, verdict=verdict))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[ 1s ]") and lines[1].startswith("     bound by pool queue: PgBouncer: ")



def test_json_line_carries_the_verdict_after_the_run_fields_and_before_the_step(capsys):
    import sys

    from benchtop.engine.histogram import Histogram
    from benchtop.record.controller import Sample
    from benchtop.record.samples import IntervalStats
    from benchtop.run.headless import LinePrinter

    h = Histogram.empty()
    stats = IntervalStats(1.0, 1.0, 2, 0.0, False, 100, 100.0, 0, 0, 0, 0, 0, 0, {}, {"p95": 1.0}, {}, 0, 0, h, h)
    verdict = Verdict("locks", 0.8, "9.0 of 16 sessions waiting on locks", "server_cpu", "postgres 0.90 of 2 cores")
    sample = Sample(stats, True, 1.25, fields={"hosts_reporting": 2}, verdict=verdict, step=3)
    LinePrinter(sys.stdout, True, 95.0).interval(sample)
    d = json.loads(capsys.readouterr().out)
    assert list(d)[-3:] == ["hosts_reporting", "verdict", "step"]
    assert d["t"] == 1.25 and d["step"] == 3
    assert d["verdict"] == verdict.to_dict()
    assert d["verdict"]["next"] == {"limit": "server_cpu", "evidence": "postgres 0.90 of 2 cores"}
