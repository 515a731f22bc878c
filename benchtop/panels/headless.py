"""The headless monitor: every source polled together at a steady cadence,
one text line per source per poll (or one JSON Lines object with --json),
each poll also recorded when a results folder is given.  No TUI: textual is
never imported on this path."""

from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any, Callable, Iterable, TextIO

from benchtop.run.results import ResultsWriter
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import InnoDBPanel
from benchtop.sources.poller import SourcePoller, poll_all


def run_headless(pollers: list[SourcePoller], out: TextIO, stop: threading.Event, interval: float,
                 count: int | None = None, as_json: bool = False, writer: ResultsWriter | None = None,
                 observe: Callable[[SourceSnapshot], None] | None = None) -> int:
    """Poll until `count` polls or `stop`, printing each poll to `out` (and
    handing each snapshot to `observe`: the metrics endpoint)."""
    restore = _sigterm_as_interrupt()
    try:
        start = time.monotonic()
        n = 0
        while (count is None or n < count) and not stop.is_set():
            snaps = poll_all(pollers)
            n += 1
            if observe is not None:
                for snap in snaps:
                    observe(snap)
            line = snapshot_line(snaps)
            if writer is not None:
                writer.append("monitor.jsonl", line)
            if as_json:
                out.write(json.dumps(line, default=str) + "\n")
            else:
                out.write(format_text(snaps) + "\n")
            out.flush()
            if count is not None and n >= count:
                break
            # Keep a steady cadence; after a long (timed-out) poll, skip the missed ticks.
            ticks = int((time.monotonic() - start) / interval) + 1
            stop.wait(max(start + ticks * interval - time.monotonic(), 0.0))
    finally:
        restore()
    return 0


def snapshot_line(snaps: Iterable[SourceSnapshot]) -> dict[str, Any]:
    """The JSON Lines object for one poll of every source."""
    return {"type": "snapshot", "t": round(time.time(), 3), "sources": {s.name: s.to_dict() for s in snaps}}


def _sigterm_as_interrupt() -> Callable[[], None]:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: the caller handles signals
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def _fmt(value: Any, spec: str = ".0f", unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        return f"{value:{spec}}{unit}"
    return str(value)


def _summary(s: SourceSnapshot) -> str:
    p = s.panel
    if s.kind == "mysql":
        threads, rates = p("threads", {}), p("status_rates", {})
        inn = InnoDBPanel.of(s.panels) or InnoDBPanel()
        waits = p("waits", [])
        top = f" top wait {waits[0]['event']} {waits[0]['ms_per_s']:.1f}ms/s" if waits else ""
        return (
            f"threads {_fmt(threads.get('running'))}/{_fmt(threads.get('connected'))}"
            f" qps {_fmt(rates.get('questions_per_s'))} commit/s {_fmt(rates.get('commits_per_s'))}"
            f" redo {_fmt(inn.redo_bytes_per_s)}B/s ckpt age {_fmt(inn.checkpoint_age_pct, '.1f', '%')}"
            f" dirty {_fmt(inn.dirty_pages_pct, '.1f', '%')}{top}"
            + _lists_summary(p("processlist", []), "time_s", p("top_statements", []))
        )
    if s.kind == "postgresql":
        sessions, db, ck = p("sessions", {}), p("database", {}), p("checkpoints", {})
        hit = p("cache_hit_ratio", {})
        return (
            f"active {_fmt(sessions.get('active', 0))}/{_fmt(sessions.get('total'))}"
            f" commit/s {_fmt(db.get('commits_per_s'))} wal {_fmt(p('wal_bytes_per_s'))}B/s"
            f" hit {_fmt(hit.get('interval'), '.4f')} ckpt timed/req {_fmt(ck.get('timed'))}/{_fmt(ck.get('requested'))}"
            + _lists_summary([r for r in p("activity", []) if r.get("state") == "active"], "query_age_s",
                             p("top_statements", []))
        )
    if s.kind == "pgbouncer":
        cl, sv, stats = p("client_states", {}), p("server_states", {}), p("stats", [])
        xact = sum(v.get("xact_per_s") or 0 for v in stats)
        waits = [v.get("avg_wait_time_us") for v in stats if v.get("avg_wait_time_us") is not None]
        return (
            f"clients active {_fmt(cl.get('active'))} waiting {_fmt(cl.get('waiting'))}"
            f" servers active {_fmt(sv.get('active'))} idle {_fmt(sv.get('idle'))}"
            f" xact/s {_fmt(xact)} wait/xact {_fmt(max(waits) if waits else None, '.0f', 'us')}"
        )
    if s.kind == "os":
        cpu, disk = p("cpu", {}), p("disk", {})
        return (
            f"cpu usr {_fmt(cpu.get('user_pct'), '.1f')}% sys {_fmt(cpu.get('system_pct'), '.1f')}%"
            f" iowait {_fmt(cpu.get('iowait_pct'), '.1f')}% disk r/w {_fmt(disk.get('read_kb_per_s'))}/"
            f"{_fmt(disk.get('write_kb_per_s'))} KB/s cs/s {_fmt(p('context_switches_per_s'))}"
        )
    return "panels " + ", ".join(sorted(s.panels))


def _lists_summary(sessions: list[dict[str, Any]], age_key: str, top: list[dict[str, Any]]) -> str:
    """The longest running statement and the one costing most in the interval, cut short.

    >>> _lists_summary([{"time_s": 42.0, "query": "SELECT SLEEP(60)"}, {"time_s": 1.0, "query": None}], "time_s",
    ...                [{"total_ms_per_s": 812.5, "query": "SELECT c FROM sbtest1 WHERE id=?"}])
    ' longest 42s SELECT SLEEP(60) | top 812ms/s SELECT c FROM sbtest1 WHERE id=?'
    """
    out = ""
    running = [r for r in sessions if r.get("query") and isinstance(r.get(age_key), (int, float))]
    if running:
        longest = max(running, key=lambda r: r[age_key])
        out += f" longest {longest[age_key]:.0f}s {str(longest['query'])[:48]}"
    if top:
        out += (" |" if out else "") + f" top {_fmt(top[0].get('total_ms_per_s'))}ms/s {str(top[0].get('query'))[:48]}"
    return out


def format_text(snaps: Iterable[SourceSnapshot]) -> str:
    """One line per source for a poll, under a timestamp."""
    snaps = list(snaps)
    width = max((len(s.name) for s in snaps), default=4)
    lines = [time.strftime("%H:%M:%S")]
    for s in snaps:
        body = _summary(s) if s.ok else f"DOWN: {s.error}"
        lines.append(f"  {s.name:<{width}} {s.poll_ms:6.1f}ms  {body}")
    return "\n".join(lines)
