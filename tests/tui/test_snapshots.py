"""The dashboard as the user sees it, from deterministic fakes (no clocks,
no randomness; the sampling timer never fires during a snapshot).

Update after a deliberate change with:
    pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from benchtop.screens.app import BenchtopApp
from tests.tui.fakes import PG_PANELS, POOLS_PANELS, FakeRunController, FakeSource


async def _workers_done(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


# the four sizes the dashboard is laid out for (issue 17): nothing cut, panels aligned
def test_dashboard_80x24(snap_compare) -> None:
    assert snap_compare(BenchtopApp(FakeRunController()), terminal_size=(80, 24))


def test_dashboard_120x40(snap_compare) -> None:
    assert snap_compare(BenchtopApp(FakeRunController(preload=90)), terminal_size=(120, 40))


def test_dashboard_160x48(snap_compare) -> None:
    assert snap_compare(BenchtopApp(FakeRunController(preload=120)), terminal_size=(160, 48))


def test_dashboard_200x60(snap_compare) -> None:
    assert snap_compare(BenchtopApp(FakeRunController(preload=400)), terminal_size=(200, 60))


def test_rate_prompt_error_80x24(snap_compare) -> None:
    async def type_bad_rate(pilot) -> None:
        await pilot.press("r", *"fast", "enter")
        await pilot.pause()

    assert snap_compare(BenchtopApp(FakeRunController()), terminal_size=(80, 24), run_before=type_bad_rate)


def test_rate_mode_80x24(snap_compare) -> None:
    assert snap_compare(BenchtopApp(FakeRunController(rate=800.0)), terminal_size=(80, 24))


def test_rate_mode_160x48(snap_compare) -> None:
    assert snap_compare(BenchtopApp(FakeRunController(rate=800.0, preload=120)), terminal_size=(160, 48))


def test_paused_after_keys_80x24(snap_compare) -> None:
    async def settle(pilot) -> None:
        await _workers_done(pilot)

    app = BenchtopApp(FakeRunController())
    assert snap_compare(app, press=["plus", "space"], terminal_size=(80, 24), run_before=settle)


def test_help_80x24(snap_compare) -> None:
    assert snap_compare(
        BenchtopApp(FakeRunController()),
        press=["question_mark"],
        terminal_size=(80, 24),
    )


def test_source_tab_120x36(snap_compare) -> None:
    async def open_tab(pilot) -> None:
        await _workers_done(pilot)
        pilot.app.screen.query_one("#tabs").active = "tab-pgbouncer"
        await pilot.pause()

    # one poll only: a second one after the interval would add a sparkline column on a slow machine
    app = BenchtopApp(FakeRunController(), [FakeSource("pgbouncer", [POOLS_PANELS])], source_interval=3600)
    assert snap_compare(app, terminal_size=(120, 36), run_before=open_tab)


def test_bench_with_server_series_120x36(snap_compare) -> None:
    async def sample_thrice(pilot) -> None:
        await _workers_done(pilot)  # the sources' first polls
        for _ in range(3):
            pilot.app.screen.sample_engine()
            await _workers_done(pilot)

    sources = [
        FakeSource("pg", [PG_PANELS], kind="postgresql"),
        FakeSource("pgbouncer", [POOLS_PANELS]),
    ]
    app = BenchtopApp(FakeRunController(), sources, source_interval=3600)
    assert snap_compare(app, terminal_size=(120, 36), run_before=sample_thrice)
