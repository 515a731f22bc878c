"""Reading a results folder's recording back: monitor snapshots
(monitor.jsonl), load intervals (intervals.jsonl) and the timeline, in time
order on one clock, for `benchtop replay` (printed or in the TUI)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchtop.run.results import read_jsonl
from benchtop.sources.base import Missing, SourceSnapshot, panel_from_json

_META = {"kind", "ok", "poll_ms", "error", "interval_s"}


@dataclass(frozen=True, slots=True)
class ReplayEvent:
    t: float  # seconds from the start of the recording
    kind: str  # "snapshot" | "interval" | "event"
    record: dict[str, Any]


def events(folder: Path) -> list[ReplayEvent]:
    """Everything recorded in `folder`, in time order, on one clock: run
    seconds when the run's start is known, else from the first snapshot."""
    snaps = [r for r in read_jsonl(folder / "monitor.jsonl") if isinstance(r.get("sources"), dict)]
    intervals = [r for r in read_jsonl(folder / "intervals.jsonl") if "t" in r]
    timeline = [r for r in read_jsonl(folder / "timeline.jsonl") if "t" in r]
    started_at = None
    try:
        started_at = json.loads((folder / "summary.json").read_text()).get("started_at")
    except (OSError, ValueError, AttributeError):
        pass
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
