"""The timeline of changes: the symbol each kind gets on the charts' time
axis, and the list that explains them."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

from benchtop.record.samples import TimelineEvent
from benchtop.screens.widgets.chart import Marker
from benchtop.screens.widgets.fmt import clock, crop

SYMBOLS = {
    "threads": "T",
    "rate": "R",
    "pause": "‖",
    "resume": "▶",
    "mark": "M",
    "instrumentation": "I",
    "outage": "!",
    "note": "N",
    "host": "H",
}


def symbol(kind: str) -> str:
    return SYMBOLS.get(kind, "•")


def markers(events: Sequence[TimelineEvent], interval_ends: Sequence[float]) -> list[Marker]:
    """Each event at the index of the interval it happened in.

    >>> from benchtop.record.samples import TimelineEvent as E
    >>> markers([E(t=0.5, kind="mark", text=""), E(t=2.5, kind="threads", text="")], [1.0, 2.0, 3.0])
    [Marker(index=0, symbol='M'), Marker(index=2, symbol='T')]
    """
    import bisect

    out = []
    for ev in events:
        i = bisect.bisect_left(interval_ends, ev.t)
        out.append(Marker(min(i, max(len(interval_ends) - 1, 0)), symbol(ev.kind)))
    return out


HINT = "(no changes yet: + - * / r ] [ space m)"
SHORT_HINT = "(no changes yet)"


def timeline_text(events: Sequence[TimelineEvent], rows: int, width: int = 80) -> Text:
    """The newest `rows` events, oldest first.

    >>> from benchtop.record.samples import TimelineEvent as E
    >>> print(timeline_text([E(t=5, kind="threads", text="threads 16"), E(t=70, kind="mark", text="mark 1")], 5).plain)
    timeline
    T 0:05 threads 16
    M 1:10 mark 1
    """
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("timeline", "bold")
    shown = list(events)[-max(rows - 1, 0) :] if rows > 1 else []
    if not events:
        t.append("\n" + (HINT if len(HINT) <= width else SHORT_HINT), "dim")
    for ev in shown:
        t.append("\n")
        t.append(symbol(ev.kind), "bold reverse")
        t.append(f" {clock(ev.t)} {ev.text}")
    return t


def timeline_line(events: Sequence[TimelineEvent], width: int) -> Text:
    """The timeline on one line for a strip under the charts: the newest
    events that fit whole, oldest first.

    >>> from benchtop.record.samples import TimelineEvent as E
    >>> evs = [E(t=5, kind="threads", text="threads 16"), E(t=70, kind="mark", text="mark 1")]
    >>> print(timeline_line(evs, 80).plain)
    timeline  T 0:05 threads 16  M 1:10 mark 1
    >>> print(timeline_line(evs, 30).plain)
    timeline  M 1:10 mark 1
    """
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("timeline", "bold")
    if not events:
        hint = HINT if len(HINT) + 10 <= width else SHORT_HINT
        t.append("  " + hint, "dim")
        return t
    room = width - len("timeline")
    kept: list[TimelineEvent] = []
    for ev in reversed(list(events)):
        need = 2 + 2 + len(clock(ev.t)) + 1 + len(ev.text)
        if need > room:
            break
        kept.append(ev)
        room -= need
    for ev in reversed(kept):
        t.append("  ")
        t.append(symbol(ev.kind), "bold reverse")
        t.append(f" {clock(ev.t)} {ev.text}")
    return t


class TimelineList(Widget):
    DEFAULT_CSS = """
    TimelineList { height: 1fr; min-height: 2; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._events: tuple[TimelineEvent, ...] = ()

    def show(self, events: Sequence[TimelineEvent]) -> None:
        self._events = tuple(events)
        self.refresh()

    def render(self) -> Text:
        return crop(timeline_text(self._events, self.size.height, self.size.width), self.size.width)
