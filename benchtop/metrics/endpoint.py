"""The HTTP endpoint: prometheus-client's own server on a registry of our
collectors, started on `--metrics-listen HOST:PORT` and kept up for
`--metrics-linger` seconds after the run so the last scrape sees the totals."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.registry import Collector

from benchtop.errors import UsageError
from benchtop.options.run_options import parse_listen


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
