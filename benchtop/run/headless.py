"""The headless run loop: sample on each report tick, print sysbench-style
lines or JSON Lines, stop on time/events/signal/failure, print the summary.
Never imports textual."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any, Callable, TextIO

from benchtop.run.formats import interval_line, summary_text
from benchtop.run.controller import RunController
from benchtop.run.samples import IntervalStats, RunSummary


class StopFlag:
    """Set by SIGINT/SIGTERM; the loop ends the run cleanly on its next tick."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason = ""

    def set(self, reason: str) -> None:
        if not self.event.is_set():
            self.reason = reason
            self.event.set()

    def install(self) -> None:
        def handler(signum: int, _frame: object) -> None:
            self.set(f"signal {signal.Signals(signum).name}")

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, handler)
            except ValueError:  # not the main thread (e.g. under a test runner)
                pass


def _emit(ctl: RunController, iv: IntervalStats, out: TextIO) -> None:
    cfg = ctl.cfg
    if cfg.json:
        d = iv.to_dict()
        d["t"] = round(iv.t - ctl.t_offset, 3)
        print(json.dumps(d), file=out, flush=True)
    else:
        print(interval_line(iv, cfg.percentile, ctl.t_offset), file=out, flush=True)


def run_headless(ctl: RunController, out: TextIO = sys.stdout, stop: StopFlag | None = None,
                 after: Callable[[RunSummary], tuple[dict[str, Any], str]] | None = None) -> RunSummary:
    """Runs until the time or event limit, a signal, the controller's
    --stop-if guard or a fatal error; returns the summary (also printed).
    `after` adds fields to the JSON summary and lines to the text one
    (validity, steady state)."""
    cfg = ctl.cfg
    stop = stop or StopFlag()
    interval = cfg.report_interval if cfg.report_interval > 0 else 1.0
    if not cfg.json:
        rate = f", rate {cfg.rate:g}/s ({cfg.arrival} arrivals)" if cfg.rate > 0 else ""
        print(f"benchtop {ctl.label}: {cfg.threads} thread(s){rate}, --rand-type={cfg.rand_type}", file=out)
        if cfg.warmup_s > 0:
            print(f"Warming up for {cfg.warmup_s:g} seconds...", file=out)
        print("", file=out, flush=True)
    ctl.start()
    t0 = time.monotonic()
    end_at = t0 + cfg.time_s + cfg.warmup_s if cfg.time_s > 0 else float("inf")
    next_tick = t0 + interval
    reason = ""
    while True:
        now = time.monotonic()
        if stop.event.wait(min(0.25, max(0.0, min(next_tick, end_at) - now))):
            reason = stop.reason
            break
        now = time.monotonic()
        at_end = now >= end_at
        if at_end and next_tick > end_at + 0.05 * interval:
            reason = "time"
            break
        if now < next_tick and not at_end:
            continue
        next_tick += interval
        if next_tick < now:  # a stalled tick: no burst of catch-up lines
            next_tick = now + interval
        iv = ctl.sample()
        if cfg.report_interval > 0 and ctl.history and ctl.history[-1] is iv:
            _emit(ctl, iv, out)
        if ctl.stop_reason:
            reason = ctl.stop_reason
            break
        if at_end:
            reason = "time"
            break
        if ctl.finished:
            failed = ctl.failed_error
            reason = f"error: {failed}" if failed else ("events" if cfg.events else "time")
            break
    summary = ctl.stop(reason)
    extra, extra_text = after(summary) if after is not None else ({}, "")
    from benchtop.workload import workload_extra_fields, workload_extra_lines

    if cfg.json:
        print(json.dumps({**summary.to_dict(), **workload_extra_fields(ctl.program, summary), **extra}),
              file=out, flush=True)
    else:
        print("", file=out)
        print(summary_text(summary, cfg.percentile, cfg.histogram), file=out, flush=True)
        for line in workload_extra_lines(ctl.program, summary):
            print(line, file=out, flush=True)
        if extra_text:
            print(extra_text, file=out, flush=True)
    return summary
