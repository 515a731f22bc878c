"""Live metrics in the Prometheus / OpenMetrics text format (`--metrics-listen`):
a run's counters and latency histogram, and the monitor's figures, served by
prometheus-client from values the run loop has already read, so a scrape
never waits on the engine or a server.  See docs/metrics.md.

The endpoint and the collectors are loaded on first use (PEP 562): a run
without --metrics-listen does not import prometheus-client at all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchtop.metrics.serving import served, served_monitor

if TYPE_CHECKING:
    from benchtop.metrics.endpoint import MetricsEndpoint
    from benchtop.metrics.run_metrics import MeteredController, RunMetrics

__all__ = ["MeteredController", "MetricsEndpoint", "RunMetrics", "served", "served_monitor"]

_LAZY = {"MetricsEndpoint": "benchtop.metrics.endpoint", "MeteredController": "benchtop.metrics.run_metrics",
         "RunMetrics": "benchtop.metrics.run_metrics"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
