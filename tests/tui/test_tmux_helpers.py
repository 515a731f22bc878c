"""The tmux helpers the end-to-end TUI tests use."""

from __future__ import annotations

import pytest

from tests.tui import tmux_helpers

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux_helpers.tmux_available(), reason="tmux is not installed"),
]


def test_start_send_capture_wait_kill() -> None:
    session = tmux_helpers.start("echo ready; read x; echo got $x; sleep 30", width=60, height=10)
    try:
        session.wait_for("ready", timeout=5)
        session.send_keys("hello", literal=True)
        session.send_keys("Enter")
        screen = session.wait_for("got hello", timeout=5)
        assert len(screen.splitlines()[0]) <= 60
        with pytest.raises(TimeoutError, match="never there"):
            session.wait_for("never there", timeout=0.3)
    finally:
        session.kill()
    assert not session.alive()


def test_wait_exit_and_keep_open() -> None:
    session = tmux_helpers.start("echo done-now", keep_open=True)
    try:
        assert "done-now" in session.wait_for("done-now", timeout=5)
        assert session.alive()  # the pane stays so the output can be read
    finally:
        session.kill()
    quick = tmux_helpers.start("true")
    assert quick.wait_exit(timeout=5)


def test_wait_gone() -> None:
    session = tmux_helpers.start("echo first; sleep 0.5; clear; echo second; sleep 30", width=40, height=5)
    try:
        session.wait_for("first", timeout=5)
        assert "second" in session.wait_gone("first", timeout=5) or "second" in session.wait_for("second", timeout=5)
    finally:
        session.kill()
