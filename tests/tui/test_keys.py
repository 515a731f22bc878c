"""Each key of the dashboard, pressed through Pilot, changes the (fake)
controller the way the footer says."""

from __future__ import annotations

import time
from pathlib import Path

from benchtop.screens import bench
from benchtop.screens.app import BenchtopApp
from benchtop.screens.help import HelpScreen
from benchtop.screens.modals import MarkModal, RateModal
from benchtop.screens.widgets.chart import TimeChart
from tests.tui.fakes import FakeRunController

SIZE = (80, 24)


async def _settle(app: BenchtopApp) -> None:
    """Wait for the key's workers, not for a (possibly slow) engine read."""
    pending = [w for w in app.workers if w.group != "engine"]
    if pending:  # an empty list would mean "every worker"
        await app.workers.wait_for_complete(pending)


async def press(app: BenchtopApp, pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await _settle(app)
    await pilot.pause()


async def test_threads_keys(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "plus")
        assert fake.threads == 9
        await press(app, pilot, "minus", "minus")
        assert fake.threads == 7
        await press(app, pilot, "asterisk")
        assert fake.threads == 14
        await press(app, pilot, "slash", "slash")
        assert fake.threads == 4
        assert [e.text for e in fake.timeline if e.kind == "threads"][-1] == "threads 4"


async def test_threads_never_below_one() -> None:
    fake = FakeRunController(threads=1)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "minus", "slash")
        assert fake.threads == 1
        assert not [c for c in fake.calls if c[0] == "threads"]


async def test_quick_presses_compose(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(5):
            await pilot.press("plus")
        await _settle(app)
        assert fake.threads == 13


async def test_rate_typed(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        assert isinstance(app.screen, RateModal)
        await pilot.press(*"2.5k", "enter")
        await _settle(app)
        assert fake.rate == 2500.0
        await pilot.press("r")
        await pilot.press(*"0", "enter")
        await _settle(app)
        assert fake.rate == 0.0


async def test_rate_input_is_validated(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r", *"fast", "enter")
        await pilot.pause()
        assert isinstance(app.screen, RateModal)
        assert "not a rate" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        await _settle(app)
        assert not isinstance(app.screen, RateModal)
        assert fake.rate == 0.0
        assert not [c for c in fake.calls if c[0] == "rate"]


async def test_rate_double_and_half(fake: FakeRunController) -> None:
    achieved = fake.history[-1].tps
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "right_square_bracket")
        start = fake.rate
        # from unlimited, `]` starts near what the server achieves now
        assert abs(start - achieved) / achieved < 0.05
        await press(app, pilot, "right_square_bracket")
        assert fake.rate == start * 2
        await press(app, pilot, "left_square_bracket", "left_square_bracket")
        assert fake.rate == start / 2


async def test_rate_half_from_unlimited(fake: FakeRunController) -> None:
    achieved = fake.history[-1].tps
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "left_square_bracket")
        assert 0 < fake.rate < achieved * 0.55


async def test_pause_toggles(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "space")
        assert fake.paused is True
        assert "PAUSED" in str(app.screen.query_one("#header").render())
        await press(app, pilot, "space")
        assert fake.paused is False
        assert [e.kind for e in fake.timeline][-2:] == ["pause", "resume"]


async def test_mark_default_and_text(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        assert isinstance(app.screen, MarkModal)
        await press(app, pilot, "enter")
        # the fake's timeline already holds "mark 1"
        assert fake.timeline[-1].kind == "mark" and fake.timeline[-1].text == "mark 2"
        await pilot.press("m", *"ckpt", "enter")
        await _settle(app)
        assert fake.timeline[-1].text == "ckpt"
        await pilot.press("m", "escape")
        await _settle(app)
        assert fake.timeline[-1].text == "ckpt"


async def test_save_writes_screenshot_and_results(fake: FakeRunController, tmp_path: Path) -> None:
    app = BenchtopApp(fake, save_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "s")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.endswith(".svg") for n in names)
    assert any(n.endswith(".summary.json") for n in names)
    assert any(n.endswith(".intervals.jsonl") for n in names)
    svg = next(p for p in tmp_path.iterdir() if p.suffix == ".svg").read_text()
    assert "<svg" in svg and "threads:" in svg.replace("&#160;", " ")


async def test_quit_returns_summary(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await _settle(app)
        await pilot.pause()
    assert fake.stopped_reason == "quit"
    assert app.return_value is not None
    assert app.return_value.transactions == sum(iv.transactions for iv in fake.history)


async def test_help_opens_and_closes(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_instrumentation_cycles(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "i")
        assert any("no instrumentation" in n.message for n in app._notifications)
    presets = FakeRunController(presets=("all disabled", "default"))
    app = BenchtopApp(presets)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "i", "i")
        assert [e.text for e in presets.timeline if e.kind == "instrumentation"] == [
            "instrumentation all disabled",
            "instrumentation default",
        ]


async def test_samples_update_the_screen() -> None:
    fake = FakeRunController(report_interval=0.05)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        before = fake.samples
        await pilot.pause(0.5)
        assert fake.samples > before
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, bench.BenchScreen)
        assert screen.history[-1] is fake.history[-1]


async def test_warm_up_samples_stay_off_the_charts(monkeypatch) -> None:
    monkeypatch.setattr(bench, "FINISHED_LINGER_S", 0.1)
    fake = FakeRunController(preload=0, report_interval=0.05, warmup=3, finish_after=5)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, bench.BenchScreen)
        await _wait_until(pilot, lambda: not app.is_running)
    assert fake.samples == 5
    assert [iv.t for iv in screen.history] == [iv.t for iv in fake.history] == [1.0, 2.0]
    assert screen.run_hist.total == sum(iv.latency.total for iv in fake.history)


