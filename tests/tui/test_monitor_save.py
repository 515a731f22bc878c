"""`benchtop monitor --out DIR`: the screenshot key writes into DIR, beside
the recording, not into the current directory."""

from __future__ import annotations

import os
from pathlib import Path

from benchtop.screens.app import BenchtopApp
from tests.tui.fakes import POOLS_PANELS, FakeSource


async def test_monitor_screenshot_goes_to_the_results_folder(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "rec"
    out.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    app = BenchtopApp(None, [FakeSource("pgbouncer", [POOLS_PANELS])], save_dir=out)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+s")  # in the monitor, s sorts (Proxytop's key)
        await pilot.pause(0.2)
    assert [p.suffix for p in out.iterdir()] == [".svg"]
    assert os.listdir(cwd) == []
