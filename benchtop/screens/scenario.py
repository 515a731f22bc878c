"""A scenario in the TUI: the dashboard drives a `ScenarioDriver` through a
controller look-alike, so the steps advance on the app's own sampling and
every key still works on the step that is running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchtop.scenario.driver import ScenarioDriver


class ScenarioView:
    """What the app needs of a RunController, over the driver's current one;
    the header's workload field carries the scenario's progress."""

    def __init__(self, driver: ScenarioDriver) -> None:
        self.driver = driver
        self.status = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver.controller, name)

    @property
    def workload(self) -> str:
        name = self.driver.controller.workload
        return f"{name} · {self.status}" if self.status else name

    def sample(self) -> Any:
        iv = self.driver.controller.sample()
        status = self.driver.tick()
        if status:
            self.status = status
        return iv

    @property
    def finished(self) -> bool:
        return self.driver.done or bool(self.driver.controller.failed_error)

    def stop(self, reason: str = "") -> Any:
        return self.driver.finish(reason)


def run_scenario_tui(driver: ScenarioDriver, pollers: list[Any], save_dir: Path) -> Any:
    from benchtop.screens.launch import run_tui

    driver.start()
    return run_tui(ScenarioView(driver), sources=pollers or None, save_dir=save_dir)