async def test_the_reading_at_the_warm_ups_end_is_taken_between_ticks() -> None:
    """The controller asks for a reading at its warm-up's end (its deadline):
    the dashboard takes it then, not at its next tick (an hour away here),
    which would have started the measured window late."""
    fake = FakeRunController(preload=0)
    warmup_ends = time.monotonic() + 0.3
    fake.deadline = lambda: warmup_ends if fake.samples == 0 else None  # type: ignore[method-assign]
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: fake.samples == 1)
        taken = time.monotonic()
        await pilot.pause(0.3)
        assert fake.samples == 1  # one reading: none asked for after it
    assert taken >= warmup_ends


async def test_finished_run_exits_on_its_own(monkeypatch) -> None:
    monkeypatch.setattr(bench, "FINISHED_LINGER_S", 0.1)
    fake = FakeRunController(report_interval=0.05, finish_after=2)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 5
        while app.is_running and time.monotonic() < deadline:
            await pilot.pause(0.05)
    assert fake.stopped_reason == "time"
    assert app.return_value is not None


async def test_slow_sample_does_not_block_keys() -> None:
    fake = FakeRunController(report_interval=0.05, sample_delay=2.0)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)  # a 2 s read is now in flight
        assert fake.samples == 0
        t0 = time.monotonic()
        await pilot.press("plus")
        await _settle(app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        elapsed = time.monotonic() - t0
        assert fake.threads == 9
        assert elapsed < 1.0, f"keys took {elapsed:.2f}s while the engine read was slow"
        await pilot.press("escape")
        # only one read at a time, however many ticks passed
        assert len([w for w in app.workers if w.group == "engine" and w.is_running]) <= 1


async def test_whole_run_toggle_folds_the_charts() -> None:
    fake = FakeRunController(preload=400)
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        chart = app.screen.query_one("#chart-tps", TimeChart)
        assert not chart.whole
        await press(app, pilot, "w")
        assert chart.whole and "(whole run)" in chart.legend().plain
        assert len(chart._series[0].values) == 400
        await press(app, pilot, "w")
        assert not chart.whole


async def test_failed_run_says_so_and_exits(monkeypatch) -> None:
    monkeypatch.setattr(bench, "FINISHED_LINGER_S", 0.5)
    fake = FakeRunController(report_interval=0.05, finish_after=1, error="lost connection to server")
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: fake.stopped_reason is not None)
        await pilot.pause()
        assert "RUN FAILED" in str(app.screen.query_one("#header").render())
        assert any("lost connection to server" in n.message for n in app._notifications)
        await _wait_until(pilot, lambda: not app.is_running)
    assert fake.stopped_reason == "error: lost connection to server"


