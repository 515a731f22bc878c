"""One live run through the probes a KneeSearch asks for: the engine starts
once on the prepared data and keeps its workers; between probes only the
threads (or the arrival rate) change, as the TUI's keys change them, so the
server sees no reconnect storm.

`KneeController` puts the search behind the controller protocol
(benchtop.record.controller), as ScenarioController does for steps: the headless
loop and the dashboard read it like any run, each reading feeds the probe
in progress (it asks for a reading every `timing.interval_s` through
`deadline()`), each finished probe is a notice, and the run is finished
when the search is done."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol

from benchtop.knee.answer import FAR
from benchtop.knee.probe import ProbeMeter, ProbeTiming
from benchtop.knee.search import KneeSearch, Probe
from benchtop.knee.usl import preload
from benchtop.knee.view import knee_view
from benchtop.record.controller import Notice, Sample
from benchtop.record.delegate import DelegatingController
from benchtop.record.knee import KneeView
from benchtop.record.samples import RunSummary
from benchtop.run.controller import RunController
from benchtop.workload import Program


class Steered(Protocol):
    """What the stepper needs of a run (RunController has it)."""

    def set_threads(self, n: int) -> None: ...
    def set_rate(self, rate: float) -> None: ...
    def note(self, kind: str, text: str) -> None: ...


class KneeStepper:
    """The search's probes over a run's readings, whoever takes them: `begin`
    once the run has started, then `feed` every reading."""

    def __init__(self, ctl: Steered, search: KneeSearch, timing: ProbeTiming,
                 on_probe: Callable[[int, Probe, KneeSearch], None] | None = None,
                 warmup_s: float = 0.0, budget_s: float = 0.0) -> None:
        """`warmup_s`: load before the first probe counts; `budget_s`: the
        whole search ends after this long (0: no limit)."""
        self.ctl = ctl
        self.search = search
        self.timing = timing
        self.on_probe = on_probe
        self.warmup_s = warmup_s
        self.budget_s = budget_s
        self.meter: ProbeMeter | None = None
        self.started = 0.0
        self.reason = ""  # why it ended ("" while it goes on)
        self.failed: str | None = None

    @property
    def done(self) -> bool:
        return bool(self.reason)

    def begin(self) -> None:
        self.started = time.monotonic()
        self._next()

    def feed(self, sample: Sample) -> bool:
        """One reading of the run; True when the search is over."""
        if self.done:
            return True
        if sample.failed:
            self.failed = sample.failed
            self.reason = f"error: {sample.failed}"
            return True
        if time.monotonic() - self.started < self.warmup_s or self.meter is None:
            return False
        iv = sample.interval
        errors = sum(v for k, v in iv.errors.items() if k != "fatal")
        if self.meter.add(iv.dt, iv.transactions, errors, iv.latency):
            self.search.record(self.meter.result())
            if self.on_probe is not None:
                self.on_probe(len(self.search.probes), self.search.probes[-1], self.search)
            self._next(budget=True)
        return self.done

    def stop(self, reason: str) -> None:
        self.reason = self.reason or reason

    def _next(self, budget: bool = False) -> None:
        """The next probe; with `budget`, none once the time budget is spent
        (a search that had just finished is complete all the same)."""
        x = self.search.next()
        if x is None:
            self.meter = None
            self.reason = self.search.reason or "done"
            return
        if budget and self.budget_s and time.monotonic() - self.started >= self.budget_s:
            self.meter = None
            self.reason = "the time budget is spent"
            return
        if self.search.settings.rate:
            self.ctl.set_rate(x)
        else:
            self.ctl.set_threads(int(x))
        timing, held = self.timing, ""
        if self.search.phase == "confirm":
            # the answer held for the whole time, its p99 over all of it
            hold = self.search.settings.confirm_s
            timing, held = replace(timing, min_s=hold, max_s=hold), f", held {hold:g} s to confirm the answer"
        self.ctl.note("mark", f"knee probe {len(self.search.probes) + 1}: "
                      + (f"rate {x:g}/s" if self.search.settings.rate else f"{int(x)} threads") + held)
        # the change follows a reading at once: the next interval is the probe's own
        self.meter = ProbeMeter(x, timing, limit_ms=self.search.settings.p99_limit_ms)


@dataclass(frozen=True, slots=True)
class ProbeLine:
    """How a finished probe is told (text, and a JSON object)."""

    text: str
    record: dict[str, Any]


def probe_line(n: int, p: Probe, search: KneeSearch) -> ProbeLine:
    rate = search.settings.rate
    why = search.why_not(p)
    fit = search.fit
    d: dict[str, Any] = {"type": "probe", "probe": n, ("rate" if rate else "threads"): p.x if rate else int(p.x),
                         "tps": round(p.tps, 2), "p99_ms": round(p.p99_ms, 3), "errors": p.errors,
                         "time_s": round(p.time_s, 2), "cv": round(p.cv, 4), "steady": p.steady,
                         "tps_parts": list(p.tps_parts), "p99_parts": list(p.p99_parts),
                         "feasible": not why, "phase": search.phase}
    if why:
        d["why_not"] = why
    usl = search.usl_dict()
    if usl is not None:
        d["usl"] = usl
    where = f"rate {p.x:g}/s" if rate else f"{int(p.x)} threads"
    p99s = f", p99 {min(p.p99_parts):.3g}-{max(p.p99_parts):.3g} ms" if p.p99_parts else ""
    steady = f"{'steady' if p.steady else 'not steady'} (cv {100 * p.cv:.1f}%{p99s})"
    text = (f"probe {n:2d}: {where:>14}  {p.tps:10.1f} tps  p99 {p.p99_ms:8.3f} ms  errors {p.errors}  "
            f"{p.time_s:.1f} s {steady}  {why or 'ok'}")
    if fit is not None and usl is not None:
        peak = usl.get("peak_threads")
        if usl.get("not_used"):
            text += f"  [USL: loose fit, r² {fit.r2:.2f}]"
        elif peak is None or peak > FAR * search.settings.high:
            text += "  [USL: no peak in range]"
        else:
            text += f"  [USL peak {peak:.0f} threads{', extrapolated' if usl.get('peak_extrapolated') else ''}]"
    return ProbeLine(text, d)


class KneeController(DelegatingController):
    """A knee search as one run, for the headless loop and the dashboard.
    The knobs act on the run (as the keys do); the next probe sets its own
    setting again."""

    def __init__(self, ctl: RunController, search: KneeSearch, timing: ProbeTiming, warmup_s: float = 0.0,
                 budget_s: float = 0.0) -> None:
        self._run = ctl
        self.search = search
        self.timing = timing
        self.stepper = KneeStepper(ctl, search, timing, self._probed, warmup_s, budget_s)
        self._notices: list[Notice] = []
        self._last_read = 0.0
        self.elapsed_s = 0.0

    @property
    def _ctl(self) -> RunController:
        return self._run

    def _probed(self, n: int, p: Probe, search: KneeSearch) -> None:
        line = probe_line(n, p, search)
        self._notices.append(Notice(line.text, line.record))

    # -- what it shows ------------------------------------------------------
    @property
    def program(self) -> Program:
        return self._ctl.program

    @property
    def workload(self) -> str:
        """The workload, with the search's progress."""
        n = len(self.search.probes)
        best = self.search.best
        where = (f"best {best.x:g}/s" if self.search.settings.rate else f"best {int(best.x)} thr") if best else "no best yet"
        return f"{self._ctl.workload} · knee: {n} probe{'s' if n != 1 else ''}, {where}"

    @property
    def remaining(self) -> float | None:
        return None

    @property
    def knee(self) -> KneeView:
        return knee_view(self.search)

    def ends_at(self) -> float | None:
        return None  # the search decides: sample() says when it is done

    def deadline(self) -> float | None:
        """Readings every `timing.interval_s`, whatever the report interval."""
        return self._last_read + self.timing.interval_s if self._last_read else None

    # -- the run --------------------------------------------------------------
    def start(self) -> None:
        if not self.search.settings.rate:
            preload()  # before the load starts: scipy's import would stall the first probes' readings
        self._ctl.start()
        self._last_read = time.monotonic()
        self.stepper.begin()

    def sample(self) -> Sample:
        inner = self._ctl.sample()
        self._last_read = time.monotonic()
        done = self.stepper.feed(inner)
        self.elapsed_s = time.monotonic() - self.stepper.started
        reason = self.stepper.reason if done else ""
        return replace(inner, finished=done or inner.finished, reason=reason or inner.reason)

    def notices(self) -> list[Notice]:
        out, self._notices = self._notices, []
        return out

    def stop(self, reason: str = "") -> RunSummary:
        self.stepper.stop(reason or "stopped")
        self.elapsed_s = time.monotonic() - self.stepper.started if self.stepper.started else 0.0
        return self._ctl.stop(self.stepper.reason)
