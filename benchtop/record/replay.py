"""Reading a results folder's recording back: monitor snapshots
(monitor.jsonl), load intervals (intervals.jsonl) and the timeline, in time
order on one clock, for `benchtop replay` (printed or in the TUI)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from benchtop.record.folder import read_jsonl_lines
from benchtop.sources.base import Missing, SourceSnapshot, panel_from_json

_META = {"kind", "ok", "poll_ms", "error", "interval_s"}


@dataclass(frozen=True, slots=True)
class ReplayEvent:
    t: float  # seconds from the start of the recording
    kind: str  # "snapshot" | "interval" | "event"
    record: dict[str, Any]


def _timed(path: Path, problems: list[str] | None, keep: Callable[[dict[str, Any]], bool],
           run_t: bool = False) -> list[dict[str, Any]]:
    """The records of one recording file that `keep` accepts and whose time
    (`run_t` if asked and there, else `t`) is a number; the others are named
    (FILE:LINE) in `problems`."""
    out = []
    for n, r in read_jsonl_lines(path, problems):
        if not keep(r):
            continue
        t = r["run_t"] if run_t and "run_t" in r else r.get("t")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            if problems is not None:
                problems.append(f"{path}:{n}: no time (t is {json.dumps(t)[:20]}), left out")
            continue
        out.append(r)
    return out


def events(folder: Path, problems: list[str] | None = None) -> list[ReplayEvent]:
    """Everything recorded in `folder`, in time order, on one clock: run
    seconds when the run's start is known, else from the first snapshot.
    Lines that are not records, or have no time, are named in `problems`."""
    snaps = _timed(folder / "monitor.jsonl", problems, lambda r: isinstance(r.get("sources"), dict), run_t=True)
    intervals = _timed(folder / "intervals.jsonl", problems, lambda r: "t" in r)
    timeline = _timed(folder / "timeline.jsonl", problems, lambda r: "t" in r)
    started_at = None
    try:
        started_at = json.loads((folder / "summary.json").read_text()).get("started_at")
    except (OSError, ValueError, AttributeError):
        pass
    if isinstance(started_at, bool) or not isinstance(started_at, (int, float)):
        started_at = None
    if started_at is None and snaps and not intervals:
        started_at = float(snaps[0].get("t", 0.0))
    out = []
    for r in snaps:
        if "run_t" in r:
            t = float(r["run_t"])
        elif started_at is not None:
            t = float(r.get("t", started_at)) - float(started_at)
        else:
            continue  # a load recording without its start: snapshots cannot be placed
        out.append(ReplayEvent(t, "snapshot", r))
    out += [ReplayEvent(float(r["t"]), "interval", r) for r in intervals]
    out += [ReplayEvent(float(r["t"]), "event", r) for r in timeline]
    order = {"event": 0, "interval": 1, "snapshot": 2}
    out.sort(key=lambda e: (e.t, order[e.kind]))
    return out


def snapshot_from_dict(name: str, t: float, d: dict[str, Any]) -> SourceSnapshot:
    """The inverse of SourceSnapshot.to_dict (a panel that was Missing stays one)."""
    panels = {}
    kind = str(d.get("kind", "?"))
    for key, value in d.items():
        if key in _META:
            continue
        if isinstance(value, dict) and set(value) == {"missing", "hint"}:
            value = Missing(value["missing"], value["hint"])
        panels[panel_from_json(kind, key)] = value
    return SourceSnapshot(name=name, kind=str(d.get("kind", "?")), t=t, ok=bool(d.get("ok", True)),
                          poll_ms=float(d.get("poll_ms", 0.0)), error=d.get("error"),
                          interval_s=d.get("interval_s"), panels=panels)
