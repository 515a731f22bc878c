"""Reading results folders into what the report shows: one `RunData` per
folder and table rows (one per run, or one per step of a scenario)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtop.run.analysis import Validity, analyse, validity_from_settings
from benchtop.run.results import read_jsonl


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

    @property
    def label(self) -> str:
        """The name as plots and tables show it, marked when its settings are not durable."""
        if self.validity.status in ("durable", "unknown", "no database"):
            return self.name
        return f"{self.name} ({self.validity.label})"

    @property
    def is_sweep(self) -> bool:
        return len({s.get("threads") for s in self.steps}) > 1

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


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: unreadable ({exc})") from None


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


def load_run(folder: Path) -> RunData:
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a folder")
    summary = _read_json(folder / "summary.json")
    if not isinstance(summary, dict):
        raise ReportError(f"{folder}: no summary.json (not a finished benchtop results folder)")
    config = _read_json(folder / "config.json") or {}
    intervals = [iv for iv in read_jsonl(folder / "intervals.jsonl") if "tps" in iv and "t" in iv]
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
        timeline=read_jsonl(folder / "timeline.jsonl"),
        histogram=_read_json(folder / "histogram.json") or {},
        validity=_validity(summary, _read_json(folder / "target.json"), config),
        steps=steps,
        settings=_read_json(folder / "settings.json") or {},
        monitor=[r for r in read_jsonl(folder / "monitor.jsonl") if isinstance(r.get("sources"), dict)],
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


def table_rows(runs: list[RunData]) -> list[Row]:
    rows = []
    for r in runs:
        # a settings sweep's steps side by side per setting, labelled with it
        steps = [s for _, group in r.by_settings() for s in group]
        entries = [(r.step_label(s), s) for s in steps] if r.steps else [(r.name, r.summary)]
        for name, s in entries:
            validity = Validity.from_dict(s["validity"]) if s.get("validity") else r.validity
            lat = s.get("latency_ms") or {}
            ss = s.get("steady_state") or {}
            tps = _interval_tps(r, s)
            rows.append(Row(
                name=name,
                threads=s.get("threads"),
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
           "validity")


def row_cells(row: Row) -> list[str]:
    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    return [row.name, num(row.threads, "d"), num(row.rate, "g"), f"{row.tps:.2f}", num(row.tps_median, ".1f"),
            num(row.tps_p95, ".1f"), num(row.p95, ".3f"), num(row.p99, ".3f"), str(row.errors),
            num(row.stddev_pct, ".1f"), row.validity]
