"""The headless loop: sample any `Controller` on each report tick (and at the
readings it asks for between ticks), print sysbench-style lines or JSON
Lines, stop on its time, a signal or when it says it is finished.  The same
loop runs a single run, a scenario and the pytest plugin's runs.  Never
imports textual."""

from __future__ import annotations

import json
import math
import time
from typing import Any, TextIO

from benchtop.options.run_options import RunOptions
from benchtop.record.controller import Controller, Notice, Sample
from benchtop.record.formats import interval_line, summary_text
from benchtop.record.samples import RunSummary
from benchtop.stopping import StopFlag
from benchtop.workload import Program, workload_extra_fields, workload_extra_lines

# the engine's clock lags ours a hair: a due deadline is never waited for in a spin
MIN_WAIT_S = 0.02


class LinePrinter:
    """Interval lines and notices as text (sysbench's format) or JSON Lines;
    `out=None` prints nothing, `intervals=False` (sysbench's
    --report-interval 0) only the notices."""

    def __init__(self, out: TextIO | None, json_lines: bool, percentile: float, intervals: bool = True) -> None:
        self.out = out
        self.json_lines = json_lines
        self.percentile = percentile
        self.intervals = intervals

    def interval(self, sample: Sample, tick: float | None = None) -> None:
        """`tick`: the second a text line is labelled with, when the load
        ended between ticks (its figures cover the time it ran)."""
        if self.out is None or not self.intervals:
            return
        iv = sample.interval
        if self.json_lines:
            self._print(json.dumps(sample.to_dict()))
        else:
            self._print(interval_line(iv, self.percentile, iv.t - (sample.t if tick is None else tick)))
            if sample.verdict is not None:
                self._print(f"     {sample.verdict.text()}")

    def notice(self, notice: Notice) -> None:
        if self.out is not None:
            self._print(json.dumps(dict(notice.record)) if self.json_lines else notice.text)

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)


def run_headless(ctl: Controller, printer: LinePrinter, stop: StopFlag | None = None) -> RunSummary | None:
    """Starts the controller and samples it until its time is up, it says it
    is finished, or `stop` is set; gives the printer each counted interval
    (it leaves them out for --report-interval 0) and every notice; returns
    the controller's summary."""
    stop = stop or StopFlag()
    stop.on_hurry(ctl.hurry)
    # controllers sample every second when the report interval is 0
    interval = ctl.report_interval
    ctl.start()
    for notice in ctl.notices():
        printer.notice(notice)
    t0 = last = time.monotonic()
    end_at = ctl.ends_at() or float("inf")
    next_tick = t0 + interval
    reason = ""
    while True:
        now = time.monotonic()
        deadline = ctl.deadline()
        if deadline is not None and next_tick < deadline <= next_tick + interval / 2:
            # a boundary just after a tick: one longer interval, not a sliver
            # printed as a second line of the same second
            next_tick = deadline
        wake = min(next_tick, end_at, deadline if deadline is not None else float("inf"))
        if stop.event.wait(min(0.25, max(0.0, max(wake, last + MIN_WAIT_S) - now))):
            reason = stop.reason
            break
        now = time.monotonic()
        at_end = now >= end_at
        if at_end:
            # the last line is read from the stopped load (the summary's
            # snapshot), so what ends in flight is unfinished in both
            reason = "time"
            break
        at_deadline = deadline is not None and now >= deadline
        between = now < next_tick and not at_deadline
        # all --events done (or a failure): the last line now, not at the next tick
        ended = between and ctl.load_ended()
        if between and not ended:
            continue
        last = now
        sample = ctl.sample()
        if sample.counted:
            # labelled with the second the load ended in: after the last line's, not the same one
            printer.interval(sample, math.ceil(sample.t) if ended else None)
        for notice in ctl.notices():
            printer.notice(notice)
        if sample.finished:
            reason = sample.reason
            break
        if at_deadline or now < next_tick:
            next_tick = now + interval  # intervals restart at each boundary
        else:
            next_tick += interval
            if next_tick < now:  # a stalled tick: no burst of catch-up lines
                next_tick = now + interval
    summary = ctl.stop(reason)
    final = ctl.final_sample()
    if final is not None and final.counted:
        # a line of its own second, unless it ends on the tick it was due at
        printer.interval(final, math.ceil(final.t - 0.05 * interval))
    for notice in ctl.notices():
        printer.notice(notice)
    return summary


def print_summary(summary: RunSummary, program: Program, options: RunOptions, out: TextIO,
                  extra: dict[str, Any] | None = None, extra_text: str = "") -> None:
    """A run's summary: sysbench's text (plus the workload's own lines) or
    one JSON object; `extra` and `extra_text` add validity and steady state."""
    if options.json:
        print(json.dumps({**summary.to_dict(), **workload_extra_fields(program, summary), **(extra or {})}),
              file=out, flush=True)
        return
    print("", file=out)
    print(summary_text(summary, options.percentile, options.histogram), file=out, flush=True)
    for line in workload_extra_lines(program, summary):
        print(line, file=out, flush=True)
    if extra_text:
        print(extra_text, file=out, flush=True)
