"""`--stop-if` guardrails: conditions that end a run gracefully and say why.

Grammar (one condition per --stop-if, or per item of a scenario step's
`stop_if` list):

    METRIC OP VALUE[UNIT] [for DURATION]

    p99>50ms for 10s     latency percentile of the interval (p50, p95, p99, p99.9 / p999, max, avg)
    tps<100 for 30s      transactions (or qps) per second
    errors>1%            errors per transaction over the interval (errors>5 = errors per second)
    pool_wait>1s         PgBouncer: the longest a client has waited for a server connection
    replica_lag>10s      PostgreSQL: the largest replay lag of a streaming replica
    checkpoint_age>80%   InnoDB: checkpoint age as a share of the redo log capacity

Engine metrics are read from each interval (`check(iv)`); the last three come
from the monitor sources, fed with `observe(snapshot)`.  A condition without
`for` fires on the first interval where it holds; with `for`, once it has
held without a break for that long.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from benchtop.record.samples import IntervalStats
from benchtop.sources.fields import POOLS, REPLICATION, InnoDBPanel

GRAMMAR = ("expected METRIC OP VALUE [for DURATION], e.g. 'p99>50ms for 10s', 'tps<100 for 30s', "
           "'errors>1%', 'pool_wait>1s', 'replica_lag>10s', 'checkpoint_age>80%'")

_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "min": 60e3}  # -> milliseconds
_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}  # -> seconds
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
}

# source-fed metric -> (source kind that provides it, what to attach)
SOURCE_METRICS = {
    "pool_wait": ("pgbouncer", "PgBouncer stats: add --pgbouncer DSN"),
    "replica_lag": ("postgresql", "a monitored PostgreSQL primary: --engine postgres without --no-monitor"),
    "checkpoint_age": ("mysql", "a monitored MySQL/MariaDB target: --engine mysql without --no-monitor"),
}

_SPEC = re.compile(
    r"^\s*(?P<metric>[a-z_][a-z0-9_.]*)\s*(?P<op>>=|<=|>|<)\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[a-z%]*)"
    r"(?:\s+for\s+(?P<dur>\d+(?:\.\d+)?)\s*(?P<dunit>[a-z]*))?\s*$",
    re.IGNORECASE,
)
_PCT = re.compile(r"^p(\d+(?:\.\d+)?)$")


class GuardError(ValueError):
    """A condition that cannot be parsed or attached; the message is one line."""


def _percentile(metric: str) -> float | None:
    """'p99' -> 99.0, 'p999' and 'p99.9' -> 99.9, anything else None.

    >>> _percentile("p50"), _percentile("p999"), _percentile("p99.99"), _percentile("tps")
    (50.0, 99.9, 99.99, None)
    """
    m = _PCT.match(metric)
    if not m:
        return None
    digits = m.group(1)
    if len(digits) > 2 and digits.startswith("99") and "." not in digits:
        return float(f"99.{digits[2:]}")  # p999 = 99.9, as results files name it
    return float(digits)


@dataclass(frozen=True, slots=True)
class Condition:
    text: str  # as the user wrote it, normalised
    metric: str
    op: str
    threshold: float  # ms for times, percent for %, plain otherwise
    unit: str  # "ms", "%", "/s" or ""
    for_s: float

    @property
    def source_kind(self) -> str | None:
        entry = SOURCE_METRICS.get(self.metric)
        return entry[0] if entry else None

    def holds(self, value: float | None) -> bool:
        return value is not None and not math.isnan(value) and _OPS[self.op](value, self.threshold)

    def describe_value(self, value: float) -> str:
        if self.unit == "ms":
            return f"{value:.3g} ms" if value < 1000 else f"{value / 1000:.3g} s"
        if self.unit == "%":
            return f"{value:.3g}%" if math.isfinite(value) else "all failed"
        return f"{value:.0f}/s" if value >= 100 else f"{value:.3g}/s"


def parse_condition(spec: str) -> Condition:
    """One condition, or GuardError saying what is wrong.

    >>> c = parse_condition("p99>50ms for 10s")
    >>> c.metric, c.op, c.threshold, c.unit, c.for_s
    ('p99', '>', 50.0, 'ms', 10.0)
    >>> parse_condition("errors>1%").unit
    '%'
    >>> parse_condition("pool_wait>1s").threshold
    1000.0
    """
    if not isinstance(spec, str):
        raise GuardError(f"--stop-if {spec!r}: {GRAMMAR}")
    m = _SPEC.match(spec)
    if not m:
        raise GuardError(f"--stop-if {spec!r}: {GRAMMAR}")
    metric, op = m.group("metric").lower(), m.group("op")
    value, unit = float(m.group("value")), m.group("unit").lower()
    for_s = 0.0
    if m.group("dur") is not None:
        dunit = (m.group("dunit") or "s").lower()
        if dunit not in _DURATION_UNITS:
            raise GuardError(f"--stop-if {spec!r}: unknown duration unit {dunit!r} (use ms, s, m or h)")
        for_s = float(m.group("dur")) * _DURATION_UNITS[dunit]

    def bad_unit(expected: str) -> GuardError:
        return GuardError(f"--stop-if {spec!r}: {metric} takes {expected}, not {unit or 'a bare number'!r}")

    pct = _percentile(metric)
    if pct is not None or metric in ("max", "avg", "pool_wait", "replica_lag"):
        if pct is not None and not 0 < pct <= 100:
            raise GuardError(f"--stop-if {spec!r}: percentile must be between 0 and 100")
        if unit not in _TIME_UNITS:
            raise bad_unit("a time such as 50ms or 1s")
        value, unit = value * _TIME_UNITS[unit], "ms"
    elif metric in ("tps", "qps"):
        if unit not in ("", "/s"):
            raise bad_unit("a number per second such as 100")
        unit = "/s"
    elif metric == "errors":
        if unit not in ("", "%", "/s"):
            raise bad_unit("a share such as 1% or a number per second")
        unit = "%" if unit == "%" else "/s"
    elif metric == "checkpoint_age":
        if unit != "%":
            raise bad_unit("a percentage such as 80%")
    else:
        raise GuardError(f"--stop-if {spec!r}: unknown metric {metric!r}; {GRAMMAR}")
    text = " ".join(spec.split())
    return Condition(text=text, metric=metric, op=op, threshold=value, unit=unit, for_s=for_s)


def interval_value(c: Condition, iv: IntervalStats) -> float | None:
    """The condition's metric over one interval (None: not measurable)."""
    p = _percentile(c.metric)
    if p is not None:
        return iv.latency.percentile_ns(p) / 1e6 if iv.transactions else None
    if c.metric == "max":
        return iv.latency.max_ns() / 1e6 if iv.transactions else None
    if c.metric == "avg":
        return iv.latency_ms.get("avg") if iv.transactions else None
    if c.metric == "tps":
        return None if iv.paused else iv.tps
    if c.metric == "qps":
        return None if iv.paused else iv.qps
    if c.metric == "errors":
        errors = sum(v for k, v in iv.errors.items() if k != "fatal")
        if c.unit == "/s":
            return iv.errors_per_s
        if iv.transactions:
            return 100.0 * errors / iv.transactions
        return math.inf if errors else None
    return None


