"""`--metrics-listen` around a run or the monitor.  prometheus-client and
the collectors are imported only when an endpoint is asked for: importing
them costs ~0.1 s of CPU, which every run without an endpoint (most) paid at
start and which the client-CPU-per-transaction figure of a short run counts."""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from benchtop.options.run_options import RunOptions
from benchtop.record.controller import Controller
from benchtop.sources.base import SourceSnapshot
from benchtop.stopping import StopFlag


@contextmanager
def served(opts: RunOptions, ctl: Controller, txn_names: Sequence[str] = (),
           stop: StopFlag | None = None) -> Iterator[Controller]:
    """The controller to run: `ctl` itself without --metrics-listen, else
    one that feeds an endpoint serving until the block ends and then
    `--metrics-linger` seconds more (a Ctrl-C cuts that short)."""
    if not opts.metrics_listen:
        yield ctl
        return
    from benchtop.metrics.endpoint import MetricsEndpoint
    from benchtop.metrics.run_metrics import MeteredController, RunMetrics

    metrics = RunMetrics(opts.engine, ctl.workload, ctl.target, txn_names)
    endpoint = MetricsEndpoint(opts.metrics_listen, [metrics])
    print(f"metrics: {endpoint.url}", file=sys.stderr, flush=True)
    signalled = stop.event.is_set if stop is not None else (lambda: False)
    try:
        yield MeteredController(ctl, metrics)
    finally:
        ended_by_signal = signalled()
        hurried = threading.Event()
        if stop is not None:
            stop.on_hurry(hurried.set)
        if opts.metrics_linger_s > 0:
            print(f"metrics: the final values stay at {endpoint.url} for {opts.metrics_linger_s:g} s (Ctrl-C ends it)",
                  file=sys.stderr, flush=True)
        endpoint.close(opts.metrics_linger_s,
                       lambda: hurried.is_set() or (not ended_by_signal and signalled()))


@contextmanager
def served_monitor(listen: str | None, linger_s: float,
                   stop: threading.Event) -> Iterator[Callable[[SourceSnapshot], None] | None]:
    """`benchtop monitor --metrics-listen`: what to hand each snapshot (None
    without an endpoint); the endpoint serves until the block ends, then
    `linger_s` more unless `stop` is set."""
    if not listen:
        yield None
        return
    from benchtop.metrics.endpoint import MetricsEndpoint
    from benchtop.metrics.monitor_metrics import MonitorMetrics

    metrics = MonitorMetrics()
    endpoint = MetricsEndpoint(listen, [metrics])
    print(f"metrics: {endpoint.url}", file=sys.stderr, flush=True)
    try:
        yield metrics.observe
    finally:
        endpoint.close(linger_s, stop.is_set)
