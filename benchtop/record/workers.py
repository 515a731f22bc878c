"""A run's workers: its client connections and the threads that carry them.

Alone, `--threads N` runs N threads that each hold one connection; with
`--connections N` (MySQL, PostgreSQL) N connections run on the `--threads`
event-loop threads.  `Workers` decides, once, what the live knob counts and
what it is called, how far it goes, and what summary.json, its steps and the
interval lines record: `connections` (client connections) and `threads` (the
threads carrying them; equal for a thread per connection).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from benchtop.engine import MAX_CONNECTIONS, MAX_THREADS


@dataclass(frozen=True, slots=True)
class Workers:
    """`connections` client connections on `loop_threads` event-loop threads
    (0: a thread per connection).

    >>> Workers(8).header(), Workers(8).to_dict()
    ('threads: 8', {'connections': 8, 'threads': 8})
    >>> w = Workers(20, loop_threads=2)
    >>> w.header(), w.header(connected=9), w.setting, w.limit, w.to_dict()
    ('connections: 20 on 2 threads', 'connections: 9/20 connected on 2 threads', 'connections 20 on 2 threads', \
65536, {'connections': 20, 'threads': 2})
    """

    connections: int
    loop_threads: int = 0

    @property
    def event_loops(self) -> bool:
        return self.loop_threads > 0

    @property
    def threads(self) -> int:
        """The threads that carry the connections."""
        return self.loop_threads or self.connections

    @property
    def word(self) -> str:
        """What the live knob (keys, scenario steps) counts."""
        return "connections" if self.event_loops else "threads"

    @property
    def limit(self) -> int:
        """The most the knob can ask for."""
        return MAX_CONNECTIONS if self.event_loops else MAX_THREADS

    def with_connections(self, n: int) -> Workers:
        """The same threads carrying `n` connections (a knob turned)."""
        return replace(self, connections=n)

    def problem(self, least: int = 1) -> str | None:
        """Why these workers cannot run, in one line (None: they can).

        >>> Workers(5000).problem(), Workers(5000, loop_threads=4).problem(), Workers(0, 4).problem(least=0)
        ('threads must be between 1 and 4096, not 5000', None, None)
        """
        if not least <= self.connections <= self.limit:
            return f"{self.word} must be between {least} and {self.limit}, not {self.connections}"
        if not 0 <= self.loop_threads <= MAX_THREADS:
            return f"threads must be between 1 and {MAX_THREADS}, not {self.loop_threads}"
        return None

    @property
    def _on(self) -> str:
        return f" on {self.loop_threads} threads" if self.event_loops else ""

    def header(self, connected: int = -1) -> str:
        """The dashboard's knob: `threads: 8`, `connections: 20 on 2 threads`;
        `connected` (>= 0) below the count is said as `9/20 connected`."""
        count = f"{connected}/{self.connections} connected" if 0 <= connected < self.connections \
            else str(self.connections)
        return f"{self.word}: {count}{self._on}"

    @property
    def setting(self) -> str:
        """A stretch's setting as the report names it: `threads 8`, `connections 20 on 2 threads`."""
        return f"{self.word} {self.connections}{self._on}"

    def to_dict(self) -> dict[str, int]:
        """The two keys of summary.json, its steps and the interval lines."""
        return {"connections": self.connections, "threads": self.threads}


def workers_of(record: Mapping[str, Any]) -> Workers:
    """The workers a summary, a step or an interval line records, whichever
    version wrote it.  `connections`, when there, is the count of workers in
    every version; before it was in every line, an interval's (and a plain
    run's step's) `threads` counted the connections under --connections, and
    a scenario step said its event loops as `loop_threads`.  As many
    connections as threads read as a thread each (the same two figures).

    >>> workers_of({"connections": 20, "threads": 2}), workers_of({"threads": 20})
    (Workers(connections=20, loop_threads=2), Workers(connections=20, loop_threads=0))
    >>> workers_of({"threads": 20, "connections": 20, "loop_threads": 2})
    Workers(connections=20, loop_threads=2)
    """
    threads = int(record.get("threads") or 0)
    if record.get("connections") is None:
        return Workers(threads)
    connections = int(record["connections"])
    loop_threads = int(record.get("loop_threads") or 0) or (threads if threads != connections else 0)
    return Workers(connections, loop_threads)
