"""`benchtop ab` in the TUI: a scripted comparison (the view kept by the
real benchtop.ab.view.Progress, fed from the comparison's thread as the
command feeds it) steps through warm-up, live intervals and rounds; the
screen shows the round in progress, both sides' TPS per round, the
interval of B/A and the verdict, and q stops the comparison."""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.widgets import Static

from benchtop.ab.rounds import Plan, Round, SideFigures
from benchtop.ab.view import Progress
from benchtop.errors import UsageError
from benchtop.record.ab import AbView
from benchtop.record.controller import Sample
from benchtop.screens.ab import AbApp, RoundsChart
from tests.tui.fakes import make_interval
from tests.tui.test_monitor_top import _wait as _wait_briefly

STEP_WAIT_S = 30.0
WAIT_S = 15.0  # what the screen shows next, on a busy 2-core host
TITLE = "oltp_point_select on sqlite: A = --threads 1; B = --threads 2"
# B about 10% faster than A, round after round
TPS = [(5000.0, 5510.0), (5100.0, 5580.0), (4900.0, 5400.0), (5050.0, 5600.0), (4980.0, 5450.0), (5020.0, 5530.0)]


def _round(i: int) -> Round:
    a, b = TPS[i - 1]
    return Round(i, ("a", "b") if i % 2 else ("b", "a"),
                 SideFigures(f"round-{i:02d}-a", a, 0.5, 0.9, 1.2, None, 0),
                 SideFigures(f"round-{i:02d}-b", b, 0.4, 0.8, 1.1, None, 0))


class ScriptedComparison:
    """Runs `steps` on its Progress one at a time, each when the test calls
    advance(); stop() ends it as the command's does (the run in progress
    does not count)."""

    def __init__(self, steps: list[Callable[[Progress], None]], plan: Plan = Plan(6, 3.0), note: str = "") -> None:
        self.progress = Progress(TITLE, plan, note=note)
        self.steps = steps
        self.stopped = ""
        self._go = threading.Semaphore(0)
        self.returned = threading.Event()

    def advance(self) -> None:
        self._go.release()

    def run(self, publish: Callable[[AbView], None]) -> None:
        self.progress.publish = publish
        for step in self.steps:
            # bounded: a failed test's app must not keep the worker, and pytest, waiting for ever
            if not self._go.acquire(timeout=STEP_WAIT_S) or self.stopped:
                break
            step(self.progress)
        self._go.acquire(timeout=STEP_WAIT_S)  # the test says when it ends
        self.progress.ended(self.stopped or "rounds")
        self.returned.set()

    def stop(self, reason: str) -> None:
        self.stopped = reason
        self._go.release()


async def _wait(pilot, cond, timeout: float = WAIT_S) -> None:
    await _wait_briefly(pilot, cond, timeout)


def _text(app: AbApp, widget: str) -> str:
    return str(app.screen.query_one(widget, Static).render())


def _chart(app: AbApp) -> str:
    return app.screen.query_one(RoundsChart).render().plain


def _plot(app: AbApp) -> str:
    """The chart's plot rows, without its title and round axis."""
    return "\n".join(_chart(app).splitlines()[1:-1])


def _sample(i: int, t: float) -> Sample:
    return Sample(make_interval(i), True, t)


