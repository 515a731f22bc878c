"""ScenarioDriver on fake controllers and a fake clock: step boundaries,
warm-ups excluded, one engine per workload, guards, and the results files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchtop.engine.histogram import Histogram, bucket_index, nbuckets
from benchtop.record.folder import ResultsWriter
from benchtop.record.samples import TimelineEvent
from benchtop.record.samples import ERROR_KINDS, EngineSample, IntervalStats, RunSummary
from benchtop.record.workers import Workers
from benchtop.scenario.driver import ScenarioDriver
from benchtop.scenario.file import parse_scenario

TPS_PER_THREAD = 100
LAT_NS = 2_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeEngine:
    """Transactions at TPS_PER_THREAD per thread, every one taking 2 ms."""

    def __init__(self, clock: Clock, threads: int) -> None:
        self.clock, self.t0, self.threads = clock, clock.now, threads
        self.done, self.last_t = 0.0, 0.0

    def snapshot(self) -> EngineSample:
        t = self.clock.now - self.t0
        self.done += (t - self.last_t) * self.threads * TPS_PER_THREAD
        self.last_t = t
        n = int(round(self.done))
        counts = [0] * nbuckets()
        counts[bucket_index(LAT_NS)] = n
        h = Histogram(tuple(counts))
        return EngineSample(
            t=t, state="running", threads_target=self.threads, threads_running=self.threads, in_flight=0, unfinished=0,
            paused=False,
            rate=0.0,
            transactions=n, rollbacks=0, reads=n, writes=0, other=0, errors={k: 0 for k in ERROR_KINDS}, retries=0,
            reconnects=0, connects=self.threads, connect_ns_sum=0, connect_ns_max=0, latency_ns_sum=n * LAT_NS,
            latency_ns_min=LAT_NS, latency_ns_max=LAT_NS, service_ns_sum=n * LAT_NS, service_ns_max=LAT_NS,
            busy_ns=0, queue_ns=0.0, tickets_due=0, txn_by_type=(n,), txn_ns_by_type=(0,), rows_loaded=0, error="",
            latency=h, service=h,
        )


@dataclass
class FakeProgram:
    txn_names: tuple[str, ...] = ("point_select",)


@dataclass
class FakeCfg:
    workload: str

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload}


class FakeController:
    loop_threads = 0  # --connections: the event-loop threads

    def __init__(self, clock: Clock, workload: str, threads: int | None, rate: float | None) -> None:
        self.clock, self.workload, self.target = clock, workload, "fake://db"
        self.options, self.program = FakeCfg(workload), FakeProgram()
        self.threads, self.rate = threads or 1, rate or 0.0
        self.history: list[IntervalStats] = []
        self.timeline: list[TimelineEvent] = []
        self.on_event = None
        self.finished, self.failed_error, self.instrumentation = False, None, None
        self.verdicts = self.last_summary = None
        self.stopped: str | None = None
        self.groups: list[tuple[str, int, float]] = []
        self.paused = False

    @property
    def workers(self) -> Workers:
        return Workers(self.threads, self.loop_threads)

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self._event("pause" if paused else "resume", "paused" if paused else "resumed")

    def start(self) -> None:
        self.engine = FakeEngine(self.clock, self.threads)
        self._prev = self.engine.snapshot()

    @property
    def last_reading(self) -> EngineSample:
        return self._prev

    def sample(self) -> IntervalStats:
        cur = self.engine.snapshot()
        iv = IntervalStats.between(self._prev, cur)
        self._prev = cur
        self.history.append(iv)
        return iv

    def _event(self, kind: str, text: str) -> None:
        ev = TimelineEvent(self.clock.now - self.engine.t0, kind, text)
        self.timeline.append(ev)
        if self.on_event:
            self.on_event(ev)

    def set_threads(self, n: int) -> None:
        self.engine.snapshot()  # bank what the old thread count did
        self.threads = self.engine.threads = n
        self._event("threads", f"threads {n}")

    def set_rate(self, rate: float) -> None:
        self.rate = rate
        self._event("rate", f"rate {rate:g}/s")

    def mark(self, text: str) -> None:
        self._event("mark", text)

    def note(self, kind: str, text: str) -> None:
        self._event(kind, text)

    def stop(self, reason: str = "") -> RunSummary:
        self.stopped = reason
        first = FakeEngine(self.clock, 0).snapshot()
        cur = self.engine.snapshot()
        if cur.t > self._prev.t:  # the last interval ends at the stop, as RunController.stop() writes it
            self.sample()
        return RunSummary.between(first, cur, stopped_by=reason)

    def close(self) -> None:
        pass


def drive(text: str, tmp_path: Path | None = None, step_s: float = 0.5, limit: int = 200,
          **driver_args: Any) -> tuple[ScenarioDriver, list]:
    clock = Clock()
    made: list[FakeController] = []

    def make(workload: str, threads: int | None, rate: float | None) -> FakeController:
        made.append(FakeController(clock, workload, threads, rate))
        return made[-1]

    writer = ResultsWriter(tmp_path) if tmp_path else None
    driver = ScenarioDriver(parse_scenario(text), make, writer, clock=clock, **driver_args)
    driver.start()
    for _ in range(limit):
        if driver.done:
            break
        clock.now += step_s
        driver.controller.sample()
        driver.tick()
    if writer:
        writer.close()
    return driver, made


SWEEP = ('workload = "a"\n[[step]]\nthreads = [1, 2]\nduration = 2\nwarmup = 1\n'
         '[[step]]\nworkload = "b"\nthreads = 3\nduration = 1\n')


def test_steps_exclude_warmup_and_reuse_the_engine(tmp_path: Path):
    driver, made = drive(SWEEP, tmp_path)
    assert driver.stopped_by == "scenario done"
    assert [m.workload for m in made] == ["a", "b"]  # one engine per workload, not per step
    assert made[0].stopped == "scenario: next workload"
    res = driver.results
    assert [(r["threads"], r["workload"]) for r in res] == [(1, "a"), (2, "a"), (3, "b")]
    assert [r["time_s"] for r in res] == [2.0, 2.0, 1.0]
    assert [r["transactions"] for r in res] == [200, 400, 300]  # warm-ups left out
    assert [r["t_start"] for r in res] == [0.0, 3.0, 6.0]
    assert [r["t_measure"] for r in res] == [1.0, 4.0, 6.0]
    assert res[0]["latency_ms"]["p99"] == res[2]["latency_ms"]["p99"] > 1.9
    assert driver.summary.transactions == 900 and driver.summary.time_s == 5.0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [s["tps"] for s in summary["steps"]] == [100.0, 200.0, 300.0]
    assert "steady_state" not in summary  # never across steps: each step has its own
    assert [s["steady_state"]["samples"] for s in summary["steps"]] == [4, 4, 2]
    ivs = [json.loads(ln) for ln in (tmp_path / "intervals.jsonl").read_text().splitlines()]
    assert [iv["t"] for iv in ivs] == [0.5 * i for i in range(1, len(ivs) + 1)]  # one clock across engines
    assert [iv["step"] for iv in ivs if iv.get("warmup")] == [0, 0, 1, 1]
    timeline = [json.loads(ln) for ln in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    threads_ev = [e for e in timeline if e["kind"] == "threads"]
    assert [(e["t"], e["text"]) for e in threads_ev] == [(3.0, "threads 2")]
    hist = json.loads((tmp_path / "histogram.json").read_text())
    assert [sum(c for _, c in s["latency"]) for s in hist["steps"]] == [200, 400, 300]


def test_step_totals_are_the_sum_of_their_intervals_even_when_stopped_between_ticks(tmp_path: Path):
    """A step's figures and the scenario's are taken from the readings its
    intervals end with, the stopped load's last one included: a stop 0.3 s
    after a tick adds a short interval rather than transactions no line has."""
    clock = Clock()
    made: list[FakeController] = []

    def make(workload: str, threads: int | None, rate: float | None) -> FakeController:
        made.append(FakeController(clock, workload, threads, rate))
        return made[-1]

    writer = ResultsWriter(tmp_path)
    driver = ScenarioDriver(parse_scenario(SWEEP), make, writer, clock=clock)
    driver.start()
    for _ in range(9):  # into step 2's measured part
        clock.now += 0.5
        driver.controller.sample()
        driver.tick()
    clock.now += 0.3
    made[-1].engine.snapshot()  # a reading between ticks (a screen, /metrics) counts no interval
    clock.now += 0.01
    driver.finish("signal")
    writer.close()
    ivs = [json.loads(ln) for ln in (tmp_path / "intervals.jsonl").read_text().splitlines()]
    for r in driver.results:
        assert r["transactions"] == sum(iv["transactions"] for iv in ivs
                                        if iv["step"] == r["index"] and not iv.get("warmup"))
    assert driver.results[-1]["time_s"] == pytest.approx(0.81)
    assert ivs[-1]["dt"] == pytest.approx(0.31)
    assert driver.summary.transactions == sum(iv["transactions"] for iv in ivs if not iv.get("warmup")) == 200 + 162


def test_first_controller_starts_with_the_first_steps_settings():
    _, made = drive('[[step]]\nthreads = 16\nrate = 250\nduration = 1\n')
    assert (made[0].engine.threads, made[0].rate) == (16, 250.0)
    assert not [e for e in made[0].timeline if e.kind in ("threads", "rate")]


def test_connections_steps_move_the_connections_knob(tmp_path: Path):
    """On event loops a step's connections (and, as before, its threads) are
    the workers knob; each step's result carries connections and those served."""
    from dataclasses import replace

    from benchtop.scenario.controller import ScenarioController

    class LoopEngine(FakeEngine):  # 2 loop threads; every connection asked for is served
        def snapshot(self) -> EngineSample:
            self.served = max(getattr(self, "served", 0), self.threads)
            return replace(super().snapshot(), loop_threads=2, connections_served=self.served)

    clock = Clock()
    made: list[FakeController] = []

    class LoopController(FakeController):
        loop_threads = 2

        def start(self) -> None:
            self.engine = LoopEngine(self.clock, self.threads)
            self._prev = self.engine.snapshot()

    def make(workload: str, threads: int | None, rate: float | None) -> FakeController:
        made.append(LoopController(clock, workload, threads, rate))
        return made[-1]

    sc = parse_scenario('connections = 8\nthreads = 2\n[[step]]\nconnections = [10, 40]\nduration = 1\n'
                        '[[step]]\nthreads = 20\nduration = 1\n')
    driver = ScenarioDriver(sc, make, ResultsWriter(tmp_path), clock=clock)
    ctl = ScenarioController(driver)
    ctl.start()
    # the screens' word and limit: the running step's connections on its event loops
    assert (ctl.workers, ctl.workers.word, ctl.workers.limit) == (Workers(10, 2), "connections", 65536)
    texts = [n.text for n in ctl.notices()]
    while not driver.done:  # as ScenarioController.sample, on the fake's IntervalStats
        clock.now += 0.5
        driver.controller.sample()
        driver.tick()
        texts += [n.text for n in ctl.notices()]
    assert made[0].engine.threads == 20 and len(made) == 1
    # steps[] say connections and the threads that carry them, as summary.json does
    assert [(r["label"], r["connections"], r["threads"], r["connections_served"]) for r in driver.results] == [
        ("step 1, connections 10", 10, 2, 10), ("step 2, connections 40", 40, 2, 40),
        ("step 3, threads 20", 20, 2, 40)]
    assert not any("loop_threads" in r for r in driver.results)
    assert texts[0] == "# step 1/3, connections 10: 1s"
    assert texts[1].startswith("# step 1 done: tps 1000.00") and texts[1].endswith(" connections 10 (10 served)")
    summary = driver.summary.to_dict()
    assert (summary["threads"], summary["connections"], summary["connections_served"]) == (2, 20, 40)


