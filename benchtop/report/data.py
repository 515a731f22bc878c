"""Reading results folders into what the report shows: one `RunData` per
folder and table rows (one per run, or one per step of a scenario)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtop.record.analysis import Validity, analyse, validity_from_settings
from benchtop.record.costs import RunCosts
from benchtop.record.folder import (
    HISTOGRAM,
    INTERVALS,
    SETTINGS,
    SUMMARY,
    TARGET,
    FolderReader,
    UnreadableFile,
    figure_problem,
)
from benchtop.record.workers import workers_of
from benchtop.verdict.stretch import stretch_verdict


class ReportError(Exception):
    """A folder cannot be reported on; one line."""


@dataclass(slots=True)
class RunData:
    folder: Path
    name: str
    summary: dict[str, Any]
    config: dict[str, Any]
    intervals: list[dict[str, Any]]
    timeline: list[dict[str, Any]]
    histogram: dict[str, Any]
    validity: Validity
    steps: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)  # settings.json: {"server": {...}, "host": {...}}
    monitor: list[dict[str, Any]] = field(default_factory=list)  # monitor.jsonl snapshots
    problems: list[str] = field(default_factory=list)  # FILE:LINE of what could not be read, left out
    # no readable summary.json: the run was killed (or its disk filled) before the end, and `summary` is
    # unfinished_summary()'s.  Not summary.json's `unfinished`: that counts the transactions a run that
    # ended as it should left in flight (cut short by its end, not counted)
    unfinished: bool = False

    @property
    def label(self) -> str:
        """The name as plots and tables show it, marked when its settings are not durable."""
        name = f"{self.name} (unfinished)" if self.unfinished else self.name
        if self.validity.status in ("durable", "unknown", "no database"):
            return name
        return f"{name} ({self.validity.label})"

    @property
    def costs(self) -> RunCosts:
        """What the run cost, as its summary.json says (an old folder's too)."""
        return RunCosts.from_dict(self.summary)

    @property
    def is_sweep(self) -> bool:
        return len({workers_of(s).connections for s in self.steps}) > 1

    def step_label(self, s: dict[str, Any]) -> str:
        """`run #3 [sync_binlog=1]`: a step named by its place and the server settings it ran with."""
        return f"{self.label} #{s['index'] + 1}" + (f" [{settings_text(s)}]" if s.get("settings") else "")

    def by_settings(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """The steps grouped by the settings they ran with (in first-seen order)."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for s in self.steps:
            groups.setdefault(settings_text(s), []).append(s)
        return list(groups.items())

    def measured(self, step: int | None = None) -> list[dict[str, Any]]:
        """Intervals after the warm-up (of one step, if given)."""
        return [iv for iv in self.intervals if not iv.get("warmup") and (step is None or iv.get("step") == step)]


def settings_text(step: dict[str, Any]) -> str:
    """>>> settings_text({"settings": {"sync_binlog": 0, "innodb_buffer_pool_size": "1G"}})
    'sync_binlog=0, innodb_buffer_pool_size=1G'
    """
    return ", ".join(f"{k}={v}" for k, v in (step.get("settings") or {}).items())


def _checked_summary(path: Path, summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """The summary, or one line naming what in it no run could have written."""
    if summary is None:
        return None
    for part in [summary, *(s for s in summary.get("steps") or [] if isinstance(s, dict))]:
        problem = figure_problem(part)
        if problem:
            raise ReportError(f"{path}: {problem} (a damaged or edited file: fix or remove it)")
    return summary


def _intervals(results: FolderReader) -> list[dict[str, Any]]:
    """The interval lines that can be shown; each other one named by FILE:LINE and left out."""
    path, problems, out = results.path(INTERVALS), results.problems, []
    for n, iv in results.lines(INTERVALS):
        if "tps" not in iv or "t" not in iv:
            continue
        problem = figure_problem(iv)
        if problem:
            problems.append(f"{path}:{n}: {problem}, left out")
        else:
            out.append(iv)
    return out


def _validity(summary: dict[str, Any], target: Any, config: dict[str, Any]) -> Validity:
    if summary.get("validity"):
        return Validity.from_dict(summary["validity"])
    if isinstance(target, dict):
        if target.get("validity"):
            return Validity.from_dict(target["validity"])
        settings = target.get("settings")
        kind = target.get("kind") or config.get("engine", "")
        if isinstance(settings, dict):
            return validity_from_settings(str(kind), settings)
    engine = config.get("engine") or (config.get("run") or {}).get("engine")
    if engine in ("sqlite", "null"):
        return validity_from_settings(engine, {})
    return Validity("unknown", ("no settings recorded",))


def unfinished_summary(intervals: list[dict[str, Any]]) -> dict[str, Any]:
    """What a run that never wrote summary.json measured, from its interval
    lines: transactions, TPS, the worst interval's percentiles (the whole
    run's histogram is not there), marked unfinished.

    >>> s = unfinished_summary([{"t": 1, "tps": 10, "threads": 2, "latency_ms": {"p95": 2, "p99": 3}},
    ...                         {"t": 2, "tps": 30, "threads": 2, "latency_ms": {"p95": 4, "p99": 5}}])
    >>> s["transactions"], s["tps"], s["latency_ms"]
    (40, 20.0, {'p95': 4.0, 'p99': 5.0})
    """
    measured = [iv for iv in intervals if not iv.get("warmup")] or intervals
    prev_t = 0.0
    transactions = 0.0
    for iv in measured:
        transactions += float(iv["tps"]) * max(0.0, float(iv["t"]) - prev_t)
        prev_t = float(iv["t"])
    time_s = float(measured[-1]["t"]) if measured else 0.0
    worst = {k: max(float((iv.get("latency_ms") or {}).get(k, 0.0)) for iv in measured) for k in ("p95", "p99")}
    return {
        "stopped_by": "unfinished: no summary.json (the run was killed or its disk filled); figures from its "
                      "interval lines, percentiles the worst interval's",
        "time_s": time_s,
        **(workers_of(measured[-1]).to_dict() if measured else {"threads": None}),
        "transactions": round(transactions),
        "tps": round(transactions / time_s, 2) if time_s else 0.0,
        "latency_ms": worst,
        "errors": 0,
    }


def load_run(folder: Path) -> RunData:
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a folder")
    try:
        return _load_run(FolderReader(folder))
    except UnreadableFile as exc:
        raise ReportError(str(exc)) from None


def _load_run(results: FolderReader) -> RunData:
    folder, problems = results.folder, results.problems
    try:
        summary = results.summary()
    except UnreadableFile as exc:  # torn by a full disk: the interval lines still tell what was measured
        problems.append(f"{exc}, left out")
        summary = None
    summary = _checked_summary(results.path(SUMMARY), summary)
    config = results.config()
    intervals = _intervals(results)
    unfinished = not isinstance(summary, dict)
    if not isinstance(summary, dict):
        if not intervals:
            raise ReportError(f"{folder}: no {SUMMARY} and no intervals (not a benchtop results folder)")
        summary = unfinished_summary(intervals)
    if "steady_state" not in summary:
        summary.update(analyse(intervals))
    # a plain run's summary has one step without an index: that is the run itself
    steps = [s for s in summary.get("steps") or [] if isinstance(s, dict) and "index" in s]
    return RunData(
        folder=folder,
        name=folder.resolve().name,
        summary=summary,
        config=config,
        intervals=intervals,
        timeline=results.timeline(),
        histogram=results.object(HISTOGRAM) or {},
        validity=_validity(summary, results.object(TARGET), config),
        steps=steps,
        settings=results.object(SETTINGS) or {},
        monitor=results.monitor(),
        problems=problems,
        unfinished=unfinished,
    )


def load_runs(folders: list[Path]) -> list[RunData]:
    runs = [load_run(f) for f in folders]
    names: dict[str, int] = {}
    for r in runs:  # two folders with one name (a/run, b/run) keep apart
        names[r.name] = names.get(r.name, 0) + 1
        if names[r.name] > 1:
            r.name = f"{r.name}-{names[r.name]}"
    return runs


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    threads: int | None
    rate: float | None
    tps: float
    p95: float | None
    p99: float | None
    errors: int
    validity: str  # Validity.label
    validity_ok: bool
    stddev_pct: float | None = None
    tps_median: float | None = None  # of the per-interval TPS (Callaghan's ipsAvg / ipsP95)
    tps_p95: float | None = None
    limit: str | None = None  # the verdict of its steady stretch: `locks 92%`


def table_rows(runs: list[RunData]) -> list[Row]:
    rows = []
    for r in runs:
        # a settings sweep's steps side by side per setting, labelled with it
        steps = [s for _, group in r.by_settings() for s in group]
        entries = ([(r.step_label(s), s) for s in steps] if r.steps
                   else [(r.name + (" (unfinished)" if r.unfinished else ""), r.summary)])
        for name, s in entries:
            validity = Validity.from_dict(s["validity"]) if s.get("validity") else r.validity
            lat = s.get("latency_ms") or {}
            ss = s.get("steady_state") or {}
            tps = _interval_tps(r, s)
            rows.append(Row(
                name=name,
                # a sweep's steps by the connections they ran; a run by its threads
                threads=workers_of(s).connections if r.steps else s.get("threads"),
                rate=s.get("rate") or None,
                tps=float(s.get("tps", 0.0)),
                p95=lat.get("p95"),
                p99=lat.get("p99"),
                errors=int(s.get("errors", 0)),
                validity=validity.label,
                validity_ok=validity.status in ("durable", "no database"),
                stddev_pct=round(100 * ss["cv"], 1) if ss.get("samples", 0) > 1 and "cv" in ss else None,
                tps_median=_quantile(tps, 0.5) if tps else None,
                tps_p95=_quantile(tps, 0.95) if tps else None,
                limit=_limit_cell(run_verdict(r, s)),
            ))
    return rows


def _interval_tps(r: RunData, step: dict[str, Any]) -> list[float]:
    index = step.get("index") if r.steps else None
    return [float(iv["tps"]) for iv in r.measured(index) if not iv.get("paused")]


def _quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile.

    >>> _quantile([10.0, 20.0, 30.0, 40.0], 0.5), _quantile([float(v) for v in range(1, 101)], 0.95)
    (20.0, 95.0)
    """
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered))))
    return ordered[rank - 1]


