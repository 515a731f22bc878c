"""The headless monitor: every source polled together at a steady cadence,
a few text lines per source per poll (or one JSON Lines object with
--json), each poll also recorded when a results folder is given.  The text
is built from the TUI's views (benchtop.panels.views): the same facts in
the same units.  No TUI: textual is never imported on this path."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Callable, Iterable, Mapping, TextIO

from benchtop.panels.views import TableSpec, cell_of, filtered, fits, rows_for, sorted_rows, views_for
from benchtop.record.folder import MONITOR, ResultsWriter
from benchtop.record.monitor import MonitorRecord, ServerVerdict
from benchtop.sources.base import Missing, SourceSnapshot
from benchtop.sources.poller import SourcePoller, poll_all
from benchtop.verdict.snapshots import server_verdicts

# the summary's facts on one line each (the TUI breaks them to its width)
TEXT_WIDTH = 400


def run_headless(pollers: list[SourcePoller], out: TextIO, stop: threading.Event, interval: float,
                 count: int | None = None, as_json: bool = False, writer: ResultsWriter | None = None,
                 observe: Callable[[SourceSnapshot], None] | None = None) -> int:
    """Poll until `count` polls or `stop`, printing each poll to `out` (and
    handing each snapshot to `observe`: the metrics endpoint)."""
    restore = _sigterm_as_interrupt()
    where = {p.name: p.where for p in pollers}
    try:
        start = time.monotonic()
        n = 0
        while (count is None or n < count) and not stop.is_set():
            snaps = poll_all(pollers)
            n += 1
            if observe is not None:
                for snap in snaps:
                    observe(snap)
            verdicts = server_verdicts(snaps, os.cpu_count() or 1)
            # with two servers, one verdict would mix their signals and not say which it means
            each = tuple(ServerVerdict(name, where.get(name, ""), v) for name, v in verdicts if name) \
                if len(verdicts) > 1 else ()
            line = MonitorRecord(round(time.time(), 3), tuple(snaps), verdicts[0][1], each).to_dict()
            if writer is not None:
                writer.append(MONITOR, line)
            if as_json:
                out.write(json.dumps(line, default=str) + "\n")
            else:
                limits = [v.text() for v in each] or [verdicts[0][1].text()]
                out.write(format_text(snaps, where if each else {}) + "".join(f"\n  {t}" for t in limits) + "\n")
            out.flush()
            if count is not None and n >= count:
                break
            # Keep a steady cadence; after a long (timed-out) poll, skip the missed ticks.
            ticks = int((time.monotonic() - start) / interval) + 1
            stop.wait(max(start + ticks * interval - time.monotonic(), 0.0))
    finally:
        restore()
    return 0


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


def summary_lines(s: SourceSnapshot, width: int = TEXT_WIDTH) -> list[str]:
    """What the TUI shows of `s` in its first view, as plain text: the
    view's summary lines, then the top row of each of its tables as the
    table shows it on an 80-column screen (idle rows left out, in the
    table's own first order).  The same facts, the same units."""
    views = views_for(s.kind)
    if not views:
        return ["panels " + ", ".join(sorted(s.panels))]
    view = views[0]
    lines = [line for t in (view.summary(s, width) if view.summary else []) for line in t.plain.splitlines()]
    for spec in view.tables:
        lines += _top_row(spec, s, missing=True)
    # a view that only matters when it has rows (who blocks whom) says so under the first
    for other in views[1:]:
        if other.in_text_when_rows:
            for spec in other.tables:
                lines += _top_row(spec, s, missing=False)
    return [line for line in lines if line.strip()]


def _top_row(spec: TableSpec, s: SourceSnapshot, missing: bool) -> list[str]:
    """The table's title and its top row as the table shows it at 80 columns
    (idle rows left out, in its first order); the Missing's text when
    `missing`; nothing when it has no row."""
    rows = rows_for(spec, s)
    if isinstance(rows, Missing):
        return [f"{spec.title}: ✗ {rows.what}" + (f" — {rows.hint}" if rows.hint else "")] if missing else []
    shown = sorted_rows(filtered(rows, spec, "", False), spec.sort, spec.descending, spec.later)
    if not shown:
        return []
    # as the TUI's table: a column no row has (CPU% for a remote server) is left out, not a '-'
    cells = [cell_of(c, shown[0]) for c in spec.cols if fits(c, 80) and any(c.key in r for r in rows)]
    more = f" (+{len(shown) - 1} more)" if len(shown) > 1 and not missing else ""
    return [f"{spec.title}{more}: " + "  ".join(str(c).strip() for c in cells if str(c).strip())]


def format_text(snaps: Iterable[SourceSnapshot], where: Mapping[str, str] | None = None) -> str:
    """A poll under a timestamp: each source's name (and its server's
    host:port from `where`, given when several servers are watched), poll
    time and summary lines (summary_lines), the first beside the name, the
    others under it."""
    snaps = list(snaps)
    where = where or {}
    names = {s.name: f"{s.name} {where.get(s.name, '')}".rstrip() for s in snaps}
    width = max((len(n) for n in names.values()), default=4)
    lines = [time.strftime("%H:%M:%S")]
    for s in snaps:
        body = summary_lines(s) if s.ok else [f"DOWN: {s.error}"]
        head = f"  {names[s.name]:<{width}} {s.poll_ms:6.1f}ms  "
        lines.append(head + (body[0] if body else ""))
        lines.extend(" " * len(head) + line for line in body[1:])
    return "\n".join(lines)
