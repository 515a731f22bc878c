"""The monitor's history: the main rates of each source kind over the last
minutes (dolphie's graphs), kept from every poll.  `Metric` says what to
read from a snapshot's panels and how to print it; `History` is the ring of
values a monitor pane charts (widgets/history.py)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchtop.panels.units import mib_s, num, pct
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import (
    CACHE_HIT_RATIO,
    CLIENT_STATES,
    CONNECTION_POOL,
    CPU,
    DATABASE,
    DISK,
    GLOBAL_RATES,
    SESSIONS,
    STATS,
    STATUS_RATES,
    THREADS,
    WAL_BYTES_PER_S,
    InnoDBPanel,
)

KEEP_POLLS = 600  # 10 minutes at the default 1 s, 20 at 2 s


def _path(*keys: str, scale: float = 1.0) -> Callable[[Mapping[str, Any]], float | None]:
    def get(panels: Mapping[str, Any]) -> float | None:
        v: Any = panels
        for k in keys:
            v = v.get(k) if isinstance(v, Mapping) else None
        return float(v) * scale if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    return get


def _innodb(name: str) -> Callable[[Mapping[str, Any]], float | None]:
    def get(panels: Mapping[str, Any]) -> float | None:
        inn = InnoDBPanel.of(panels)
        v = getattr(inn, name) if inn is not None else None
        return float(v) if isinstance(v, (int, float)) else None

    return get


def _pgbouncer_xact(panels: Mapping[str, Any]) -> float | None:
    stats = panels.get(STATS)
    if not isinstance(stats, list):
        return None
    return float(sum(s.get("xact_per_s") or 0 for s in stats if isinstance(s, Mapping)))


def _proxysql_conn_used(panels: Mapping[str, Any]) -> float | None:
    """Backend connections in use over every hostgroup and server (ConnPool's ConnUsed)."""
    pool = panels.get(CONNECTION_POOL)
    if not isinstance(pool, list):
        return None
    used = [r.get("ConnUsed") for r in pool if isinstance(r, Mapping)]
    return float(sum(u for u in used if isinstance(u, (int, float)))) if used else None


def _cpu_busy(panels: Mapping[str, Any]) -> float | None:
    cpu = panels.get(CPU)
    if not isinstance(cpu, Mapping) or cpu.get("user_pct") is None:
        return None
    return float((cpu.get("user_pct") or 0) + (cpu.get("system_pct") or 0) + (cpu.get("iowait_pct") or 0))


def _rate(v: float) -> str:
    return f"{num(v)}/s"


@dataclass(frozen=True, slots=True)
class Metric:
    label: str
    get: Callable[[Mapping[str, Any]], float | None]
    fmt: Callable[[float], str] = num  # the latest value in the chart's title
    axis_unit: str = ""  # what the y axis counts in, when not the value itself (bytes: MiB/s)
    axis_scale: float = 1.0  # value -> axis unit


_MIB = 1 / 2**20


METRICS: Mapping[str, tuple[Metric, ...]] = {
    "mysql": (
        Metric("queries", _path(STATUS_RATES, "questions_per_s"), _rate),
        Metric("commits", _path(STATUS_RATES, "commits_per_s"), _rate),
        Metric("redo written", _innodb("redo_bytes_per_s"), mib_s, "MiB/s", _MIB),
        Metric("checkpoint age", _innodb("checkpoint_age_pct"), pct, "% of redo"),
        Metric("threads running", _path(THREADS, "running")),
    ),
    "postgresql": (
        Metric("commits", _path(DATABASE, "commits_per_s"), _rate),
        Metric("WAL written", _path(WAL_BYTES_PER_S), mib_s, "MiB/s", _MIB),
        Metric("active sessions", _path(SESSIONS, "active")),
        Metric("cache hit", _path(CACHE_HIT_RATIO, "interval", scale=100.0), pct, "%"),
        Metric("rows changed", lambda p: sum(v for v in (_path(DATABASE, k)(p) for k in (
            "tup_inserted_per_s", "tup_updated_per_s", "tup_deleted_per_s")) if v is not None) or None, _rate),
    ),
    "pgbouncer": (
        Metric("transactions", _pgbouncer_xact, _rate),
        Metric("clients waiting", _path(CLIENT_STATES, "waiting")),
        Metric("clients active", _path(CLIENT_STATES, "active")),
    ),
    "proxysql": (
        Metric("queries", _path(GLOBAL_RATES, "Questions"), _rate),
        Metric("connections in use", _proxysql_conn_used),  # to the backends (ConnPool)
        Metric("pool get failures", _path(GLOBAL_RATES, "ConnPool_get_conn_failure"), _rate),
    ),
    "os": (
        Metric("CPU busy", _cpu_busy, pct, "%"),
        Metric("disk written", _path(DISK, "write_kb_per_s", scale=1024.0), mib_s, "MiB/s", _MIB),
        Metric("disk read", _path(DISK, "read_kb_per_s", scale=1024.0), mib_s, "MiB/s", _MIB),
    ),
}


class History:
    """The last `keep` polls' values of each metric, one per poll; a value
    a poll could not read repeats the one before (a chart has no gaps), and
    the polls before the first value read (a rate needs two polls) take that
    first value, not a zero that would read as a drop and set the minimum.

    >>> h = History(METRICS["postgresql"][:1], keep=3)
    >>> for c in (10, None, 30, 40):
    ...     h.add(SourceSnapshot("pg", "postgresql", 0.0, True, panels={"database": {"commits_per_s": c}}))
    >>> h.values("commits"), len(h)
    ((10.0, 30.0, 40.0), 3)
    >>> h = History(METRICS["postgresql"][:1])
    >>> for c in (None, None, 25):
    ...     h.add(SourceSnapshot("pg", "postgresql", 0.0, True, panels={"database": {"commits_per_s": c}}))
    >>> h.values("commits")
    (25.0, 25.0, 25.0)
    """

    def __init__(self, metrics: Sequence[Metric], keep: int = KEEP_POLLS) -> None:
        self.metrics = tuple(metrics)
        self._values: dict[str, deque[float]] = {m.label: deque(maxlen=keep) for m in self.metrics}
        self._times: deque[float] = deque(maxlen=keep)
        self._unread: dict[str, bool] = {m.label: True for m in self.metrics}  # no value read yet

    def add(self, snap: SourceSnapshot) -> None:
        self._times.append(snap.t)
        for m in self.metrics:
            ring = self._values[m.label]
            v = m.get(snap.panels)
            if v is None or math.isnan(v):
                ring.append(ring[-1] if ring else 0.0)
                continue
            if self._unread[m.label]:
                self._unread[m.label] = False
                for i in range(len(ring)):  # the placeholders before it
                    ring[i] = v
            ring.append(v)

    def values(self, label: str) -> tuple[float, ...]:
        return tuple(self._values[label])

    def __len__(self) -> int:
        return len(self._times)

    @property
    def span_s(self) -> float:
        return self._times[-1] - self._times[0] if len(self._times) > 1 else 0.0

    @property
    def step_s(self) -> float:
        """Seconds per value (the poll interval, measured)."""
        return self.span_s / (len(self._times) - 1) if len(self._times) > 1 else 1.0


def metrics_for(kind: str) -> tuple[Metric, ...]:
    return METRICS.get(kind, ())
