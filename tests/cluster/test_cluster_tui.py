"""The --cluster dashboard in a real terminal (tmux) on the local Ray
cluster: its frames reach the terminal, not the ray.log that takes Ray's
own lines (issue 43: the TUI was blank for the whole run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cluster.conftest import LOOPBACK_ENV, LocalCluster
from tests.tui import tmux_helpers

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux_helpers.tmux_available(), reason="tmux is not installed"),
]
ROOT = Path(__file__).resolve().parents[2]


def test_the_cluster_dashboard_is_drawn_on_the_terminal(ray_cluster: LocalCluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    session = tmux_helpers.start(
        [sys.executable, "-m", "benchtop", "--cluster", ray_cluster.address, "--load-hosts", "2", "--threads", "2",
         "--engine", "null", "--time", "6", "--out", str(out)],
        80, 24, env={**LOOPBACK_ENV, "PYTHONPATH": str(ROOT)}, cwd=str(tmp_path), keep_open=True)
    try:
        screen = session.wait_for("p99", timeout=60)
        assert "tps" in screen
        session.wait_for("results:", timeout=60)  # the summary, once the dashboard has closed
    finally:
        session.kill()
    log = out / "ray.log"
    assert not log.exists() or "p99" not in log.read_text(errors="replace")
