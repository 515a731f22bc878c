"""Running a scenario: `ScenarioDriver` takes the steps of a parsed
`Scenario` through RunControllers, one engine across steps whose workload is
the same (threads and rate are live knobs), a new one when it changes.  It
never samples by itself, so the TUI or the headless loop keeps ownership of
the sampling cadence (see docs/scenarios.md), and it writes the results
folder on one clock across engines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from benchtop.engine.histogram import Histogram
from benchtop.options.run_options import RunOptions
from benchtop.record.analysis import Validity, analyse
from benchtop.record.controller import Controller
from benchtop.record.costs import Work
from benchtop.record.folder import CONFIG, HISTOGRAM, INTERVALS, SUMMARY, TARGET, TIMELINE, ResultsWriter
from benchtop.record.samples import DEFAULT_PERCENTILES, EngineSample, IntervalStats, RunSummary, TimelineEvent, pct_key
from benchtop.record.workers import workers_of
from benchtop.run.attach import InstrumentationCycler
from benchtop.run.controller import LoadEngine
from benchtop.run.costs import client_cpu
from benchtop.run.guards import Guard
from benchtop.run.verdicts import VerdictMeter
from benchtop.scenario.file import Scenario, ScenarioError, Step
from benchtop.scenario.hooks import Hook, HookResult, HookRunner
from benchtop.sources.base import SourceSnapshot
from benchtop.target.dsn import redact_dsn
from benchtop.target.instrumentation import InstrumentationControl
from benchtop.target.settings import SettingsControl, SettingsError
from benchtop.workload import Program
from benchtop.workload.groups import parse_group_setting


class StepController(Controller, Protocol):
    """A step's run (a RunController, not started when made): the controller
    protocol, plus what the driver reads of one engine to cut its readings
    into steps on the scenario's clock and to write the results folder."""

    on_event: Callable[[TimelineEvent], None] | None  # the driver chains its own to write the timeline

    @property
    def options(self) -> RunOptions: ...
    @property
    def program(self) -> Program: ...
    @property
    def engine(self) -> LoadEngine: ...
    @property
    def instrumentation(self) -> InstrumentationCycler | None: ...
    @property
    def verdicts(self) -> VerdictMeter | None:
        """Each counted interval's verdict, in the history's order (None: not judged)."""
        ...
    @property
    def finished(self) -> bool: ...
    @property
    def failed_error(self) -> str | None: ...
    @property
    def last_summary(self) -> RunSummary | None:
        """The engine's start-to-end summary once stopped (sizes and totals)."""
        ...
    @property
    def last_reading(self) -> EngineSample:
        """The snapshot the newest interval ends with (the stopped engine's once stopped)."""
        ...
    def close(self) -> None: ...


@dataclass(slots=True)
class _StepState:
    step: Step
    seg: int  # which engine run
    start: EngineSample  # at the step's start
    measured_from: EngineSample | None = None  # at the warm-up's end
    end: EngineSample | None = None
    intervals: list[dict[str, Any]] = field(default_factory=list)
    t_start: float = 0.0  # scenario seconds
    t_measure: float | None = None
    t_end: float | None = None
    stopped_by: str = ""
    validity: Validity | None = None  # the target's durability verdict with the step's settings
    work: Work | None = None  # what the measured intervals cost the host (benchtop.run.costs)


