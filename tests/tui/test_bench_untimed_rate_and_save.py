"""What a new user does in the first minutes (issue 17): the TUI keeps
running without --time, an empty rate prompt changes nothing, the same rate
twice is one event, and `s` saves into the run's results folder."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from benchtop.options.run_options import HEADLESS_TIME_S, options_from_argv
from benchtop.screens.app import BenchtopApp
from benchtop.screens.modals import RateModal
from benchtop.screens.widgets.header import RunHeader
from benchtop.session import RunSession
from tests.tui.fakes import FakeRunController

SIZE = (80, 24)


async def _settle(app: BenchtopApp, pilot) -> None:
    pending = [w for w in app.workers if w.group != "engine"]
    if pending:
        await app.workers.wait_for_complete(pending)
    await pilot.pause()


@pytest.mark.slow
async def test_an_interactive_run_without_time_outlives_the_headless_default(tmp_path: Path) -> None:
    # the options the run command builds for a terminal with no --time; a low
    # rate on the null engine keeps the wait cheap for the machine. It lasts
    # the headless default (the limit the TUI must not inherit) and a margin.
    opts = options_from_argv("run", ["--engine", "null", "--rate", "200", "--out", str(tmp_path / "run")],
                             terminal=True)
    assert opts.time_s == 0
    past = HEADLESS_TIME_S + 1.5
    with RunSession(opts, monitor=False, progress=None) as session:
        ctl = session.controller()
        ctl.start()
        app = BenchtopApp(ctl, save_dir=tmp_path / "run")
        async with app.run_test(size=SIZE) as pilot:
            t0 = time.monotonic()
            while time.monotonic() - t0 < past:
                await asyncio.sleep(0.5)
                assert app.is_running and app.return_value is None, "the TUI quit by itself"
            assert not ctl.finished and ctl.remaining is None
            assert "no time limit" in str(app.screen.query_one(RunHeader).render())
            assert len(app.screen.history) >= HEADLESS_TIME_S - 1  # it kept sampling all along
            await pilot.press("q")
            await _settle(app, pilot)
        summary = app.return_value
    assert summary is not None and summary.stopped_by == "quit" and summary.time_s > HEADLESS_TIME_S
    assert (tmp_path / "run" / "summary.json").is_file()


async def test_an_empty_rate_prompt_cancels() -> None:
    fake = FakeRunController(rate=500.0)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        assert isinstance(app.screen, RateModal)
        await pilot.press("ctrl+u", "enter")  # clear the field, then enter
        await _settle(app, pilot)
        assert not isinstance(app.screen, RateModal)
    assert fake.rate == 500.0 and ("rate", 0.0) not in fake.calls
    assert not [ev for ev in fake.timeline if ev.kind == "rate"]


async def test_the_same_rate_again_adds_no_event() -> None:
    fake = FakeRunController()
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):
            await pilot.press("r", *"300", "enter")
            await _settle(app, pilot)
    assert [c for c in fake.calls if c[0] == "rate"] == [("rate", 300.0)]
    assert [ev.text for ev in fake.timeline if ev.kind == "rate"] == ["rate 300/s"]


async def test_s_saves_into_the_results_folder(tmp_path: Path) -> None:
    folder = tmp_path / "20261123-101500-oltp_read_write"
    folder.mkdir()
    app = BenchtopApp(FakeRunController(), save_dir=folder)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await _settle(app, pilot)
    names = sorted(p.name for p in folder.iterdir())
    assert any(n.endswith(".svg") for n in names) and any(n.endswith(".summary.json") for n in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # nothing beside it
