"""Each PostgreSQL backend's CPU and I/O for the activity view, read from
/proc as pg_activity does, for a server on this host: CPU% from
/proc/PID/stat, read/s and write/s from /proc/PID/io (storage I/O the backend
caused).  stat is world-readable; io needs the server's user or root, so
without it the CPU column stays and the I/O columns go, with a note."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from benchtop.sources.base import Missing
from benchtop.sources.fields import BACKEND_CPU_PCT, BACKEND_READ_BPS, BACKEND_WRITE_BPS
from benchtop.sources.host_state import ProcCounters, process_counters, process_rows
from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_table import parse_stat
from benchtop.sources.process import clock_ticks
from benchtop.target import Target
from benchtop.target.locality import server_on_this_host


def not_local(target: Target, own_pid: int, proc: Path = Path("/proc")) -> Missing | None:
    """Why the backends' processes cannot be read here; None when they can.

    The monitor's own backend must be a postgres process of this host: a
    server in a container (another PID namespace) has pids that mean
    something else here.

    >>> not_local(Target(kind="postgresql", host="db.example.com"), 1).what
    'per-backend CPU and I/O: the server is not on this host'
    """
    if not server_on_this_host(target):
        return Missing("per-backend CPU and I/O: the server is not on this host",
                       "run the monitor on the server's host for them")
    try:
        cmdline = (proc / str(own_pid) / "cmdline").read_bytes()
    except OSError:
        cmdline = b""
    if not cmdline.startswith((b"postgres", b"postmaster")):
        return Missing(f"per-backend CPU and I/O: backend pid {own_pid} is not a postgres process here",
                       "the server runs in another PID namespace (a container?): run the monitor inside it")
    return None


class BackendUsage:
    """Per-pid CPU and I/O rates between two samples.  A pid seen for the
    first time has the keys with None (its figures come next poll); without
    /proc/PID/io the I/O keys are left out, so the view drops their columns."""

    def __init__(self, proc: Path = Path("/proc"), clock: Callable[[], float] = time.monotonic,
                 ticks_per_s: int | None = None) -> None:
        self.proc = proc
        self.clock = clock
        self.ticks = ticks_per_s or clock_ticks()
        self.io_denied = False  # /proc/PID/io unreadable for a live backend: not ours to read
        self._prev: dict[int, ProcCounters] = {}
        self._prev_t: float | None = None
        self._files = ProcFiles()

    def close(self) -> None:
        """Closes the /proc files kept open between samples."""
        self._files.close()

    def _read(self, pid: int) -> ProcCounters | None:
        """A backend's stat and io (None: it ended)."""
        try:
            st = parse_stat(self._files.read(f"{self.proc}/{pid}/stat"))
        except (OSError, ValueError, IndexError):
            return None
        return process_counters(pid, st, self._files, str(self.proc))

    def sample(self, pids: Iterable[int]) -> dict[int, dict[str, float | None]]:
        now = self.clock()
        cur = {pid: c for pid in pids if (c := self._read(pid)) is not None}
        self._files.sweep()
        seconds = now - self._prev_t if self._prev_t is not None else 0.0
        measured = {r["pid"]: r for r in process_rows(self._prev, cur, seconds, self.ticks)} if seconds > 0 else {}
        out: dict[int, dict[str, float | None]] = {}
        for pid, c in cur.items():
            r = measured.get(pid, {})
            row: dict[str, float | None] = {BACKEND_CPU_PCT: r.get(BACKEND_CPU_PCT)}
            if c.read_bytes is not None:
                row[BACKEND_READ_BPS], row[BACKEND_WRITE_BPS] = r.get(BACKEND_READ_BPS), r.get(BACKEND_WRITE_BPS)
            out[pid] = row
        self.io_denied = any(c.read_bytes is None for c in cur.values())
        # ended backends are forgotten (a pid reused later starts afresh)
        self._prev, self._prev_t = cur, now
        return out

    def note(self) -> Missing | None:
        """What the rows lack, for the view to say."""
        if not self.io_denied:
            return None
        return Missing("per-backend I/O: /proc/PID/io is not readable",
                       "run the monitor as the server's user (postgres) or root")
