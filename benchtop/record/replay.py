"""Reading a results folder's recording back: monitor snapshots
(monitor.jsonl), load intervals (intervals.jsonl) and the timeline, in time
order on one clock, for `benchtop replay` (printed or in the TUI)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from benchtop.record.folder import INTERVALS, MONITOR, SUMMARY, TIMELINE, FolderReader, UnreadableFile, figure_problem, read_object
from benchtop.record.monitor import is_monitor_record


@dataclass(frozen=True, slots=True)
class ReplayEvent:
    t: float  # seconds from the start of the recording
    kind: str  # "snapshot" | "interval" | "event"
    record: dict[str, Any]


def _timed(results: FolderReader, name: str, keep: Callable[[dict[str, Any]], bool],
           run_t: bool = False, figures: bool = False) -> list[dict[str, Any]]:
    """The records of one recording file that `keep` accepts and whose time
    (`run_t` if asked and there, else `t`) is a number, and (`figures`) whose
    figures are numbers a run could measure; the others are named (FILE:LINE)
    in the reader's problems."""
    out = []
    for n, r in results.lines(name):
        if not keep(r):
            continue
        t = r["run_t"] if run_t and "run_t" in r else r.get("t")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            results.problems.append(f"{results.path(name)}:{n}: no time (t is {json.dumps(t)[:20]}), left out")
            continue
        problem = figure_problem(r) if figures else None
        if problem:
            results.problems.append(f"{results.path(name)}:{n}: {problem}, left out")
            continue
        out.append(r)
    return out


def events(folder: Path, problems: list[str] | None = None) -> list[ReplayEvent]:
    """Everything recorded in `folder`, in time order, on one clock: run
    seconds when the run's start is known, else from the first snapshot.
    Lines that are not records, or have no time, are named in `problems`."""
    results = FolderReader(folder, problems)
    snaps = _timed(results, MONITOR, is_monitor_record, run_t=True)
    intervals = _timed(results, INTERVALS, lambda r: "t" in r, figures=True)
    timeline = _timed(results, TIMELINE, lambda r: "t" in r)
    started_at = None
    try:  # the start only places snapshots: a summary that is not there or not readable says nothing
        started_at = (read_object(results.path(SUMMARY)) or {}).get("started_at")
    except UnreadableFile:
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
