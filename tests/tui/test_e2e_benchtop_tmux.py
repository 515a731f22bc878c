"""The real command in a real terminal: benchtop on the embedded SQLite
default inside tmux, driven with keys as a user would, read off the screen."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from tests.tui import tmux_helpers

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux_helpers.tmux_available(), reason="tmux is not installed"),
]


def test_plus_adds_a_thread_on_screen_and_in_the_engine(tmp_path: Path) -> None:
    out = tmp_path / "res"
    session = tmux_helpers.start(
        [sys.executable, "-m", "benchtop", "--time", "60", "--threads", "1", "--workload", "oltp_point_select",
         "--out", str(out)],
        # tall enough for the whole summary printed after the TUI (with costs, sizes and validity)
        100, 50, env={"PYTHONPATH": str(ROOT), "TERM": os.environ.get("TERM", "xterm-256color")},
        cwd=str(ROOT), keep_open=True)
    try:
        session.wait_for("threads: 1", timeout=30)
        session.wait_for("tps", timeout=10)
        session.send_keys("+", literal=True)
        session.wait_for("threads: 2", timeout=10)
        intervals_file = out / "intervals.jsonl"
        deadline = time.monotonic() + 20
        # the file exists before its first line is written
        while time.monotonic() < deadline and not (
            intervals_file.exists() and '"threads":2' in (intervals_file.read_text().splitlines() or [""])[-1]
        ):
            time.sleep(0.1)
        session.send_keys("q", literal=True)
        screen = session.wait_for("SQL statistics:", timeout=30)
        assert "transactions:" in screen
    finally:
        session.kill()
    events = [json.loads(x) for x in (out / "timeline.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "threads" and e["text"] == "threads 2" for e in events)
    intervals = [json.loads(x) for x in (out / "intervals.jsonl").read_text().splitlines()]
    assert intervals[-1]["threads"] == 2
    assert json.loads((out / "summary.json").read_text())["transactions"] > 0