async def _wait_until(pilot, cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


async def test_ctrl_c_stops_the_run_even_in_a_dialog(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        assert isinstance(app.screen, RateModal)
        await pilot.press("ctrl+c")
        await _settle(app)
        await pilot.pause()
    assert fake.stopped_reason == "quit"
    assert app.return_value is not None


async def test_group_keys_act_on_the_selected_thread_group() -> None:
    fake = FakeRunController(threads=11, groups=(("inserters", 1, 1000.0), ("queriers", 10, 0.0)))
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "g", "plus")  # inserters selected
        assert fake.groups[0] == ("inserters", 2, 1000.0)
        await press(app, pilot, "right_square_bracket")
        assert fake.groups[0] == ("inserters", 2, 2000.0)
        await press(app, pilot, "g", "slash")  # queriers
        assert fake.groups[1] == ("queriers", 5, 0.0)
        await press(app, pilot, "g", "plus")  # back to the whole run: a run of groups has no whole-run threads
        assert fake.groups == [("inserters", 2, 2000.0), ("queriers", 5, 0.0)]
        assert not [c for c in fake.calls if c[0] == "threads"]
        assert ("group_threads", ("queriers", 5)) in fake.calls


async def test_group_key_without_groups_changes_nothing(fake: FakeRunController) -> None:
    app = BenchtopApp(fake)
    async with app.run_test(size=SIZE) as pilot:
        await press(app, pilot, "g", "plus")
        assert fake.threads == 9 and not [c for c in fake.calls if c[0].startswith("group")]


def test_host_rows_show_totals_then_hosts_worst_first_when_many():
    from benchtop.record.samples import HostInterval
    from benchtop.screens.widgets.hosts import hosts_text

    def row(i: int, p99: float, state: str = "ok") -> HostInterval:
        return HostInterval(host=f"h{i}", node=f"10.0.0.{i}", state=state, threads=4, transactions=1000, tps=1000.0,
                            errors_per_s=0.0, latency_ms={"p50": 1.0, "p95": 2.0, "p99": p99, "max": 9.0},
                            connections=4, cpu_pct=50.0)

    few = hosts_text([row(1, 3.0), row(2, 4.0)], None).plain.splitlines()
    assert [x.split()[0] for x in few[1:]] == ["h1", "h2"]
    many = [row(i, float(i)) for i in range(1, 11)] + [row(11, 1.0, "lost")]
    text = hosts_text(many, None, max_rows=4).plain.splitlines()
    assert [x.split()[0] for x in text[1:4]] == ["h11", "h10", "h9"]  # the lost host, then the highest p99
    assert text[-1].startswith("… 8 more host(s)")
    assert "lost" in text[1]


async def test_keys_change_connections_past_the_thread_cap_on_event_loops() -> None:
    """With --connections the keys change connections, up to the engine's
    connection cap (65,536) rather than the thread cap (4,096); the header
    says connections on threads."""
    fake = FakeRunController(threads=3000, loop_threads=4)
    app = BenchtopApp(fake)
    async with app.run_test(size=(120, 24)) as pilot:
        await press(app, pilot, "asterisk")
        assert fake.threads == 6000
        assert "connections: 6000 on 4 threads" in app.screen.query_one(bench.RunHeader).render().plain