COLUMNS = ("name", "threads", "rate", "tps", "ips med", "ips p95", "p95 ms", "p99 ms", "errors", "tps sd %",
           "limit", "validity")


def row_cells(row: Row) -> list[str]:
    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    return [row.name, num(row.threads, "d"), num(row.rate, "g"), f"{row.tps:.2f}", num(row.tps_median, ".1f"),
            num(row.tps_p95, ".1f"), num(row.p95, ".3f"), num(row.p99, ".3f"), str(row.errors),
            num(row.stddev_pct, ".1f"), row.limit or "-", row.validity]


def run_verdict(r: RunData, s: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The verdict of a run's (or step's) steady stretch, from summary.json,
    else from its interval lines (a run killed before its summary)."""
    s = r.summary if s is None else s
    v = (s.get("steady_state") or {}).get("verdict")
    if isinstance(v, dict):
        return v
    return stretch_verdict(r.intervals) if s is r.summary else None


def _limit_cell(v: dict[str, Any] | None) -> str | None:
    if not v:
        return None
    return f"{v.get('limit')} {100 * float(v.get('share') or 0):.0f}%"


OP_COLUMNS = ("name", "operation", "count", "p50 ms", "p95 ms", "p99 ms", "max ms")


def op_rows(runs: list[RunData]) -> list[list[str]]:
    """Latency per operation (fileio's read, write, fsync) of the runs that
    measured it apart, one row per run and operation."""
    rows = []
    for r in runs:
        for op, v in (r.summary.get("op_latency_ms") or {}).items():
            rows.append([r.name, op, f"{v.get('count', 0):.0f}", *(f"{v.get(k, 0.0):.3f}" for k in ("p50", "p95", "p99", "max"))])
    return rows