class ScenarioDriver:
    """Runs a scenario's steps on RunControllers.

    `make_controller(workload, threads, rate)` returns a new, not yet started
    RunController for the first step it will run (threads/rate None: the
    configuration's; threads counts connections in a run on event loops)
    (without a results writer: the driver writes the folder, on one clock).
    The owner samples the current controller (`driver.controller.sample()`)
    on its own cadence and calls `tick()` after each sample; `tick()` moves
    through warm-ups and steps and returns a status line.  When `done` is
    true, call `finish()` (also the way to end early, with a reason).
    """

    def __init__(self, scenario: Scenario, make_controller: Callable[[str, int | None, float | None], StepController],
                 writer: ResultsWriter | None = None, validity: Validity | None = None, percentile: float = 95.0,
                 on_controller: Callable[[StepController], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, settings: SettingsControl | None = None,
                 hooks: HookRunner | None = None, validity_of: Callable[[], Validity | None] | None = None) -> None:
        self.scenario = scenario
        self.make_controller = make_controller
        self.writer = writer
        self.validity = validity
        self.percentile = percentile
        self.on_controller = on_controller
        self.clock = clock
        self.controller: StepController | None = None
        self.done = False
        self.stopped_by = ""
        self.results: list[dict[str, Any]] = []
        self.segments: list[StepController] = []  # every controller, in order
        self.on_step_done: Callable[[dict[str, Any]], None] | None = None
        self._global_guard = Guard.parse(scenario.stop_if, sources=None)
        self._guard = self._global_guard
        self._workload = ""  # the current controller's, as the scenario names it
        self._latest: dict[str, SourceSnapshot] = {}  # source name -> its latest snapshot, for new steps' guards
        self._seg_offsets: list[float] = []  # scenario seconds at each engine's t = 0
        self._t0 = 0.0
        self.started_at = 0.0
        self._cur: _StepState | None = None
        self._seen = 0  # intervals of the current controller already taken
        self.final_step: int | None = None  # the step the stopped load's last interval was taken into
        self._instrumentation: InstrumentationCycler | None = None
        self._summaries: list[tuple[Step, RunSummary]] = []
        self._work: Work | None = None  # every step's measured work
        self.summary: RunSummary | None = None
        # server settings and hooks: what a step changes is applied before it
        # starts (with no load running) and settings are restored by finish()
        self.settings = settings
        self.hooks = hooks
        self.validity_of = validity_of
        self.hook_results: list[HookResult] = []
        self.restored: list[str] = []
        self.restore_error = ""

    # -- time
    @property
    def elapsed(self) -> float:
        return self.clock() - self._t0 if self._t0 else 0.0

    @property
    def step_index(self) -> int:
        return self._cur.step.index if self._cur else len(self.scenario.steps)

    def _scenario_t(self, local_t: float, segment: int = -1) -> float:
        """A time of engine `segment` (default: the current one) in scenario seconds."""
        return self._seg_offsets[segment] + local_t

    def scenario_t(self, local_t: float) -> float:
        """A time of the current engine (EngineSample.t) in scenario seconds."""
        return self._scenario_t(local_t) if self._seg_offsets else local_t

    # -- lifecycle
    def start(self) -> None:
        self._t0 = self.clock()
        self.started_at = time.time()
        if self.writer:
            self.writer.write_json(CONFIG, self._config_dict())
            if self.validity is not None:
                self.writer.write_json(TARGET, {"validity": self.validity.to_dict()})
        self._begin(0)

    def _config_dict(self) -> dict[str, Any]:
        cfg = self.controller.options if self.controller else None
        return {
            "scenario": self.scenario.name,
            "file": self.scenario.filename,
            "description": self.scenario.description,
            "options": {k: _redacted(v) for k, v in self.scenario.options.items() if "password" not in k},
            "stop_if": list(self.scenario.stop_if),
            "steps": [s.to_dict() for s in self.scenario.steps],
            "run": cfg.to_dict() if cfg is not None else None,
        }

    def _new_controller(self, step: Step) -> StepController:
        if self.controller is not None:
            self.controller.stop("scenario: next workload")
        self._workload = self.scenario.workload_of(step)
        # the step's threads (connections) and rate from the start: no burst at other settings
        ctl = self.make_controller(self._workload, step.workers, step.rate)
        previous = ctl.on_event
        segment = len(self._seg_offsets)  # this engine's, once its start maps its clock

        def on_event(ev: TimelineEvent) -> None:
            if self.writer:
                d = ev.to_dict()
                # an event of its start (a busy host's priority note) comes before that: the scenario's clock
                mapped = segment < len(self._seg_offsets)
                d["t"] = round(self._scenario_t(ev.t, segment) if mapped else self.elapsed, 3)
                self.writer.append(TIMELINE, d)
            if previous:
                previous(ev)

        ctl.on_event = on_event
        ctl.start()
        # map the new engine's clock (0 at its start) onto the scenario's
        self._seg_offsets.append(self.elapsed - ctl.engine.snapshot().t)
        self.controller = ctl
        self.segments.append(ctl)
        self._seen = 0
        if len(self.segments) == 1 and self.writer:
            self.writer.write_json(CONFIG, self._config_dict())
        if self.on_controller:
            self.on_controller(ctl)
        return ctl

    def _record(self, kind: str, text: str) -> None:
        """A timeline event, also before the first engine exists."""
        if self.controller is not None:
            self.controller.note(kind, text)
        elif self.writer:
            self.writer.append(TIMELINE, {"type": "event", "t": round(self.elapsed, 3), "kind": kind,
                                                  "text": text})

    def _run_hooks(self, hooks: Sequence[Hook], when: str, step: Step) -> None:
        if not hooks:
            return
        if self.hooks is None:
            raise ScenarioError("this scenario's hooks need a target to run on")
        for hook in hooks:
            result = self.hooks.run(hook, when, step.index)
            self.hook_results.append(result)
            self._record("hook", result.text())
            if not result.ok:
                raise ScenarioError(f"{step.label()}: {result.text()}")

    def _prepare_step(self, step: Step) -> None:
        """Settings and before hooks, with the load paused."""
        changes = dict(step.settings)
        changed = {k: v for k, v in changes.items() if self.settings is None or self.settings.current.get(k) != v}
        if not changed and not step.before:
            return
        ctl = self.controller
        if ctl is not None:
            ctl.set_paused(True)
        try:
            if changed:
                if self.settings is None:
                    raise ScenarioError("server settings need --engine mysql or postgres")
                try:
                    done = self.settings.apply(changed)
                    restart = self.settings.needs_restart(list(changed))
                except SettingsError as exc:
                    raise ScenarioError(f"{step.label()}: {exc}") from None
                self._record("settings", "settings " + ", ".join(done))
                if restart:
                    if self.scenario.restart is None:
                        raise ScenarioError(f"{step.label()}: {', '.join(restart)} take(s) effect only after a "
                                            "restart: add restart = { shell = \"...\" } to the scenario")
                    self._record("settings", f"{', '.join(restart)} need(s) a restart")
                    self._run_hooks([self.scenario.restart], "restart", step)
            self._run_hooks(step.before, "before", step)
        finally:
            if ctl is not None:
                ctl.set_paused(False)

    def _finish_step_hooks(self, step: Step) -> None:
        if not step.after:
            return
        ctl = self.controller
        if ctl is not None:
            ctl.set_paused(True)
        try:
            self._run_hooks(step.after, "after", step)
        finally:
            if ctl is not None:
                ctl.set_paused(False)

    def _begin(self, i: int) -> None:
        step = self.scenario.steps[i]
        self._prepare_step(step)
        ctl = self.controller
        if ctl is None or self.scenario.workload_of(step) != self._workload:
            ctl = self._new_controller(step)
        if (step.workers is not None or step.rate is not None) and ctl.groups:
            raise ScenarioError(f"{step.label()}: {ctl.workload} runs thread groups: set them with "
                                "group = [\"NAME.threads=N\", \"NAME.rate=R\"] instead of threads and rate")
        # with event loops the threads knob counts connections (RunController.set_threads)
        if step.workers is not None and step.workers != ctl.threads:
            ctl.set_threads(step.workers)
        if step.rate is not None and step.rate != ctl.rate:
            ctl.set_rate(step.rate)
        for setting in step.group:
            name, key, value = parse_group_setting(setting)
            if key == "threads":
                ctl.set_group_threads(name, int(value))
            else:
                ctl.set_group_rate(name, value)
        if step.instrumentation:
            self._apply_instrumentation(step.instrumentation)
        ctl.mark(step.mark or step.label(len(self.scenario.steps)))
        validity = self.validity_of() if step.settings and self.validity_of is not None else None
        # the controller's own reading, an interval's end: the step's figures
        # are then exactly the sum of its intervals
        start = ctl.last_reading
        self._cur = _StepState(step, len(self.segments) - 1, start, t_start=self._scenario_t(start.t),
                               validity=validity)
        guard = Guard([*self._global_guard.conditions, *Guard.parse(step.stop_if, sources=None).conditions])
        for snap in list(self._latest.values()):
            guard.observe(snap)
        self._guard = guard
        if step.warmup <= 0:
            self._cur.measured_from = start
            self._cur.t_measure = self._cur.t_start

    def _apply_instrumentation(self, preset: str) -> None:
        ctl = self.controller
        assert ctl is not None
        control = ctl.instrumentation
        if control is None:
            if self._instrumentation is None:
                if ctl.options.engine not in ("mysql", "postgresql"):
                    raise ScenarioError("instrumentation needs --engine mysql/postgres")
                # through the run's cycler, so its restore is bounded as the run's is
                self._instrumentation = InstrumentationCycler(InstrumentationControl(ctl.options.target))
            control = self._instrumentation
        control.apply(preset)
        self._instrumentation = control
        ctl.note("instrumentation", f"instrumentation {preset}")

    def observe(self, snap: SourceSnapshot) -> None:
        """Feed a monitor source snapshot (for pool_wait, replica_lag and
        checkpoint_age conditions); safe to call from a poller thread."""
        self._latest[snap.name] = snap
        self._guard.observe(snap)

    def deadline(self) -> float | None:
        """Clock time when the current phase (warm-up or step) ends."""
        cur = self._cur
        if cur is None or self.done:
            return None
        offset = self._t0 + self._seg_offsets[cur.seg]
        if cur.measured_from is None:
            return offset + cur.start.t + cur.step.warmup
        return offset + cur.measured_from.t + cur.step.duration

    def tick(self) -> str | None:
        """Take the intervals sampled since the last tick, move through the
        steps; returns the status line (None once done)."""
        if self.done or self._cur is None:
            return None
        cur = self._cur
        for iv in self._take_intervals():
            why = self._guard.check(iv)
            if why:
                self.finish(f"stop-if: {why} ({cur.step.label()})")
                return None
        ctl = self.controller
        assert ctl is not None  # the step's
        if ctl.finished:
            failed = ctl.failed_error
            self.finish(f"error: {failed}" if failed else "engine stopped")
            return None
        snap = ctl.last_reading
        tol = 0.005
        if cur.measured_from is None and snap.t >= cur.start.t + cur.step.warmup - tol:
            cur.measured_from = snap
            cur.t_measure = self._scenario_t(snap.t)
            ctl.note("note", f"step {cur.step.index + 1} warm-up over")
        if cur.measured_from is not None and snap.t >= cur.measured_from.t + cur.step.duration - tol:
            self._close_step(snap, "")
            nxt = cur.step.index + 1
            try:
                self._finish_step_hooks(cur.step)
                if nxt < len(self.scenario.steps):
                    self._begin(nxt)
            except ScenarioError as exc:
                self.finish(f"error: {exc}")
                return None
            if nxt >= len(self.scenario.steps):
                self.finish("scenario done")
                return None
        return self.status()

    def _take_intervals(self) -> list[IntervalStats]:
        """The current controller's intervals since the last call, written
        (those before the step's measured part marked as warm-up) and added
        to the step's."""
        ctl, cur = self.controller, self._cur
        assert ctl is not None and cur is not None  # the step's
        new = ctl.history[self._seen:]
        # each counted interval's verdict, in the same order as the history (benchtop.run.verdicts)
        judged = ctl.verdicts.verdicts[self._seen:] if ctl.verdicts is not None else []
        self._seen = len(ctl.history)
        taken: list[IntervalStats] = []
        for i, iv in enumerate(new):
            d = iv.to_dict()
            if i < len(judged):
                d["verdict"] = judged[i].to_dict()
            d["t"] = round(self._scenario_t(iv.t), 3)
            d["dt"] = round(iv.dt, 3)
            d["step"] = cur.step.index
            # an interval starting at the step's first reading (to rounding) is the step's
            if cur.measured_from is None or iv.t - iv.dt < cur.measured_from.t - max(1e-3, 0.05 * iv.dt):
                d["warmup"] = True
            else:
                cur.intervals.append(d)
                if iv.costs is not None:
                    work = iv.costs.work
                    cur.work = work if cur.work is None else cur.work.plus(work)
            if self.writer:
                self.writer.append(INTERVALS, d)
            taken.append(iv)
        return taken

    def status(self) -> str:
        cur = self._cur
        if cur is None or self.done:
            return f"scenario {self.scenario.name}: {self.stopped_by or 'done'}"
        now = self.clock()
        dl = self.deadline() or now
        phase = "warm-up" if cur.measured_from is None else "measuring"
        left = max(0.0, dl - now) + (cur.step.duration if cur.measured_from is None else 0.0)
        return f"{cur.step.label(len(self.scenario.steps))}: {phase}, {left:.0f}s left"

    def _close_step(self, last: EngineSample, stopped_by: str) -> None:
        cur = self._cur
        assert cur is not None
        ctl = self.segments[cur.seg]
        cur.end = last
        cur.t_end = self._scenario_t(last.t)
        cur.stopped_by = stopped_by
        if cur.measured_from is None or last.t <= cur.measured_from.t:
            self._cur = None
            return  # ended during its warm-up: no figures
        pcts = (self.percentile,) if self.percentile > 0 else ()
        summary = RunSummary.between(cur.measured_from, last, pcts, ctl.program.txn_names, stopped_by)
        self._summaries.append((cur.step, summary))
        result = step_result(cur.step, summary, cur.t_start, cur.t_measure or cur.t_start, cur.t_end,
                             self.scenario.workload_of(cur.step))
        # the step's own knob changes (keys in the TUI) split its steady state too
        events = [{"t": self._seg_offsets[cur.seg] + ev.t, "kind": ev.kind} for ev in ctl.timeline]
        result.update(analyse(cur.intervals, events=events))
        if cur.validity is not None:
            result["validity"] = cur.validity.to_dict()
        if summary.groups:
            result["groups"] = {g.name: g.to_dict() for g in summary.groups}
        if cur.work is not None:
            result["per_op"] = cur.work.per_op(summary.transactions).to_dict()
            result["client_cpu"] = client_cpu(cur.work, summary.transactions, summary.threads).to_dict()
            self._work = cur.work if self._work is None else self._work.plus(cur.work)
        if stopped_by:
            result["stopped_by"] = stopped_by
        self.results.append(result)
        self._cur = None
        if self.on_step_done:
            self.on_step_done(result)

    def finish(self, reason: str = "") -> RunSummary | None:
        """Stop the load (now, if steps remain), write summary.json and the
        histograms; returns the whole scenario's RunSummary (None if no step
        got past its warm-up)."""
        if self.done:
            return self.summary
        self.done = True
        self.stopped_by = reason
        ctl = self.controller
        if ctl is not None:
            stopped = ctl.stop(reason)
            if self._cur is not None:
                # the step ends with the stopped load's last interval, the summary's snapshot
                if self._take_intervals():
                    self.final_step = self._cur.step.index
                self._close_step(ctl.last_reading, reason if reason != "scenario done" else "")
            if stopped is not None and stopped.stopped_by.startswith("error:"):
                self.stopped_by = stopped.stopped_by
        try:
            if self._instrumentation is not None:
                self._instrumentation.restore()  # waits RESTORE_WAIT_S at most, then closes
        finally:
            self.restore_settings()
        self.summary = merge_summaries([s for _, s in self._summaries], self.stopped_by, self.percentile)
        if self.writer:
            self._write_results()
        return self.summary

    def restore_settings(self) -> None:
        """Put the server settings back (idempotent; also for a scenario that
        ended by a signal or an error)."""
        if self.settings is None or not self.settings.saved:
            return
        try:
            # settings that took a restart to apply take one to go back
            restart = self.settings.needs_restart(list(self.settings.saved))
            self.restored += self.settings.restore()
            if restart and self.scenario.restart is not None and self.hooks is not None:
                result = self.hooks.run(self.scenario.restart, "restart", None)
                self.hook_results.append(result)
                if not result.ok:
                    self.restore_error = f"{', '.join(restart)} restored but the restart failed: {result.detail}"
            elif restart:
                self.restore_error = f"{', '.join(restart)} restored; they take effect at the next restart"
        except SettingsError as exc:
            self.restore_error = str(exc)
        if self.restored and self.writer:
            self.writer.append(TIMELINE, {"type": "event", "t": round(self.elapsed, 3), "kind": "settings",
                                                  "text": "settings restored: " + ", ".join(self.restored)})

    def summary_dict(self) -> dict[str, Any]:
        s = self.summary
        d: dict[str, Any] = s.to_dict() if s is not None else {"type": "summary", "transactions": 0}
        d["stopped_by"] = self.stopped_by
        d["scenario"] = self.scenario.name
        d["workload"] = ", ".join(self.scenario.workloads)
        d["target"] = self.segments[0].target if self.segments else ""
        d["started_at"] = round(self.started_at, 3)
        d["steps"] = self.results
        # steady state is each step's (in `steps`): never across steps
        d["stalls"] = [dict(stall, step=r["index"]) for r in self.results for stall in r.get("stalls", [])]
        if self._work is not None and s is not None:
            d["per_op"] = self._work.per_op(s.transactions).to_dict()
            d["client_cpu"] = client_cpu(self._work, s.transactions, s.threads).to_dict()
        last = self.segments[0].last_summary if len(self.segments) == 1 else None
        if last is not None:
            # one engine for the whole scenario: its start-to-end sizes and totals are the scenario's
            costs = last.costs
            if costs is not None:
                d.update({k: v for k, v in costs.to_dict().items() if k in ("sizes", "totals", "host")})
        if self.validity is not None:
            d["validity"] = self.validity.to_dict()
        if self.hook_results:
            d["hooks"] = [h.to_dict() for h in self.hook_results]
        if self.restored or self.restore_error:
            d["settings_restored"] = self.restored
            if self.restore_error:
                d["settings_restore_error"] = self.restore_error
        return d

    def _write_results(self) -> None:
        assert self.writer is not None
        self.writer.write_json(SUMMARY, self.summary_dict())
        hist: dict[str, Any] = {"unit": "ns", "layout": "benchtop-loglinear-128"}
        if self.summary is not None:
            hist["latency"] = self.summary.latency.to_sparse()
            hist["service"] = self.summary.service.to_sparse()
        hist["steps"] = [{"index": step.index, "latency": s.latency.to_sparse(), "service": s.service.to_sparse()}
                         for step, s in self._summaries]
        self.writer.write_json(HISTOGRAM, hist)

    def close(self) -> None:
        for ctl in self.segments:
            ctl.close()


def _redacted(value: Any) -> Any:
    """An option as config.json keeps it: DSNs (one or a list) without their password."""
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return redact_dsn(value) if isinstance(value, str) and "://" in value else value


def step_result(step: Step, s: RunSummary, t_start: float, t_measure: float, t_end: float, workload: str) -> dict[str, Any]:
    return {
        "index": step.index,
        "label": step.label(),
        "name": step.name,
        "mark": step.mark,
        "workload": workload,
        "instrumentation": step.instrumentation,
        "repeat": step.repeat,
        **({"settings": dict(step.settings)} if step.settings else {}),
        # as a run's summary: the connections, the threads that carry them, and the connections served
        **s.workers.to_dict(),
        "connections_served": s.connections_served,
        "rate": s.rate,
        "tps": round(s.tps, 2),
        "qps": round(s.qps, 2),
        "transactions": s.transactions,
        "latency_ms": {k: round(v, 3) for k, v in s.latency_ms.items()},
        "errors": s.error_count,
        "time_s": round(s.time_s, 3),
        "warmup_s": step.warmup,
        "t_start": round(t_start, 3),
        "t_measure": round(t_measure, 3),
        "t_end": round(t_end, 3),
    }


def merge_summaries(summaries: Sequence[RunSummary], stopped_by: str = "", percentile: float = 95.0) -> RunSummary | None:
    """Several steps' RunSummary as one (counts and histograms added)."""
    if not summaries:
        return None
    first = summaries[0]
    lat, svc = first.latency, first.service
    for s in summaries[1:]:
        lat, svc = lat + s.latency, svc + s.service
    n = lat.total
    ps = sorted(set(DEFAULT_PERCENTILES) | {99.9} | ({percentile} if percentile > 0 else set()))

    def figures(h: Histogram, key: str) -> dict[str, float]:
        p = h.percentiles_ms(ps)
        d = {pct_key(x): p[x] for x in ps}
        d["min"] = min((getattr(s, key)["min"] for s in summaries if s.transactions), default=0.0)
        d["max"] = max((getattr(s, key)["max"] for s in summaries), default=0.0)
        d["avg"] = sum(getattr(s, key)["avg"] * s.transactions for s in summaries) / n if n else 0.0
        return d

    connects = sum(s.connects for s in summaries)
    types: dict[str, int] = {}
    errors: dict[str, int] = {}
    for s in summaries:
        for k, v in s.txn_types.items():
            types[k] = types.get(k, 0) + v
        for k, v in s.errors.items():
            errors[k] = errors.get(k, 0) + v
    last = summaries[-1]
    return RunSummary(
        time_s=sum(s.time_s for s in summaries), threads=last.threads, rate=last.rate,
        transactions=sum(s.transactions for s in summaries), rollbacks=sum(s.rollbacks for s in summaries),
        reads=sum(s.reads for s in summaries), writes=sum(s.writes for s in summaries),
        other=sum(s.other for s in summaries), errors=errors, reconnects=sum(s.reconnects for s in summaries),
        connects=connects,
        connect_ms_avg=sum(s.connect_ms_avg * s.connects for s in summaries) / connects if connects else 0.0,
        latency_ms=figures(lat, "latency_ms"), service_latency_ms=figures(svc, "service_latency_ms"),
        latency=lat, service=svc, txn_types=types, stopped_by=stopped_by,
        loop_threads=last.loop_threads, connections_served=max(s.connections_served for s in summaries),
    )


def iter_step_lines(results: Iterable[Mapping[str, Any]], percentile: float = 95.0) -> Iterable[str]:
    """A text table of step results."""
    key = pct_key(percentile)
    pct = f"p{percentile:g}"
    yield f"{'step':>4} {'threads':>7} {'rate':>8} {'tps':>10} {'qps':>11} {pct:>8} {'p99':>8} {'errors':>6}  label"
    for r in results:
        rate = f"{r['rate']:g}" if r.get("rate") else "-"
        lat = r["latency_ms"]
        yield (f"{r['index'] + 1:>4} {workers_of(r).connections:>7} {rate:>8} {r['tps']:>10.2f} {r['qps']:>11.2f} "
               f"{lat.get(key, 0.0):>8.3f} {lat.get('p99', 0.0):>8.3f} {r['errors']:>6}  {r['label']}"
               + (f"  [{r['stopped_by']}]" if r.get("stopped_by") else "")
               + (f"  validity: {r['validity'].get('status', '')}" if r.get("validity") else ""))