def test_a_guard_ends_the_scenario_mid_step():
    driver, _ = drive('[[step]]\nthreads = 1\nduration = 2\n[[step]]\nthreads = 2\nduration = 60\n'
                      'stop_if = "tps>150 for 1s"\n[[step]]\nduration = 5\n')
    assert driver.stopped_by.startswith("stop-if: tps>150 for 1s (tps was 200/s) (step 2")
    assert [r["index"] for r in driver.results] == [0, 1]
    assert driver.results[1]["stopped_by"] == driver.stopped_by
    assert driver.results[1]["time_s"] == 1.0


def test_status_and_deadline():
    clock = Clock()
    driver = ScenarioDriver(parse_scenario('[[step]]\nthreads = [1, 2]\nduration = 10\nwarmup = 5\n'),
                            lambda w, t, r: FakeController(clock, w, t, r), clock=clock)
    driver.start()
    assert driver.deadline() == 1005.0
    clock.now += 2
    driver.controller.sample()
    assert driver.tick() == "step 1/2, threads 1: warm-up, 13s left"
    clock.now += 3
    driver.controller.sample()
    assert driver.tick() == "step 1/2, threads 1: measuring, 10s left"
    assert driver.deadline() == 1015.0
    driver.finish("quit")
    assert driver.done and driver.tick() is None
    assert driver.results == []  # stopped before any measured time