async def test_the_screen_follows_the_comparison_and_q_stops_it() -> None:
    cmp = ScriptedComparison([
        lambda p: p.side_read("b", None),
        lambda p: p.side_read("b", _sample(1, 1.0)),
        lambda p: p.rounds_done([_round(1)]),
        lambda p: p.side_read("a", _sample(2, 2.0)),
        lambda p: p.rounds_done([_round(i) for i in range(1, 7)]),
    ])
    app = AbApp(cmp, cmp.progress.view())
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: "round 1/6 · starting" in _text(app, "#ab-live"))
        assert TITLE in _text(app, "#ab-title") and not app.screen.query_one("#ab-note").display
        assert _text(app, "#ab-verdict") == "no round finished yet"
        assert "(no round finished yet)" in _chart(app)

        cmp.advance()
        await _wait(pilot, lambda: "round 1/6 · B warming up" in _text(app, "#ab-live"))
        cmp.advance()
        await _wait(pilot, lambda: "B 1/3 s" in _text(app, "#ab-live"))
        assert "tps p99" in _text(app, "#ab-live")
        assert _plot(app).count("b") == 1  # the round in progress, lowercase

        cmp.advance()  # round 1 done: both sides drawn, the ratio without an interval yet
        await _wait(pilot, lambda: "A 5.00k  B 5.51k" in _chart(app))
        assert _plot(app).count("A") == 1 and _plot(app).count("B") == 1
        assert _text(app, "#ab-interval").startswith("B/A 1.102  (an interval needs 6 rounds)")
        assert "round 2/6" in _text(app, "#ab-live")

        cmp.advance()
        await _wait(pilot, lambda: "A 2/3 s" in _text(app, "#ab-live"))
        assert _plot(app).count("a") == 1

        cmp.advance()  # six rounds: the interval and the verdict
        await _wait(pilot, lambda: _text(app, "#ab-verdict").startswith("B is "))
        verdict = _text(app, "#ab-verdict")
        assert "faster (95% CI +" in verdict and "6 rounds" in verdict
        interval = _text(app, "#ab-interval")
        assert "95% CI +" in interval and "├" in interval and "┤" in interval and "●" in interval
        assert _plot(app).count("A") == 6 and _plot(app).count("B") == 6 and "round└   1" in _chart(app)
        assert "q stop" in _text(app, "#ab-keys")

        await pilot.press("q")
        await _wait(pilot, lambda: cmp.returned.is_set())
        assert cmp.stopped == "quit"
        await _wait(pilot, lambda: not app.is_running)


async def test_a_finished_comparison_says_so_before_it_closes() -> None:
    cmp = ScriptedComparison([lambda p: p.rounds_done([_round(i) for i in range(1, 7)])])
    app = AbApp(cmp, cmp.progress.view())
    async with app.run_test(size=(80, 24)) as pilot:
        cmp.advance()
        cmp.advance()
        await _wait(pilot, lambda: "finished: 6 rounds (rounds)" in _text(app, "#ab-live"))
        assert _text(app, "#ab-keys") == "finished" and app.is_running  # it stays a moment


async def test_a_duet_shows_both_runs_and_the_halved_threads() -> None:
    note = "duet: A and B run at once, each with half the stated threads: A 4 -> 2, B 4 -> 2"
    cmp = ScriptedComparison([
        lambda p: (p.side_read("a", None), p.side_read("b", None)),
        lambda p: (p.side_read("a", _sample(1, 1.0)), p.side_read("b", _sample(2, 1.0))),
    ], Plan(6, 3.0, duet=True), note)
    app = AbApp(cmp, cmp.progress.view())
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: _text(app, "#ab-note") == note)
        assert "round 1/6 (A and B together) · starting" in _text(app, "#ab-live")
        cmp.advance()
        await _wait(pilot, lambda: "round 1/6 · A warming up · B warming up" in _text(app, "#ab-live"))
        cmp.advance()
        await _wait(pilot, lambda: "· B 1/3 s" in _text(app, "#ab-live"))
        assert "round 1/6 · A 1/3 s " in _text(app, "#ab-live")
        assert _plot(app).count("a") == _plot(app).count("b") == 1
        await pilot.press("q")
        await _wait(pilot, lambda: not app.is_running)
        assert cmp.stopped == "quit"


class _Failing:
    def run(self, publish: Callable[[AbView], None]) -> None:
        raise UsageError("table for oltp_point_select is missing")

    def stop(self, reason: str) -> None:
        raise AssertionError("nothing to stop")


async def test_a_failed_comparison_closes_at_once_with_its_error() -> None:
    app = AbApp(_Failing(), Progress(TITLE, Plan(6, 3.0)).view())
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: not app.is_running, timeout=2.0)  # not after the finished screen's 3 s
    assert isinstance(app.return_value, UsageError)
