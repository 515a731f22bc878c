"""The two header lines: what runs where, for how long, and every knob."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from benchtop.screens.widgets.fmt import clock, num


@dataclass(frozen=True, slots=True)
class HeaderState:
    target: str
    workload: str
    elapsed: float
    remaining: float | None
    threads: int
    rate: float  # target, 0 = unlimited
    achieved_tps: float
    errors: int
    reconnects: int
    paused: bool
    status: str = ""  # "", "run finished", "stopping…"


def header_text(s: HeaderState) -> Text:
    """
    >>> print(header_text(HeaderState("sqlite:///tmp/x.db", "oltp_read_only", 65, 55, 8, 0, 1234.5, 0, 2, True)).plain)
    benchtop  1:05 elapsed, 0:55 left  oltp_read_only  sqlite:///tmp/x.db
    ‖ PAUSED  threads: 8  rate: unlimited (1.23k tps)  errors: 0  reconnects: 2
    """
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("benchtop", "bold")
    left = "no time limit" if s.remaining is None else f"{clock(s.remaining)} left"
    # the target goes last: it is the longest part and the one to cut
    t.append(f"  {clock(s.elapsed)} elapsed, {left}  ")
    t.append(s.workload, "bold")
    t.append(f"  {s.target}")
    t.append("\n")
    # flags first: a narrow terminal cuts the end of the line, never these
    if s.status:
        t.append(f"■ {s.status.upper()}", "bold reverse")
        t.append("  ")
    elif s.paused:
        t.append("‖ PAUSED", "bold reverse yellow")
        t.append("  ")
    t.append(f"threads: {s.threads}", "bold")
    if s.rate > 0:
        t.append(f"  rate: {num(s.rate)}/s target, {num(s.achieved_tps)}/s achieved")
    else:
        t.append(f"  rate: unlimited ({num(s.achieved_tps)} tps)")
    t.append(f"  errors: {s.errors}", "bold red" if s.errors else "")
    t.append(f"  reconnects: {s.reconnects}", "bold yellow" if s.reconnects else "")
    return t


class RunHeader(Static):
    DEFAULT_CSS = """
    RunHeader { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def show(self, state: HeaderState) -> None:
        self.update(header_text(state))
