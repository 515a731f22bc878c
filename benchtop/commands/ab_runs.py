"""The runs of `benchtop ab`: one side's run of a round, or in a duet both
sides' runs at the same time, each a normal headless run in this process
(a RunSession driven by a Drive) into its own results folder, silent but
for `live`, which gets every counted interval as it is read."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchtop.ab.rounds import SideFigures
from benchtop.ab.sides import Side
from benchtop.ab.turns import Turns, take_turns
from benchtop.commands.drive import Drive
from benchtop.commands.run import finish_results, validity_before
from benchtop.options.run_options import RunOptions
from benchtop.record.controller import Sample
from benchtop.record.samples import RunSummary
from benchtop.run.controller import RunController
from benchtop.run.headless import LinePrinter
from benchtop.session import RunSession
from benchtop.stopping import StopFlag

# a side's name, and the counted interval its run just read (or None: its warm-up started)
Live = Callable[[str, Sample | None], None]


class RunFailed(Exception):
    """A side's run ended on an error; one line."""


class _Feed(LinePrinter):
    """Prints nothing: hands each counted interval to `live`."""

    def __init__(self, side: str, live: Live) -> None:
        super().__init__(None, False, 95.0, intervals=False)
        self.side = side
        self.live = live

    def interval(self, sample: Sample, tick: float | None = None) -> None:
        self.live(self.side, sample)


@dataclass
class _Measured:
    summary: RunSummary | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class SideRuns:
    """Runs the sides of `options` (by name) into `folder` under one `stop`;
    `rng` draws the lengths of the sides' turns."""

    def __init__(self, options: Mapping[str, RunOptions], folder: Path, stop: StopFlag,
                 live: Live = lambda side, sample: None, rng: random.Random | None = None) -> None:
        self.options = options
        self.folder = folder
        self.stop = stop
        self.live = live
        self.rng = rng or random.Random()

    def one(self, side: Side, index: int) -> SideFigures | None:
        """The side's run of round `index`; None when a stop cut it short."""
        figures = self.pair((side,), index)
        return figures[side.name] if figures is not None else None

    def pair(self, sides: tuple[Side, ...], index: int) -> dict[str, SideFigures] | None:
        """Every side's run of round `index` at the same time: the sessions
        are opened in the order given (each checks its target and starts its
        monitor), then the loads start together; None when a stop cut them short."""
        return self._together(sides, index, None)

    def turns(self, sides: tuple[Side, ...], index: int, turn_s: float) -> dict[str, SideFigures] | None:
        """Every side's run of round `index` open at once, taking turns of
        `turn_s` (benchtop.ab.turns), the first side given first: each runs
        twice its round's time, half of it paused, and its rate is its
        transactions over the time it ran; None when a stop cut them short."""
        return self._together(sides, index, turn_s)

    def _together(self, sides: tuple[Side, ...], index: int, turn_s: float | None) -> dict[str, SideFigures] | None:
        names = {side.name: f"round-{index:02d}-{side.name}" for side in sides}
        share = len(sides) if turn_s is not None else 1
        with ExitStack() as stack:
            sessions = {side.name: stack.enter_context(
                RunSession(replace(self.options[side.name], out=str(self.folder / names[side.name]),
                                   time_s=self.options[side.name].time_s * share), progress=None))
                for side in sides}
            ctls = {name: session.controller() for name, session in sessions.items()}
            if turn_s is not None:
                _say_turns(ctls, names, turn_s)
            if len(sessions) == 1:
                measured = {name: self._measure(name, s, ctls[name]) for name, s in sessions.items()}
                turns = None
            else:
                with ThreadPoolExecutor(len(sessions) + 1, thread_name_prefix="ab-side") as pool:
                    done = threading.Event()
                    taking = (pool.submit(take_turns, {name: ctl.engine for name, ctl in ctls.items()}, turn_s, done,
                                          rng=self.rng)
                              if turn_s is not None else None)
                    futures = {name: pool.submit(self._measure, name, s, ctls[name]) for name, s in sessions.items()}
                    try:
                        measured = {name: f.result() for name, f in futures.items()}
                    finally:
                        done.set()
                    turns = taking.result() if taking is not None else None
        if self.stop.event.is_set():
            return None
        return {name: _figures(m, sessions[name], names[name], _turns_ran(ctls[name], m, turns, name),
                               together=len(sessions) > 1)
                for name, m in measured.items()}

    def _measure(self, name: str, session: RunSession, ctl: RunController) -> _Measured:
        out = _Measured()
        early = validity_before(session, ctl)

        def ended(summary: RunSummary | None) -> None:
            if summary is not None:
                out.extra.update(finish_results(session, ctl, early, summary)[0])

        self.live(name, None)
        drive = Drive(session, sys.stdout, prog="benchtop ab", stop=self.stop)
        out.summary = drive.run(ctl, _Feed(name, self.live), ctl.program.txn_names, ended=ended)
        return out


def _say_turns(ctls: Mapping[str, RunController], folders: Mapping[str, str], turn_s: float) -> None:
    """Each run's timeline says it took turns, and which, before it starts:
    its rates are about half a lone run's."""
    for i, (name, ctl) in enumerate(ctls.items()):
        others = ", ".join(folder for other, folder in folders.items() if other != name)
        ctl.note("note", f"benchtop ab: took turns of {turn_s:g} s with {others} ({'first' if i == 0 else 'second'} "
                         "turn), paused while it ran: this run's rates are over all its time, ab.json's over the time "
                         "it ran")


def _turns_ran(ctl: RunController, m: _Measured, turns: Turns | None, name: str) -> tuple[float, float] | None:
    """The seconds a side that took turns ran in its measured window, and
    the process's CPU seconds in them (None: it ran throughout)."""
    end = ctl.ends_at()
    if turns is None or m.summary is None or end is None:
        return None
    start = end - m.summary.time_s
    return turns.ran_s(name, start, end), turns.cpu_s(name, start, end)


def _figures(m: _Measured, session: RunSession, name: str, ran: tuple[float, float] | None,
             together: bool) -> SideFigures:
    """The run's figures, or RunFailed when it ended on an error or its
    results could not be written (known once its session closed).  A side
    that took turns: its rate and CPU per transaction over the (seconds,
    CPU seconds) it `ran`.  Two sides `together` otherwise (a duet): the
    process's CPU was both sides' at once, so no client CPU per transaction."""
    summary, writer = m.summary, session.writer
    if summary is None or summary.stopped_by.startswith("error:"):
        why = summary.stopped_by[6:].strip() if summary is not None else "nothing was measured"
        raise RunFailed(f"{name}: {why}")
    if writer is not None and writer.failed:
        raise RunFailed(f"{name}: {writer.failed}")
    lat = summary.latency_ms
    cpu = summary.costs.client_cpu if summary.costs is not None else None
    cpu_us = cpu.per_op_us if cpu is not None and not together else None
    tps = summary.tps
    if ran is not None and ran[0] > 0:
        tps = summary.transactions / ran[0]
        cpu_us = round(1e6 * ran[1] / summary.transactions, 3) if summary.transactions else None
    verdict = (m.extra.get("steady_state") or {}).get("verdict") or {}
    return SideFigures(name, tps, lat.get("p50", 0.0), lat.get("p95", 0.0), lat.get("p99", 0.0),
                       cpu_us, summary.error_count, verdict.get("limit"), str(verdict.get("evidence") or ""),
                       round(ran[0], 3) if ran is not None else None)
