"""Live metrics in the Prometheus / OpenMetrics text format (`--metrics-listen`):
a run's counters and latency histogram, and the monitor's figures, served by
prometheus-client from values the run loop has already read, so a scrape
never waits on the engine or a server.  See docs/metrics.md."""

from benchtop.metrics.endpoint import MetricsEndpoint, served, served_monitor
from benchtop.metrics.run_metrics import MeteredController, RunMetrics

__all__ = ["MeteredController", "MetricsEndpoint", "RunMetrics", "served", "served_monitor"]
