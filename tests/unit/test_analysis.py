"""Steady state, stalls with what the monitor saw, and validity verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchtop.record.analysis import (
    Validity,
    after_warmup,
    analyse,
    analysis_text,
    enrich_results,
    find_stalls,
    steady_state,
    target_validity,
    validity_from_settings,
    validity_from_snapshot,
)
from benchtop.sources.base import Missing, SourceSnapshot


def ivs(values: list[float], start: float = 1.0) -> list[dict]:
    return [{"t": start + i, "dt": 1.0, "tps": v} for i, v in enumerate(values)]


def test_steady_state_after_warmup():
    data = ivs([10, 20, 100, 102, 98, 100])
    kept = after_warmup(data, warmup_s=2.0)
    assert [iv["tps"] for iv in kept] == [100, 102, 98, 100]
    ss = steady_state([iv["tps"] for iv in kept])
    assert (ss.samples, ss.median, ss.mean, ss.min, ss.max) == (4, 100.0, 100.0, 98.0, 102.0)
    assert ss.stddev == pytest.approx(1.633, abs=1e-3)
    assert ss.to_dict()["cv"] == pytest.approx(0.0163, abs=1e-4)
    assert steady_state([]).samples == 0


def test_a_stretch_is_labelled_with_the_setting_it_ran_at():
    # '+' at 11.082 s: the interval ending at 11.089 ran at 4 threads all but 7 ms of it, and reads 5
    data = [dict(iv, threads=4 if iv["t"] < 11 else 5) for iv in ivs([100.0] * 10 + [120.0] * 6, start=1.089)]
    out = analyse(data, events=[{"t": 11.082, "kind": "threads"}])
    assert [(s["threads"], s["samples"]) for s in out["segments"]] == [(4, 11), (5, 5)]
    assert "0:00-0:11 (threads 4)" in analysis_text(out)


def test_binlog_rotation_like_drops_are_stalls():
    # a drop to zero every 4th second, as with sync_binlog=0 rotations
    values = [1000, 1000, 1000, 0, 1000, 1000, 1000, 20, 1000, 600]
    stalls = find_stalls(ivs(values), median=1000.0)
    assert [(s.start, s.duration, s.min_tps) for s in stalls] == [(3.0, 1.0, 0.0), (7.0, 1.0, 20.0)]
    assert find_stalls(ivs(values), median=1000.0, fraction=0.7)[-1].min_tps == 600
    paused = ivs([1000, 0, 1000])
    paused[1]["paused"] = True
    assert find_stalls(paused, 1000.0) == []


def test_stalls_list_what_the_sources_saw():
    started_at = 1_700_000_000.0
    records = [
        {"type": "snapshot", "t": started_at + 2.0, "sources": {
            "pg": {"kind": "postgresql", "ok": True, "checkpoints": {"timed": 5, "requested": 0}, "wal_bytes_per_s": 2e6},
            "my": {"kind": "mysql", "ok": True, "binlog": {"rotations": 0}, "innodb": {"checkpoint_age_pct": 40.0}}}},
        {"type": "snapshot", "t": started_at + 4.0, "sources": {
            "pg": {"kind": "postgresql", "ok": True, "checkpoints": {"timed": 5, "requested": 1}, "wal_bytes_per_s": 9e7},
            "my": {"kind": "mysql", "ok": True, "binlog": {"rotations": 1}, "innodb": {"checkpoint_age_pct": 91.0}},
            "bouncer": {"kind": "pgbouncer", "ok": True, "clients": {"waiting": 12}}}},
        {"type": "snapshot", "t": started_at + 9.0, "sources": {
            "pg": {"kind": "postgresql", "ok": False, "error": "connection lost"}}},
    ]
    out = analyse(ivs([1000, 1000, 1000, 0, 1000, 1000, 1000, 1000, 1000]), records=records, started_at=started_at)
    assert out["steady_state"]["median"] == 1000.0
    [stall] = out["stalls"]
    assert (stall["start"], stall["duration"], stall["min_tps"]) == (3.0, 1.0, 0.0)
    assert stall["seen"] == [
        "pg: requested checkpoint", "my: binlog rotation", "pg: WAL up to 85.8 MiB/s",
        "my: checkpoint age up to 91%", "bouncer: up to 12 clients waiting",
    ]
    # records with run_t need no start time; a source outage is reported as such
    late = analyse(ivs([1000] * 8 + [0]), records=[{"run_t": 8.5, **records[2]}], started_at=None)
    assert late["stalls"][0]["seen"] == ["pg: down (connection lost)"]


@pytest.mark.parametrize(
    "kind, settings, status, reasons",
    [
        ("mysql", {"innodb_flush_log_at_trx_commit": 1, "sync_binlog": 1, "log_bin": "ON", "innodb_doublewrite": "ON"},
         "durable", ()),
        ("mysql", {"innodb_flush_log_at_trx_commit": 1, "sync_binlog": 0, "log_bin": "OFF", "innodb_doublewrite": 1},
         "durable", ()),
        ("mysql", {"innodb_flush_log_at_trx_commit": 0, "sync_binlog": 0, "log_bin": "ON", "innodb_doublewrite": "OFF"},
         "crash-unsafe", ("innodb_flush_log_at_trx_commit=0", "sync_binlog=0 with the binary log on",
                          "innodb_doublewrite=OFF")),
        ("mysql", {}, "unknown", ("innodb_flush_log_at_trx_commit not readable",)),
        ("postgresql", {"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off", "wal_level": "minimal"},
         "crash-unsafe", ("fsync=off", "full_page_writes=off", "synchronous_commit=off")),
        ("postgresql", {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "local"}, "durable", ()),
        ("sqlite", {"synchronous": "FULL"}, "durable", ()),
        ("sqlite", {"synchronous": "OFF"}, "not crash-durable", ("synchronous=OFF",)),
        ("null", None, "no database", ()),
        ("mysql", None, "unknown", ("settings not readable",)),
    ],
)
def test_validity_rules(kind, settings, status, reasons):
    v = validity_from_settings(kind, settings)
    assert (v.status, v.reasons) == (status, reasons)
    assert Validity.from_dict(v.to_dict()) == v


def test_sqlite_engine_is_not_crash_durable_and_text_says_so():
    v = target_validity("sqlite", None)
    assert v.status == "not crash-durable" and v.label == "NOT DURABLE"
    text = analysis_text({"validity": v.to_dict(), "steady_state": steady_state([1.0, 3.0]).to_dict(),
                          "stalls": [{"start": 5, "duration": 2, "min_tps": 0, "seen": ["my: binlog rotation"]}]})
    assert text.splitlines() == [
        "steady state: median 2.00 tps, mean 2.00, stddev 1.41 (70.7%) over 2 intervals",
        "stall at 5s for 2s (min 0 tps); my: binlog rotation",
        "validity: NOT CRASH-DURABLE settings (synchronous=NORMAL): not comparable with results on durable settings",
        "validity: breaks ACID durability: synchronous=NORMAL",
    ]


def test_enrich_results_updates_summary(tmp_path: Path):
    (tmp_path / "summary.json").write_text(json.dumps({"type": "summary", "tps": 750.0}))
    (tmp_path / "intervals.jsonl").write_text("".join(json.dumps(iv) + "\n" for iv in ivs([1000, 0, 1000, 1000])))
    out = enrich_results(tmp_path, validity_from_settings("postgresql", {"fsync": "off"}))
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved == out
    assert saved["stalls"] == [{"start": 1.0, "duration": 1.0, "min_tps": 0.0, "seen": []}]
    assert saved["validity"]["status"] == "crash-unsafe" and saved["validity"]["crash_safe"] is False


def test_validity_from_a_monitor_snapshot():
    snap = SourceSnapshot(name="mysql", kind="mysql", t=0.0, ok=True,
                          panels={"settings": {"innodb_flush_log_at_trx_commit": 0, "innodb_doublewrite": "ON"}})
    assert validity_from_snapshot(snap).reasons == ("innodb_flush_log_at_trx_commit=0",)
    denied = SourceSnapshot(name="pg", kind="postgresql", t=0.0, ok=True, panels={"settings": Missing("not permitted")})
    assert validity_from_snapshot(denied) is None