class FakeSettings:
    """SettingsControl's surface: values start at "orig"; restart_for names settings needing a restart."""

    def __init__(self, restart_for: tuple[str, ...] = ()) -> None:
        self.server: dict[str, Any] = {}
        self.saved: dict[str, Any] = {}
        self.current: dict[str, Any] = {}
        self.restart_for = restart_for
        self.applied: list[dict[str, Any]] = []

    def apply(self, settings: dict[str, Any]) -> list[str]:
        self.applied.append(dict(settings))
        for k, v in settings.items():
            self.saved.setdefault(k, self.server.get(k, "orig"))
            self.server[k] = self.current[k] = v
        return [f"{k} = {v}" for k, v in settings.items()]

    def needs_restart(self, names: list[str]) -> list[str]:
        return [n for n in names if n in self.restart_for]

    def restore(self) -> list[str]:
        done = [f"{k} = {v}" for k, v in self.saved.items()]
        self.server.update(self.saved)
        self.saved.clear()
        self.current.clear()
        return done


class FakeHooks:
    def __init__(self, fail: str = "") -> None:
        self.ran: list[tuple[str, str]] = []
        self.fail = fail

    def run(self, hook: Any, when: str, step: int | None) -> Any:
        from benchtop.scenario.hooks import HookResult

        self.ran.append((when, hook.command))
        ok = hook.command != self.fail
        return HookResult(hook, when, step, 0.0, ok, "" if ok else "exit status 1")


