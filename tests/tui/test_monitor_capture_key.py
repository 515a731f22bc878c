"""The monitor's capture key: c in a statements view captures that server on
a worker thread (the screen keeps answering keys meanwhile) and says where it
wrote; elsewhere, or for a source that cannot be captured, it says why."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.source_pane import SourcePane
from tests.tui.fakes import MYSQL_PANELS, PGB_PANELS, PROXYSQL_PANELS, FakeSource


async def _wait(pilot, cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


def _told(app: BenchtopApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_c_in_the_statements_view_captures_without_blocking(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    release = threading.Event()
    calls: list[tuple[str, Path]] = []

    def slow_capture(kind: str, target: object, folder: Path, seconds: float = 60.0) -> str:
        calls.append((kind, folder))
        release.wait(10)
        return f"captured 9 statements into {folder}"

    monkeypatch.setattr("benchtop.screens.monitor.capture_to", slow_capture)
    app = BenchtopApp(None, [FakeSource("db", [MYSQL_PANELS], kind="mysql")], save_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.last is not None)
        await pilot.press("c")
        await _wait(pilot, lambda: any("from the statements view" in m for m in _told(app)))
        assert not calls
        await pilot.press("tab")
        await _wait(pilot, lambda: pane.view is not None and pane.view.key == "statements")
        await pilot.press("c")
        await _wait(pilot, lambda: len(calls) == 1)
        # the capture is still running: the screen answers keys, and a second c says where the first writes
        await pilot.press("c", "tab")
        await _wait(pilot, lambda: pane.view is not None and pane.view.key == "waits")
        assert any("capture of db is running" in m for m in _told(app)) and len(calls) == 1
        kind, folder = calls[0]
        assert kind == "mysql" and folder.parent == tmp_path and folder.name.startswith("capture-db-")
        release.set()
        await _wait(pilot, lambda: any(f"captured 9 statements into {folder}" in m for m in _told(app)))
        # done: c starts another
        await pilot.press("shift+tab", "c")
        await _wait(pilot, lambda: len(calls) == 2)


async def test_c_on_a_source_that_cannot_be_captured_says_so() -> None:
    app = BenchtopApp(None, [FakeSource("pgb", [PGB_PANELS], kind="pgbouncer")])
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.last is not None)
        await pilot.press("c")
        await _wait(pilot, lambda: any("MySQL/MariaDB, PostgreSQL or ProxySQL" in m for m in _told(app)))


async def test_c_in_proxysqls_digests_view_captures_its_digests(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    calls: list[str] = []

    def capture(kind: str, target: object, folder: Path, seconds: float = 60.0) -> str:
        calls.append(kind)
        return f"captured 5 statements into {folder}"

    monkeypatch.setattr("benchtop.screens.monitor.capture_to", capture)
    app = BenchtopApp(None, [FakeSource("proxy", [PROXYSQL_PANELS], kind="proxysql")], save_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.screen.query_one(SourcePane)
        await _wait(pilot, lambda: pane.last is not None)
        await pilot.press("c")
        await _wait(pilot, lambda: any("from the digests view" in m for m in _told(app)))
        await pilot.press("6")
        await _wait(pilot, lambda: pane.view is not None and pane.view.key == "digests")
        await pilot.press("c")
        await _wait(pilot, lambda: any("captured 5 statements" in m for m in _told(app)))
        assert calls == ["proxysql"]


def test_a_capture_of_a_server_that_refuses_is_one_line(tmp_path: Path) -> None:
    from benchtop.screens.capture_key import capture_to
    from benchtop.sources.registry import parse_spec

    said = capture_to("mysql", parse_spec("mysql", "mysql://nobody:secret@127.0.0.1:1/x"), tmp_path / "c", 1.0)
    assert said.startswith("capture: cannot connect") and "secret" not in said and "\n" not in said
    assert not (tmp_path / "c").exists()