def snapshot_value(metric: str, snap: Any) -> float | None:
    """A source-fed metric from one SourceSnapshot (None: not in it)."""
    if not getattr(snap, "ok", False):
        return None
    if metric == "pool_wait" and snap.kind == "pgbouncer":
        pools = snap.panel(POOLS) or []
        waits = [
            (p.get("maxwait") or 0) * 1000.0 + (p.get("maxwait_us") or 0) / 1000.0
            for p in pools
            if isinstance(p, dict) and p.get("database") != "pgbouncer"
        ]
        return max(waits, default=0.0)
    if metric == "replica_lag" and snap.kind == "postgresql":
        rows = snap.panel(REPLICATION)
        if not isinstance(rows, list):
            return None
        lags = [float(r["replay_lag_s"]) for r in rows if isinstance(r, dict) and r.get("replay_lag_s") is not None]
        return max(lags) * 1000.0 if lags else 0.0
    if metric == "checkpoint_age" and snap.kind == "mysql":
        inn = InnoDBPanel.of(snap.panels)
        return inn.checkpoint_age_pct if inn is not None else None
    return None


class Guard:
    """A set of conditions; `check(iv)` once per interval returns the reason
    to stop (or None)."""

    def __init__(self, conditions: Iterable[Condition]) -> None:
        self.conditions = tuple(conditions)
        self._since: dict[int, float] = {}  # condition index -> start of the current streak (run time)
        self._observed: dict[str, float | None] = {}

    @classmethod
    def parse(cls, specs: Iterable[str], sources: Iterable[str] | None = ()) -> "Guard":
        """Parse every spec. `sources` are the kinds of the sources attached
        to the run: a condition no source can feed fails here, with the
        option to add.  Pass None to defer that check to `attach()`."""
        if isinstance(specs, str):
            specs = [specs]
        guard = cls(parse_condition(s) for s in specs)
        if sources is not None:
            guard.attach(sources)
        return guard

    @property
    def needs_sources(self) -> tuple[str, ...]:
        return tuple(sorted({c.source_kind for c in self.conditions if c.source_kind}))

    def attach(self, source_kinds: Iterable[str]) -> None:
        kinds = set(source_kinds)
        for c in self.conditions:
            if c.source_kind and c.source_kind not in kinds:
                raise GuardError(f"--stop-if {c.text!r} needs {SOURCE_METRICS[c.metric][1]}")

    def observe(self, snap: Any) -> None:
        """Feed a source snapshot; the latest value of each metric is kept."""
        for c in self.conditions:
            if c.source_kind and getattr(snap, "kind", None) == c.source_kind:
                self._observed[c.metric] = snapshot_value(c.metric, snap)

    def reset(self) -> None:
        """Forget streaks (a scenario step starts afresh)."""
        self._since.clear()

    def check(self, iv: IntervalStats) -> str | None:
        start = iv.t - iv.dt
        for i, c in enumerate(self.conditions):
            value = self._observed.get(c.metric) if c.source_kind else interval_value(c, iv)
            if not c.holds(value):
                self._since.pop(i, None)
                continue
            since = self._since.setdefault(i, start)
            held = iv.t - since
            # intervals drift by a few ms: do not make `for 10s` wait for an 11th second
            if held + 0.05 * iv.dt >= c.for_s:
                assert value is not None
                return f"{c.text} ({c.metric} was {c.describe_value(value)})"
        return None
