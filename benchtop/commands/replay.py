"""`benchtop replay DIR [--speed N | --no-wait] [--json]`: play a results
folder's recording back: monitor snapshots (monitor.jsonl) and load
intervals (intervals.jsonl) in time order, at the recorded pace.

On a terminal, a recording with monitor snapshots opens in the TUI's
monitor screens (benchtop.screens.replay); otherwise it is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, TextIO

from benchtop.commands import subcommands_epilog
from benchtop.errors import OneLineParser as _Parser
from benchtop.errors import bounded
from benchtop.errors import UsageError as _UsageError
from benchtop.panels.headless import format_text
from benchtop.record.folder import INTERVALS, MONITOR, TIMELINE
from benchtop.record.monitor import recorded_snapshots
from benchtop.record.replay import ReplayEvent, events
from benchtop.record.workers import workers_of


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="benchtop replay", description="Play back a results folder's monitor and load recording.",
                epilog=subcommands_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--speed", type=bounded(0.001, 1e6, "a factor"), default=1.0,
                   help="playback speed factor (default 1 = as recorded)")
    p.add_argument("--no-wait", action="store_true", help="print everything at once")
    p.add_argument("--json", action="store_true", help="JSON Lines (the records as stored, plus replay_t)")
    return p




def snapshot_text(record: dict[str, Any], t: float) -> str:
    """A recorded monitor line, as `benchtop monitor --headless` printed it."""
    t_rec = float(record.get("t", 0.0))
    snaps = recorded_snapshots(record, t_rec)
    lines = format_text(snaps).splitlines()
    wall = time.strftime("%H:%M:%S", time.localtime(float(record["t"]))) if "t" in record else ""
    lines[0] = f"[ {t:.0f}s ] {wall}".rstrip()
    return "\n".join(lines)


def interval_text(r: dict[str, Any]) -> str:
    lat = r.get("latency_ms") or {}
    step = f" step {r['step'] + 1}" if "step" in r else ""
    warm = " (warm-up)" if r.get("warmup") else ""
    return (f"[ {float(r['t']):.0f}s ]{step} thds: {workers_of(r).connections if 'threads' in r else '-'} tps: {float(r.get('tps', 0)):.2f} "
            f"qps: {float(r.get('qps', 0)):.2f} lat (ms) p95 {float(lat.get('p95', 0)):.2f} "
            f"p99 {float(lat.get('p99', 0)):.2f} err/s: {float(r.get('errors_per_s', 0)):.2f}{warm}")


def play(evs: list[ReplayEvent], out: TextIO, speed: float = 1.0, wait: bool = True, as_json: bool = False,
         sleep: Callable[[float], None] = time.sleep) -> int:
    """Print each event at its time (scaled by `speed`); returns how many."""
    prev: float | None = None
    for ev in evs:
        if wait and prev is not None and ev.t > prev:
            sleep((ev.t - prev) / speed)
        prev = ev.t
        if as_json:
            print(json.dumps({**ev.record, "replay_t": round(ev.t, 3)}), file=out, flush=True)
        elif ev.kind == "snapshot":
            print(snapshot_text(ev.record, ev.t), file=out, flush=True)
        elif ev.kind == "interval":
            print(interval_text(ev.record), file=out, flush=True)
        else:
            print(f"[ {ev.t:.0f}s ] -- {ev.record.get('kind', 'event')}: {ev.record.get('text', '')}", file=out, flush=True)
    return len(evs)


def main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        args = build_parser().parse_args(argv)
    except _UsageError as exc:
        print(f"benchtop replay: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"benchtop replay: error: {folder}: not a folder", file=sys.stderr)
        return 1
    problems: list[str] = []
    evs = events(folder, problems)
    for problem in problems:
        print(f"benchtop replay: warning: {problem}", file=sys.stderr)
    if not evs:
        names = (MONITOR, INTERVALS, TIMELINE)
        there = [n for n in names if (folder / n).is_file()]
        why = (f"no readable record in {', '.join(there)} (damaged, or not written by benchtop)" if there
               else f"nothing recorded (no {', '.join(names[:-1])} or {names[-1]})")
        print(f"benchtop replay: error: {folder}: {why}", file=sys.stderr)
        return 1
    interactive = not (args.json or args.no_wait) and out is sys.stdout and sys.stdout.isatty()
    if interactive and any(ev.kind == "snapshot" for ev in evs):
        from benchtop.screens.replay import run_replay_tui

        return run_replay_tui(evs, args.speed)
    try:
        play(evs, out, args.speed, not args.no_wait, args.json)
    except KeyboardInterrupt:
        return 130
    return 0
