"""The verdict line under the bench screen's charts: mounted with the first
sample that carries a verdict, showing the limit and its evidence; a run
without verdicts keeps its layout."""

from __future__ import annotations

from dataclasses import replace

from benchtop.record.controller import Sample
from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.verdict_line import VerdictLine
from benchtop.verdict import Verdict
from tests.tui.fakes import FakeRunController

SIZE = (120, 40)
VERDICT = Verdict("pool", 0.95, "PgBouncer: 14.2 of 16 clients waiting for a server connection, longest wait 9 ms")


class JudgedController(FakeRunController):
    def sample(self) -> Sample:
        return replace(super().sample(), verdict=VERDICT)


async def test_the_verdict_shows_under_the_charts() -> None:
    app = BenchtopApp(JudgedController(report_interval=0.2))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(40):
            await pilot.pause(0.05)
            lines = app.screen.query(VerdictLine)
            # laid out, not only mounted: a busy CI host queried it in between, at width 0
            if lines and lines.first().content_size.width:
                break
        line = app.screen.query_one("#below").query_one(VerdictLine)
        text = line.render().plain
        assert text.startswith("limit: pool queue (0.95): PgBouncer: 14.2 of 16 clients waiting")
        await pilot.press("q")


async def test_a_run_without_verdicts_has_no_verdict_line() -> None:
    ctl = FakeRunController(report_interval=0.2)
    app = BenchtopApp(ctl)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):  # a few samples taken (5 s at most)
            if ctl.samples >= 3:
                break
            await pilot.pause(0.1)
        await pilot.pause()
        assert ctl.samples > 0 and not app.screen.query(VerdictLine)
        await pilot.press("q")