SETTINGS = ('engine = "mysql"\nworkload = "a"\nrestart = { shell = "restart-db" }\n'
            '[[step]]\nduration = 1\nsettings = { sync_binlog = [0, 1], buffer = "1G" }\n'
            'before = ["CHECKPOINT"]\nafter = [{ shell = "drop-caches", timeout = 5 }]\n')


def test_settings_sweep_applies_each_step_and_restores(tmp_path: Path):
    settings, hooks = FakeSettings(restart_for=("buffer",)), FakeHooks()
    driver, made = drive(SETTINGS, tmp_path, settings=settings, hooks=hooks)
    assert [r["settings"] for r in driver.results] == [{"sync_binlog": 0, "buffer": "1G"},
                                                       {"sync_binlog": 1, "buffer": "1G"}]
    # only what changes is applied again; the restart hook runs when a restart-only setting changes
    assert settings.applied == [{"sync_binlog": 0, "buffer": "1G"}, {"sync_binlog": 1}]
    # ... and once more after the restore, so the restart-only setting goes back too
    assert hooks.ran == [("restart", "restart-db"), ("before", "CHECKPOINT"), ("after", "drop-caches"),
                         ("before", "CHECKPOINT"), ("after", "drop-caches"), ("restart", "restart-db")]
    assert settings.server == {"sync_binlog": "orig", "buffer": "orig"} and not settings.saved
    d = driver.summary_dict()
    assert sorted(d["settings_restored"]) == ["buffer = orig", "sync_binlog = orig"]
    assert [h["when"] for h in d["hooks"]][:3] == ["restart", "before", "after"]
    timeline = (tmp_path / "timeline.jsonl").read_text()
    assert "settings sync_binlog = 1" in timeline and "settings restored" in timeline and "hook before" in timeline
    # the load is paused while the second step's settings and hooks run
    assert [e.kind for e in made[0].timeline if e.kind in ("pause", "resume")][:2] == ["pause", "resume"]


