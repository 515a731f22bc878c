"""A monitor session recorded with --out replays with the same snapshots."""

from __future__ import annotations

import io
import json
from pathlib import Path

from benchtop.commands.monitor import main as monitor_main
from benchtop.commands.replay import main as replay_main
from benchtop.record.monitor import snapshot_from_dict
from benchtop.screens.replay import replay_pollers
from benchtop.commands.replay import events
from tests.proxysql_standin import start_standin


def test_recorded_monitor_session_replays(tmp_path: Path) -> None:
    standin = start_standin()
    try:
        out = io.StringIO()
        rc = monitor_main(["--proxysql", f"proxysql://admin:admin@127.0.0.1:{standin.port}", "--no-os",
                           "--headless", "--json", "--count", "2", "--interval", "0.2", "--out", str(tmp_path)], out=out)
        assert rc == 0
    finally:
        standin.stop()
    printed = [json.loads(x) for x in out.getvalue().splitlines()]
    recorded = [json.loads(x) for x in (tmp_path / "monitor.jsonl").read_text().splitlines()]
    assert recorded == printed and len(recorded) == 2
    assert (tmp_path.stat().st_mode & 0o777) == 0o700

    replayed = io.StringIO()
    assert replay_main([str(tmp_path), "--json", "--no-wait"], out=replayed) == 0
    again = [json.loads(x) for x in replayed.getvalue().splitlines()]
    assert [r["sources"] for r in again] == [r["sources"] for r in recorded]

    pollers = replay_pollers(events(tmp_path), speed=1000.0)
    assert [p.name for p in pollers] == ["proxysql"]
    first = pollers[0].poll()
    assert first.kind == "proxysql" and first.ok
    assert first.to_dict() == {**recorded[0]["sources"]["proxysql"]}


def test_snapshot_round_trip_keeps_missing_panels() -> None:
    d = {"kind": "mysql", "ok": True, "poll_ms": 1.5, "waits": {"missing": "performance_schema off", "hint": "x"},
         "innodb": {"lsn": 5}}
    snap = snapshot_from_dict("mysql", 3.0, d)
    assert snap.panel("waits") is None and snap.panel("innodb") == {"lsn": 5}
    assert snap.to_dict() == d


def test_monitor_record_is_the_line_every_writer_wrote() -> None:
    """One builder for monitor.jsonl: the bytes each writer (run side-car,
    monitor TUI, headless monitor with its verdict) put there before it."""
    from benchtop.record.monitor import MonitorRecord
    from benchtop.sources.base import SourceSnapshot
    from benchtop.verdict.snapshots import monitor_verdict

    pg = SourceSnapshot("pg", "postgresql", 1700000000.12345, True, 2.5, panels={"wal": {"wal_bytes_per_s": 1.0}})
    os_ = SourceSnapshot("os", "os", 1700000000.2, True, panels={"cpu": {"idle_pct": 90.0}})
    side_car = {"type": "snapshot", "t": pg.t, "sources": {pg.name: pg.to_dict()}}
    assert json.dumps(MonitorRecord(pg.t, (pg,)).to_dict(), separators=(",", ":")) == \
        json.dumps(side_car, separators=(",", ":"))
    tui = {"type": "snapshot", "t": round(pg.t, 3), "sources": {pg.name: pg.to_dict()}}
    assert json.dumps(MonitorRecord(round(pg.t, 3), (pg,)).to_dict()) == json.dumps(tui)
    verdict = monitor_verdict([pg, os_], 4)
    headless = {"type": "snapshot", "t": 1700000000.5, "sources": {s.name: s.to_dict() for s in (pg, os_)},
                "verdict": verdict.to_dict()}
    assert json.dumps(MonitorRecord(1700000000.5, (pg, os_), verdict).to_dict()) == json.dumps(headless)
