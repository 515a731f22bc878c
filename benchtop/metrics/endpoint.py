"""The HTTP endpoint: prometheus-client's own server on a registry of our
collectors, started on `--metrics-listen HOST:PORT` and kept up for
`--metrics-linger` seconds after the run so the last scrape sees the totals."""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.registry import Collector

from benchtop.errors import UsageError
from benchtop.metrics.monitor_metrics import MonitorMetrics
from benchtop.metrics.run_metrics import MeteredController, RunMetrics
from benchtop.run.headless import StopFlag
from benchtop.run.options import RunOptions, parse_listen
from benchtop.run.protocol import Controller
from benchtop.sources.base import SourceSnapshot


class MetricsEndpoint:
    """Serves the collectors given on HOST:PORT from a daemon thread until
    `close()`; a port that cannot be bound is a one-line UsageError."""

    def __init__(self, listen: str, collectors: list[Collector]) -> None:
        self.host, self.port = parse_listen(listen)
        self.registry = CollectorRegistry(auto_describe=False)
        for c in collectors:
            self.registry.register(c)
        try:
            self._server: Any
            self._server, self._thread = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as exc:
            raise UsageError(f"--metrics-listen {listen}: cannot listen there: {exc.strerror or exc}") from None
        self._closed = threading.Event()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self, linger_s: float = 0.0, interrupted: Callable[[], bool] = lambda: False) -> None:
        """Keeps serving `linger_s` seconds (the last values), then stops;
        `interrupted()` true (a Ctrl-C) ends the wait at once."""
        if self._closed.is_set():
            return
        end = time.monotonic() + linger_s
        while time.monotonic() < end and not interrupted():
            self._closed.wait(min(0.1, max(0.0, end - time.monotonic())))
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=2)


@contextmanager
def served(opts: RunOptions, ctl: Controller, txn_names: Sequence[str] = (),
           stop: StopFlag | None = None) -> Iterator[Controller]:
    """The controller to run: `ctl` itself without --metrics-listen, else
    one that feeds an endpoint serving until the block ends and then
    `--metrics-linger` seconds more (a Ctrl-C cuts that short)."""
    if not opts.metrics_listen:
        yield ctl
        return
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
    metrics = MonitorMetrics()
    endpoint = MetricsEndpoint(listen, [metrics])
    print(f"metrics: {endpoint.url}", file=sys.stderr, flush=True)
    try:
        yield metrics.observe
    finally:
        endpoint.close(linger_s, stop.is_set)
