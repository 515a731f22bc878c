"""The benchmark dashboard's compact top line of the target: per server, the
statement costing most, the top wait and the checkpoint age, so the load and
the server's reaction stay on one screen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.widget import Widget

from benchtop.panels.units import mib_s, ms_per_s, msec, pct, per_s
from benchtop.screens.widgets.fmt import crop
from benchtop.sources.base import Missing, SourceSnapshot
from benchtop.sources.fields import (
    ACTIVITY,
    CLIENT_STATES,
    DIGEST_TOP,
    INNODB,
    LOCKS,
    POOL_WAIT,
    TOP_STATEMENTS,
    WAITS,
    WAIT_EVENTS,
    WAL_BYTES_PER_S,
    InnoDBPanel,
)


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# the panels this line reads, per kind: one that is Missing is named with its fix, not left out silently
_READS: Mapping[str, tuple[str, ...]] = {
    "mysql": (WAITS, INNODB, LOCKS, TOP_STATEMENTS),
    "postgresql": (WAIT_EVENTS, ACTIVITY, TOP_STATEMENTS),
    "pgbouncer": (CLIENT_STATES,),
    "proxysql": (POOL_WAIT, DIGEST_TOP),
}


def _missing(snap: SourceSnapshot) -> Missing | None:
    return next((v for k in _READS.get(snap.kind, ()) if isinstance(v := snap.panels.get(k), Missing)), None)


def top_line(snap: SourceSnapshot) -> Text | None:
    """One line for a source, None for a kind with nothing to say here.

    >>> snap = SourceSnapshot("db", "mysql", 0.0, True, panels={
    ...     "top_statements": [{"query": "SELECT c FROM sbtest1 WHERE id = ?", "calls_per_s": 1200.0,
    ...                         "avg_ms": 0.25, "total_ms_per_s": 300.0}],
    ...     "waits": [{"event": "wait/io/file/innodb/innodb_data_file", "ms_per_s": 3.5}],
    ...     "innodb": {"checkpoint_age_pct": 12.5}})
    >>> top_line(snap).plain
    'db  wait innodb_data_file 3.5ms/s  ckpt age 12.5%  top 1.20k/s avg 250µs SELECT c FROM sbtest1 WHERE id = ?'
    """
    p = snap.panels
    parts: list[tuple[str, str]] = []
    if snap.kind == "mysql":
        waits = _list(p.get(WAITS))
        if waits:
            event = str(waits[0].get("event", "")).rsplit("/", 1)[-1]
            parts.append(("wait", f"{event} {ms_per_s(waits[0].get('ms_per_s'))}"))
        inn = InnoDBPanel.of(p)
        age = inn.checkpoint_age_pct if inn is not None else None
        if age is not None:
            parts.append(("ckpt age", pct(age)))
        locks = _list(p.get(LOCKS))
        if locks:
            parts.append(("lock waits", str(len(locks))))
    elif snap.kind == "postgresql":
        waits = _list(p.get(WAIT_EVENTS))
        if waits:
            parts.append(("wait", f"{waits[0].get('type')}:{waits[0].get('event')} ×{waits[0].get('count')}"))
        parts.append(("WAL", mib_s(p.get(WAL_BYTES_PER_S))))
        blocked = [r for r in _list(p.get(ACTIVITY)) if r.get("blocked_by")]
        if blocked:
            parts.append(("blocked", str(len(blocked))))
    elif snap.kind == "pgbouncer":
        cl = _map(p.get(CLIENT_STATES))
        parts.append(("clients waiting", str(cl.get("waiting", "-"))))
    elif snap.kind == "proxysql":
        parts.append(("time in proxy", pct(_map(p.get(POOL_WAIT)).get("proxy_time_pct"))))
    missing = _missing(snap)
    if missing is not None:
        parts.append(("✗", f"{missing.what} — {missing.hint}" if missing.hint else missing.what))
    top = _list(p.get(TOP_STATEMENTS)) or _list(p.get(DIGEST_TOP))
    if top:
        s = max(top, key=lambda r: r.get("total_ms_per_s", r.get("time_ms_per_s")) or 0)
        query = str(s.get("query") or s.get("digest_text") or "")
        avg = s.get("avg_ms", s.get("mean_ms"))
        if avg is None and s.get("avg_us") is not None:
            avg = s["avg_us"] / 1000.0
        rate = s.get("calls_per_s", s.get("count_per_s"))
        # last: the statement text is what the width cuts
        if s.get("sampled"):
            parts.append(("top", f"~{s.get('sessions_running')} running {query}"))
        else:
            parts.append(("top", f"{per_s(rate)} avg {msec(avg)} {query}"))
    if not parts:
        return None
    line = Text(snap.name, "bold")
    for label, value in parts:
        line.append(f"  {label} ", "dim")
        line.append(value)
    return line


class TargetTopLine(Widget):
    """A line per polled server, in the tabs' order whichever answers first;
    hidden until one has something to show."""

    DEFAULT_CSS = """
    TargetTopLine { height: auto; max-height: 3; display: none; }
    TargetTopLine.has-data { display: block; }
    """

    def __init__(self, order: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._order = list(order)
        self._lines: dict[str, Text] = {}

    def polled(self, snap: SourceSnapshot) -> None:
        line = top_line(snap)
        if line is None:
            self._lines.pop(snap.name, None)
        else:
            self._lines[snap.name] = line
        self.set_class(bool(self._lines), "has-data")
        self.refresh(layout=True)

    def render(self) -> Text:
        rank = {name: i for i, name in enumerate(self._order)}
        names = sorted(self._lines, key=lambda n: rank.get(n, len(rank)))
        return crop(Text("\n").join([self._lines[n] for n in names][:3]), self.size.width or 80)
