"""A scenario as one run: `ScenarioController` puts a `ScenarioDriver` behind
the controller protocol, so the headless loop and the dashboard drive a
scenario as they drive a single run.  Each reading advances the steps; the
knobs act on the step that is running."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchtop.record.controller import Notice, Sample
from benchtop.record.delegate import DelegatingController
from benchtop.record.samples import RunSummary
from benchtop.scenario.driver import ScenarioDriver, StepController


class ScenarioController(DelegatingController):
    """The knobs act on the step that is running."""

    def __init__(self, driver: ScenarioDriver, report_interval: float = 1.0, target: str = "") -> None:
        """`target`: the target as labels name it before the first step's
        engine exists (the /metrics endpoint is made before the start)."""
        self.driver = driver
        self._target = target
        self._report_interval = report_interval or 1.0
        self._status = ""
        self._notices: list[Notice] = []
        self._announced = -1
        driver.on_step_done = self._step_done

    @property
    def _ctl(self) -> StepController:
        ctl = self.driver.controller
        assert ctl is not None, "the scenario's first step makes its controller"
        return ctl

    # -- what it shows ------------------------------------------------------------
    @property
    def workload(self) -> str:
        """The running step's workload, with the scenario's progress (before
        the start: the scenario's workloads)."""
        ctl = self.driver.controller
        if ctl is None:
            return ", ".join(self.driver.scenario.workloads)
        return f"{ctl.workload} · {self._status}" if self._status else ctl.workload

    @property
    def target(self) -> str:
        ctl = self.driver.controller
        return ctl.target if ctl is not None else self._target

    @property
    def report_interval(self) -> float:
        """The scenario's, from before its first step starts an engine."""
        return self._report_interval

    def ends_at(self) -> float | None:
        return None  # the steps decide: sample() says when the last one is done

    def deadline(self) -> float | None:
        return self.driver.deadline()

    def load_ended(self) -> bool:
        return False  # a step's end is the driver's to read: sample() moves on to the next

    # -- the run ------------------------------------------------------------------
    def start(self) -> None:
        self.driver.start()
        self._announce()

    def sample(self) -> Sample:
        driver = self.driver
        step = driver.step_index
        inner = self._ctl.sample()
        t = driver.scenario_t(inner.interval.t)
        status = driver.tick()
        if status:
            self._status = status
        self._announce()
        reason = driver.stopped_by if driver.done else ""
        return replace(inner, t=t, finished=driver.done, reason=reason, step=step)

    def notices(self) -> list[Notice]:
        out, self._notices = self._notices, []
        return out

    def _announce(self) -> None:
        driver = self.driver
        i = driver.step_index
        if i == self._announced or driver.done or i >= len(driver.scenario.steps):
            return
        self._announced = i
        step = driver.scenario.steps[i]
        warm = f" (+{step.warmup:g}s warm-up)" if step.warmup else ""
        self._notices.append(Notice(f"# {step.label(len(driver.scenario.steps))}: {step.duration:g}s{warm}",
                                    {"type": "step_start", **step.to_dict()}))

    def _step_done(self, result: dict[str, Any]) -> None:
        lat = result["latency_ms"]
        text = (f"# step {result['index'] + 1} done: tps {result['tps']:.2f} qps {result['qps']:.2f} "
                f"p95 {lat.get('p95', 0):.3f} ms p99 {lat.get('p99', 0):.3f} ms errors {result['errors']}")
        if self.workers.event_loops:
            text += f" connections {result['connections']} ({result['connections_served']} served)"
        self._notices.append(Notice(text, {"type": "step", **result}))

    def stop(self, reason: str = "") -> RunSummary | None:
        summary: RunSummary | None = self.driver.finish(reason)
        return summary

    def final_sample(self) -> Sample | None:
        """The stopped load's last interval, when it was a step's (as the
        driver wrote it: on the scenario's clock, with its step)."""
        inner = self._ctl.final_sample()
        step = self.driver.final_step
        if inner is None or step is None:
            return None
        return Sample(inner.interval, inner.counted, t=self.driver.scenario_t(inner.interval.t), finished=True,
                      reason=self.driver.stopped_by, fields={**inner.fields, "step": step})

    def hurry(self) -> None:
        if self.driver.controller is not None:
            self.driver.controller.hurry()
