"""The two header lines: what runs where, for how long, and every knob."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from benchtop.screens.widgets.fmt import clock, fit, middle
from benchtop.panels.units import num
from benchtop.record.workers import Workers


@dataclass(frozen=True, slots=True)
class HeaderState:
    target: str
    workload: str
    elapsed: float
    remaining: float | None
    workers: Workers  # the knob: threads, or connections on event-loop threads
    rate: float  # target, 0 = unlimited
    achieved_tps: float
    errors: int
    reconnects: int
    paused: bool
    status: str = ""  # "", "run finished", "stopping…"
    connected: int = -1  # workers holding a connection at the last interval's end (-1: not known)
    refused: int = 0  # connection attempts the server refused, over the run


def header_text(s: HeaderState, width: int = 200) -> Text:
    """Two lines in `width` cells: nothing is cut but the target, which is
    shortened in the middle; the knobs that do not fit are left out from
    the end (reconnects, then errors).

    >>> print(header_text(HeaderState("sqlite:///tmp/x.db", "oltp_read_only", 65, 55, Workers(8), 0, 1234.5, 0, 2,
    ...                               True)).plain)
    benchtop  1:05 elapsed, 0:55 left  oltp_read_only  sqlite:///tmp/x.db
    ‖ PAUSED  threads: 8  rate: unlimited (1.23k tps)  errors: 0  reconnects: 2
    >>> h = HeaderState("postgresql://sbtest@db-primary.example.com:5432/sbtest", "oltp_read_write",
    ...                 5, None, Workers(16), 2000, 1999.5, 0, 0, True)
    >>> print(header_text(h, 78).plain)
    benchtop  0:05 elapsed, no time limit  oltp_read_write  postgresql:…432/sbtest
    ‖ PAUSED  threads: 16  rate: 2.00k/s target, 2.00k/s achieved  errors: 0
    >>> h = HeaderState("mysql://sbtest@db:3306/sbtest", "oltp_point_select", 5, 5, Workers(16), 0, 900, 0, 0, False,
    ...                 connected=9, refused=214)
    >>> print(header_text(h, 100).plain.splitlines()[1])
    threads: 9/16 connected  refused: 214  rate: unlimited (900 tps)  errors: 0  reconnects: 0
    >>> h = HeaderState("postgresql://sbtest@pgbouncer:6432/sbtest", "tpcb_select_only", 5, 5, Workers(2000, 4), 0,
    ...                 9000, 0, 0, False, connected=2000)
    >>> print(header_text(h, 100).plain.splitlines()[1])
    connections: 2000 on 4 threads  rate: unlimited (9.00k tps)  errors: 0  reconnects: 0
    """
    width = max(width, 20)
    t = Text(no_wrap=True, overflow="crop")
    t.append("benchtop", "bold")
    left = "no time limit" if s.remaining is None else f"{clock(s.remaining)} left"
    times = f"  {clock(s.elapsed)} elapsed, {left}  "
    t.append(times)
    t.append(s.workload, "bold")
    room = width - len("benchtop") - len(times) - len(s.workload) - 2
    if room >= 8:
        t.append(f"  {middle(s.target, room)}")
    t.append("\n")
    # flags first: a narrow terminal leaves out the end of the line, never these
    items: list[tuple[str, str]] = []
    if s.status:
        items.append((f"■ {s.status.upper()}", "bold reverse"))
    elif s.paused:
        items.append(("‖ PAUSED", "bold reverse yellow"))
    # fewer workers connected than asked (max_connections, a password changed)
    # is said where the thread count is, with the refusals next to it
    items.append((s.workers.header(s.connected), "bold red" if 0 <= s.connected < s.workers.connections else "bold"))
    if s.refused:
        items.append((f"refused: {s.refused}", "bold red"))
    if s.rate > 0:
        items.append((f"rate: {num(s.rate)}/s target, {num(s.achieved_tps)}/s achieved", ""))
    else:
        items.append((f"rate: unlimited ({num(s.achieved_tps)} tps)", ""))
    items.append((f"errors: {s.errors}", "bold red" if s.errors else ""))
    items.append((f"reconnects: {s.reconnects}", "bold yellow" if s.reconnects else ""))
    for k, (text, style) in enumerate(fit(items, width)):
        if k:
            t.append("  ")
        t.append(text, style)
    return t


class RunHeader(Static):
    DEFAULT_CSS = """
    RunHeader { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._state: HeaderState | None = None

    def show(self, state: HeaderState) -> None:
        self._state = state
        self.update(header_text(state, self.content_size.width or 200))

    def on_resize(self) -> None:
        if self._state is not None:
            self.show(self._state)
