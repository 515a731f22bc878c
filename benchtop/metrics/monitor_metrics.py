"""The monitor's figures as gauges: every source's newest snapshot, read at
scrape time from what the pollers already fetched (a scrape never queries a
server).

A panel that is a mapping of numbers becomes one family,
`benchtop_<kind>_<panel>{source, field}` (checkpoints, WAL, InnoDB, global
rates, ...).  Panels that are rows become one family per numeric column,
labelled by the row's identifying columns, only for the panels whose rows
are few and stable (pools, hostgroups, databases, replicas): sessions,
statements and process lists would make a series per query text.  The
families' names are declared in benchtop/metrics/names.py, not derived
from the panels' keys."""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily, Metric

from benchtop.metrics.names import PANEL_FAMILIES, ROW_FAMILIES
from benchtop.sources.base import SourceSnapshot

ROW_LABELS = ("database", "user", "hostgroup", "srv_host", "srv_port", "host", "port", "pool_mode",
              "application_name", "client_addr", "state", "name")


def _column_name(stem: str, column: str) -> str:
    """The family of one column of a panel of rows (the column as the
    server names it, made a metric name).

    >>> _column_name("benchtop_pgbouncer_pools", "cl_waiting")
    'benchtop_pgbouncer_pools_cl_waiting'
    >>> _column_name("benchtop_proxysql_connection_pool", "Queries %")
    'benchtop_proxysql_connection_pool_queries'
    """
    raw = f"{stem}_{column}".lower()
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", raw)).strip("_")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class MonitorMetrics:
    """A collector of the newest snapshot of each source; `observe()` from
    the poll loop (or a poller's tap)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, SourceSnapshot] = {}

    def observe(self, snap: SourceSnapshot) -> None:
        with self._lock:
            self._latest[snap.name] = snap

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snaps = list(self._latest.values())
        up = GaugeMetricFamily("benchtop_monitor_up", "1 when the source's last poll answered", labels=["source", "kind"])
        cost = GaugeMetricFamily("benchtop_monitor_poll_seconds", "What the last poll cost (its own time)",
                                 labels=["source", "kind"])
        families: dict[str, GaugeMetricFamily] = {}
        labels_of: dict[str, list[str]] = {}
        for s in snaps:
            up.add_metric([s.name, s.kind], float(s.ok))
            cost.add_metric([s.name, s.kind], s.poll_ms / 1000.0)
            for panel, value in s.panels.items():
                self._panel(families, labels_of, s, panel, value)
        yield up
        yield cost
        yield from families.values()

    def _panel(self, families: dict[str, GaugeMetricFamily], labels_of: dict[str, list[str]], s: SourceSnapshot,
               panel: str, value: Any) -> None:
        if isinstance(value, Mapping):
            name = PANEL_FAMILIES.get((s.kind, panel))
            if name is None:
                return
            for field, v in value.items():
                n = _number(v)
                if n is not None:
                    fam = families.setdefault(name, GaugeMetricFamily(name, f"{s.kind} monitor panel {panel}",
                                                                      labels=["source", "field"]))
                    fam.add_metric([s.name, str(field)], n)
            return
        stem = ROW_FAMILIES.get((s.kind, panel))
        if stem is None or not isinstance(value, list):
            return
        for row in value:
            if not isinstance(row, Mapping):
                continue
            keys = [k for k in ROW_LABELS if isinstance(row.get(k), (str, int)) and not isinstance(row.get(k), bool)]
            for field, v in row.items():
                n = _number(v)
                if n is None or field in keys:
                    continue
                name = _column_name(stem, str(field))
                labels = ["source", *keys]
                if name not in families:
                    families[name] = GaugeMetricFamily(name, f"{s.kind} {panel}: {field}", labels=labels)
                    labels_of[name] = labels
                elif labels_of[name] != labels:
                    continue  # rows of one panel carry the same columns; a stray one is left out
                families[name].add_metric([s.name, *(str(row[k]) for k in keys)], n)