def test_failed_hook_ends_the_scenario_and_restores(tmp_path: Path):
    settings, hooks = FakeSettings(), FakeHooks(fail="drop-caches")
    driver, _ = drive(SETTINGS.replace('restart = { shell = "restart-db" }\n', ""), tmp_path,
                      settings=settings, hooks=hooks)
    assert driver.done and driver.stopped_by.startswith("error:") and "drop-caches" in driver.stopped_by
    assert len(driver.results) == 1 and settings.server["sync_binlog"] == "orig"


def test_restart_only_setting_without_a_restart_hook_is_an_error(tmp_path: Path):
    import pytest

    from benchtop.scenario.file import ScenarioError

    with pytest.raises(ScenarioError, match="restart"):
        drive(SETTINGS.replace('restart = { shell = "restart-db" }\n', ""), tmp_path,
              settings=FakeSettings(restart_for=("buffer",)), hooks=FakeHooks())


def test_a_scenario_names_its_workload_and_target_before_its_first_step():
    # the /metrics endpoint (benchtop scenario --metrics-listen) takes its labels
    # before the start: they were read from a step controller not made yet
    from benchtop.scenario.controller import ScenarioController

    clock = Clock()
    sc = parse_scenario('workload = "oltp_read_only"\n[[step]]\nthreads = 2\nduration = 1\n')
    driver = ScenarioDriver(sc, lambda w, t, r: FakeController(clock, w, t, r), clock=clock)
    ctl = ScenarioController(driver, 1.0, target="fake://db")
    assert (ctl.workload, ctl.target) == ("oltp_read_only", "fake://db")
    ctl.start()
    assert ctl.workload.startswith("oltp_read_only") and ctl.target == "fake://db"


def test_an_event_at_an_engines_start_is_on_the_scenarios_clock(tmp_path: Path):
    """A controller that notes something as it starts (on a busy host: its
    workers' priority), before its engine's clock is mapped onto the
    scenario's: the note is written at the scenario's time, not a crash."""

    class NotingController(FakeController):
        def start(self) -> None:
            super().start()
            self.note("note", "workers at normal priority")

    clock = Clock()
    writer = ResultsWriter(tmp_path)
    made: list[FakeController] = []

    def make(workload: str, threads: int | None, rate: float | None) -> FakeController:
        made.append(NotingController(clock, workload, threads, rate))
        return made[-1]

    driver = ScenarioDriver(parse_scenario(SWEEP), make, writer, clock=clock)
    driver.start()
    while not driver.done:
        clock.now += 0.5
        driver.controller.sample()
        driver.tick()
    writer.close()
    notes = [json.loads(ln) for ln in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert [e["t"] for e in notes if e["text"] == "workers at normal priority"] == [0.0, 6.0]  # each engine's start
