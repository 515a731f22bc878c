"""`benchtop replay`: recorded monitor snapshots and intervals come back in
time order, at the recorded pace (scaled), as text or JSON Lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

from benchtop.commands import replay

T0 = 1_700_000_000.0


def _folder(tmp_path: Path, with_run: bool = True) -> Path:
    snaps = [
        {"type": "snapshot", "t": T0 + 0.5, "sources": {"mysql": {
            "kind": "mysql", "ok": True, "poll_ms": 3.2, "threads": {"running": 4, "connected": 9},
            "status_rates": {"questions_per_s": 1200.0, "commits_per_s": 60.0},
            "innodb": {"redo_bytes_per_s": 1e6, "checkpoint_age_pct": 12.5, "dirty_pages_pct": 3.0}}}},
        {"type": "snapshot", "t": T0 + 2.5, "sources": {"mysql": {"kind": "mysql", "ok": False, "poll_ms": 5000.0,
                                                                    "error": "connection lost"}}},
    ]
    (tmp_path / "monitor.jsonl").write_text("".join(json.dumps(s) + "\n" for s in snaps))
    if with_run:
        (tmp_path / "summary.json").write_text(json.dumps({"started_at": T0}))
        (tmp_path / "intervals.jsonl").write_text("".join(
            json.dumps({"type": "interval", "t": t, "threads": 4, "tps": 100.0 * t, "qps": 1000.0,
                        "latency_ms": {"p95": 1.5, "p99": 2.5}}) + "\n" for t in (1.0, 2.0, 3.0)))
        (tmp_path / "timeline.jsonl").write_text(json.dumps({"type": "event", "t": 2.0, "kind": "threads",
                                                             "text": "threads 8"}) + "\n")
    return tmp_path


def test_events_are_merged_on_the_run_clock(tmp_path):
    evs = replay.events(_folder(tmp_path))
    assert [(e.t, e.kind) for e in evs] == [(0.5, "snapshot"), (1.0, "interval"), (2.0, "event"),
                                            (2.0, "interval"), (2.5, "snapshot"), (3.0, "interval")]


def test_play_keeps_the_pace_and_prints_text(tmp_path):
    waits: list[float] = []
    out = io.StringIO()
    n = replay.play(replay.events(_folder(tmp_path)), out, speed=2.0, sleep=waits.append)
    assert n == 6
    assert waits == [0.25, 0.5, 0.25, 0.25]
    text = out.getvalue()
    assert "[ 0s ]" in text and "running 4  connected 9" in text and "checkpoint age 12.5%" in text
    assert "[ 1s ] thds: 4 tps: 100.00" in text and "-- threads: threads 8" in text
    assert "DOWN: connection lost" in text


def test_monitor_only_recording_and_json(tmp_path, capsys):
    folder = _folder(tmp_path, with_run=False)
    assert replay.main([str(folder), "--no-wait", "--json"]) == 0
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [ln["replay_t"] for ln in lines] == [0.0, 2.0]
    assert lines[1]["sources"]["mysql"]["error"] == "connection lost"


def test_errors(tmp_path, capsys):
    assert replay.main([str(tmp_path / "missing")]) == 1
    assert replay.main([str(tmp_path)]) == 1
    assert "nothing recorded" in capsys.readouterr().err
    assert replay.main([str(tmp_path), "--speed", "0"]) == 2


def test_damaged_files_are_named_not_reported_missing(tmp_path, capsys):
    (tmp_path / "monitor.jsonl").write_bytes(b"\x00\xff garbage\nnot json either\n")
    (tmp_path / "intervals.jsonl").write_text("{torn")
    assert replay.main([str(tmp_path), "--no-wait"]) == 1
    err = capsys.readouterr().err
    assert "no readable record in monitor.jsonl, intervals.jsonl" in err and "Traceback" not in err
