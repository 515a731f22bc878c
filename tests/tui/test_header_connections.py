"""The run header says how many workers hold a connection when fewer than
asked do, and how many connection attempts the server refused (as the JSON
and text lines do)."""

from __future__ import annotations

from dataclasses import replace

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.header import RunHeader
from tests.tui.fakes import FakeRunController


async def test_the_header_shows_connected_workers_and_refused_connections() -> None:
    fake = FakeRunController(preload=5, threads=16)
    fake.history = [replace(iv, connected=9, connect_failures=7) for iv in fake.history]
    app = BenchtopApp(fake)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one(RunHeader).render())
        assert "threads: 9/16 connected" in text and "refused: 35" in text


async def test_a_fully_connected_run_shows_the_plain_thread_count() -> None:
    fake = FakeRunController(preload=5, threads=16)
    fake.history = [replace(iv, connected=16) for iv in fake.history]
    app = BenchtopApp(fake)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one(RunHeader).render())
        assert "threads: 16" in text and "connected" not in text and "refused" not in text
