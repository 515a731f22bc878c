"""The app in a real terminal (tmux): the keys arrive as a user types them
(Pilot skips the terminal's key decoding), and the run ends on its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.tui import tmux_helpers

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux_helpers.tmux_available(), reason="tmux is not installed"),
]
ROOT = Path(__file__).resolve().parents[2]


def _start(*args: str) -> tmux_helpers.TmuxSession:
    return tmux_helpers.start(
        [sys.executable, "-m", "tests.tui.fake_app", *args], 80, 24, cwd=str(ROOT), keep_open=True
    )


def test_keys_typed_in_a_terminal() -> None:
    session = _start()
    try:
        session.wait_for("threads: 8", timeout=20)
        session.send_keys("+", literal=True)
        session.wait_for("threads: 9", timeout=5)
        session.send_keys("*", literal=True)
        session.wait_for("threads: 18", timeout=5)
        session.send_keys("]", literal=True)
        session.wait_for("/s target", timeout=5)
        session.send_keys("Space")
        session.wait_for("PAUSED", timeout=5)
        session.send_keys("?", literal=True)
        session.wait_for("benchtop keys", timeout=5)
        session.send_keys("Escape")
        # a key right after escape would arrive as alt+key: wait for the dialog to close
        session.wait_gone("benchtop keys", timeout=5)
        session.send_keys("q", literal=True)
        screen = session.wait_for("stopped by: quit", timeout=15)
        assert "threads 18" in screen
        assert "event threads: threads 9" in screen and "event pause: paused" in screen
    finally:
        session.kill()


def test_finished_run_closes_by_itself() -> None:
    session = _start("1")  # finished at its first sample
    try:
        screen = session.wait_for("stopped by: time", timeout=30)
        assert "Traceback" not in screen
    finally:
        session.kill()
