"""A --connections run keeps its word and its limit however its controller is
wrapped: under --metrics-listen (MeteredController) and as a scenario of
`connections` steps (ScenarioController), the header says connections on
threads and `+`/`*` go up to the connection cap (65,536), not the thread cap
(4,096).  Before, the screen read `loop_threads` by getattr, which neither
wrapper had."""

from __future__ import annotations

from types import SimpleNamespace

from benchtop.engine import MAX_CONNECTIONS, MAX_THREADS
from benchtop.metrics.run_metrics import MeteredController, RunMetrics
from benchtop.record.controller import Controller
from benchtop.scenario.controller import ScenarioController
from benchtop.scenario.driver import ScenarioDriver
from benchtop.scenario.file import parse_scenario
from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.header import RunHeader
from tests.tui.fakes import FakeRunController
from tests.tui.test_keys import press


def _header(app: BenchtopApp) -> str:
    return str(app.screen.query_one(RunHeader).render())


async def _keys_reach_the_connection_cap(app: BenchtopApp, fake: FakeRunController) -> None:
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        assert "connections: 40000 on 4 threads" in _header(app), _header(app)
        await press(app, pilot, "asterisk")
        assert fake.threads == MAX_CONNECTIONS > MAX_THREADS
        assert f"connections: {MAX_CONNECTIONS} on 4 threads" in _header(app), _header(app)
        calls = len(fake.calls)
        await press(app, pilot, "plus")  # at the cap: nothing to change
        assert fake.threads == MAX_CONNECTIONS and len(fake.calls) == calls


async def test_a_metered_connections_run_counts_connections_up_to_their_cap() -> None:
    fake = FakeRunController(threads=40000, loop_threads=4)
    metered: Controller = MeteredController(fake, RunMetrics("postgresql", fake.workload, fake.target))
    await _keys_reach_the_connection_cap(BenchtopApp(metered), fake)


class _StepRun(FakeRunController):
    """A step's run as the scenario driver starts it (an engine clock at 0)."""

    def __init__(self, threads: int, loop_threads: int) -> None:
        super().__init__(threads=threads, loop_threads=loop_threads)
        self.on_event = None
        self.engine = SimpleNamespace(snapshot=lambda: SimpleNamespace(t=0.0))
        self.last_reading = SimpleNamespace(t=0.0)  # the driver starts a step at the controller's own reading


async def test_a_scenario_of_connections_steps_counts_connections_up_to_their_cap() -> None:
    made: list[_StepRun] = []

    def make(workload: str, threads: int | None, rate: float | None) -> _StepRun:
        made.append(_StepRun(threads or 1, loop_threads=4))  # as connections = ... with threads = 4
        return made[-1]

    sc = parse_scenario('connections = 8\nthreads = 4\n[[step]]\nconnections = 40000\nduration = 600\n')
    driver = ScenarioDriver(sc, make, None)
    driver.start()
    ctl = ScenarioController(driver, report_interval=3600)
    await _keys_reach_the_connection_cap(BenchtopApp(ctl), made[0])
