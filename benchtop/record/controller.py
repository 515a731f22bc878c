"""What the screens and the headless loop need of a run, whoever runs it:
one engine (`RunController`), a scenario's steps (`ScenarioController`), or
engines on many hosts.  They call these methods and read `Sample`s; they
never reach behind the protocol.

A controller's methods may block (they talk to engines and servers): the TUI
calls them from thread workers, never from its event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from benchtop.record.knee import KneeView
from benchtop.record.samples import HostInterval, IntervalStats, RunSummary, TimelineEvent
from benchtop.record.workers import Workers
from benchtop.verdict import Verdict


def interval_record(iv: IntervalStats, t: float, fields: Mapping[str, Any], verdict: Verdict | None = None,
                    step: int | None = None) -> dict[str, Any]:
    """An interval's JSON object (a JSON line, a line of intervals.jsonl):
    its figures at report time `t`, then what the run adds."""
    d = iv.to_dict()
    d["t"] = round(t, 3)
    d.update(fields)
    if verdict is not None:
        d["verdict"] = verdict.to_dict()
    if step is not None:
        d["step"] = step
    return d


@dataclass(frozen=True, slots=True)
class Sample:
    """One reading of a run: the interval since the previous reading, and
    what it means."""

    interval: IntervalStats
    counted: bool  # part of the results: False during a warm-up
    t: float  # the interval's end as reports show it (run or scenario seconds, warm-up excluded)
    finished: bool = False  # the run is over (time, events, stop-if, failure, last step)
    reason: str = ""  # why it finished: "time", "events", "stop-if: ...", "error: ...", ...
    fields: Mapping[str, Any] = field(default_factory=dict)  # added to the interval's JSON line (a cluster's hosts)
    hosts: tuple[HostInterval, ...] = ()  # a cluster run: each load host's part of the interval
    verdict: Verdict | None = None  # what limited the interval, when the run judges it
    step: int | None = None  # a scenario's step the interval belongs to

    def to_dict(self) -> dict[str, Any]:
        """The interval's JSON line."""
        return interval_record(self.interval, self.t, self.fields, self.verdict, self.step)

    @property
    def failed(self) -> str | None:
        """The error that ended the run, if one did."""
        return self.reason[6:].strip() if self.reason.startswith("error:") else None


@dataclass(frozen=True, slots=True)
class Notice:
    """Something a loop reports between interval lines (a scenario step
    starting or done): one text line, or one JSON object."""

    text: str
    record: Mapping[str, Any]


class Controller(Protocol):
    """A run the user steers: knobs, marks, readings, the end."""

    @property
    def label(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def report_interval(self) -> float: ...

    # the knobs' current values
    @property
    def threads(self) -> int: ...
    @property
    def workers(self) -> Workers:
        """What `threads` (and set_threads) counts, its word and its limit:
        connections on event loops (--connections), else threads."""
        ...
    @property
    def rate(self) -> float: ...
    @property
    def paused(self) -> bool: ...
    @property
    def groups(self) -> list[tuple[str, int, float]]:
        """(name, threads, rate) of each thread group; empty for one pool."""
        ...

    # time, in seconds since start()
    @property
    def elapsed(self) -> float: ...
    @property
    def remaining(self) -> float | None: ...
    def ends_at(self) -> float | None:
        """time.monotonic() at which the run's time is up (None: no limit)."""
        ...
    def deadline(self) -> float | None:
        """time.monotonic() of a reading needed between report ticks (a
        scenario's step boundary, a run's warm-up end), None when there is none."""
        ...

    @property
    def knee(self) -> KneeView | None:
        """A knee search's probes and fit so far; None for a run that is no search."""
        ...

    @property
    def errors_total(self) -> int: ...
    @property
    def reconnects_total(self) -> int: ...
    @property
    def history(self) -> Sequence[IntervalStats]:
        """The counted intervals so far (a screen opened mid-run starts from these)."""
        ...
    @property
    def timeline(self) -> Sequence[TimelineEvent]: ...

    def start(self) -> None: ...
    def sample(self) -> Sample: ...
    def load_ended(self) -> bool:
        """The load has ended by itself (all its --events run, a failure)
        and a reading now would say so; cheap enough to ask between readings."""
        ...
    def notices(self) -> list[Notice]:
        """What happened since the last call that a log should say."""
        ...
    def set_threads(self, n: int) -> None: ...
    def set_rate(self, rate: float) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    def set_group_threads(self, name: str, n: int) -> None: ...
    def set_group_rate(self, name: str, rate: float) -> None: ...
    def mark(self, text: str) -> None: ...
    def note(self, kind: str, text: str) -> None: ...
    def cycle_instrumentation(self) -> str | None:
        """The next preset applied (None: the target has none)."""
        ...
    def save(self, prefix: Path) -> list[Path]:
        """The results so far into files named from `prefix`."""
        ...
    def stop(self, reason: str = "") -> RunSummary | None:
        """End the load (idempotent); the summary, None when nothing was measured."""
        ...
    def final_sample(self) -> Sample | None:
        """After stop(): the run's last interval, which stop() read from the
        stopped load (the summary's own snapshot), None when there was none."""
        ...
    def hurry(self) -> None:
        """A second request to end (signal, key): a stop in progress, or the
        next, stops waiting for workers and ends at once with what is there.
        Safe from a signal handler: it only sets a flag."""
        ...
