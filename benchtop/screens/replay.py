"""`benchtop replay DIR` in the TUI: the recorded monitor snapshots are fed
to the monitor screens through pollers that read the recording instead of a
server, at the recorded pace."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from benchtop.record.monitor import snapshot_from_dict
from benchtop.record.replay import ReplayEvent
from benchtop.sources.base import SourceSnapshot


class ReplayPoller:
    """A poller for one recorded source: each poll() waits until the next
    recorded snapshot is due (scaled by `speed`) and returns it; after the
    last one it keeps returning it."""

    def __init__(self, name: str, items: list[tuple[float, dict[str, Any]]], speed: float, start: float) -> None:
        self.name = name
        self.where = ""  # a recording keeps the sources' names, not their addresses
        self.interval = 0.1
        self._items = items
        self._speed = speed
        self._start = start
        self._i = 0
        self._last: SourceSnapshot | None = None

    def poll(self) -> SourceSnapshot:
        if self._i < len(self._items):
            t, d = self._items[self._i]
            due = self._start + t / self._speed
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, 1.0))
                if time.monotonic() < due and self._last is not None:
                    return self._last
            self._i += 1
            self._last = snapshot_from_dict(self.name, t, d)
        assert self._last is not None
        return self._last

    def close(self) -> None:
        """Nothing to close: the recording is already in memory."""


def replay_pollers(evs: list[ReplayEvent], speed: float) -> list[ReplayPoller]:
    per_source: dict[str, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    for ev in evs:
        if ev.kind == "snapshot":
            for name, d in ev.record.get("sources", {}).items():
                per_source[name].append((ev.t, d))
    start = time.monotonic()
    return [ReplayPoller(name, items, speed, start) for name, items in per_source.items()]


def run_replay_tui(evs: list[ReplayEvent], speed: float) -> int:
    from benchtop.screens.app import BenchtopApp

    pollers = replay_pollers(evs, speed)
    if not pollers:
        return 1
    BenchtopApp(None, pollers, source_interval=0.1).run()
    return 0
