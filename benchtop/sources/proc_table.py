"""Every process of this host from one pass over /proc: one listing, then
each process's /proc/PID/stat (command name, parent, CPU ticks, threads,
resident pages).  A process tree (a server and its backends) comes from the
parents in it, not from a second walk reading each process's children.
A run's readers share one such pass an interval (`LatestPass`)."""

from __future__ import annotations

import os
import time
from typing import Mapping, NamedTuple, Sequence

from benchtop.sources.proc_files import ProcFiles


class PidStat(NamedTuple):
    """One process's /proc/PID/stat at one instant.  A named tuple, not a
    frozen dataclass: hundreds are made every second, and a frozen
    dataclass's __init__ took 3.3 us of the 7 that parsing one cost here."""

    name: str  # command name (comm)
    ppid: int
    ticks: int  # user + system clock ticks
    reaped: int  # the user + system ticks of the children it has waited for (cutime + cstime)
    threads: int
    rss_pages: int


def parse_stat(text: bytes) -> PidStat:
    """A /proc/PID/stat line.

    >>> parse_stat(b"42 (sh -c) R 7 42 7 0 -1 4194304 90 0 0 0 150 25 3 2 20 0 1 0 100 0 12")
    PidStat(name='sh -c', ppid=7, ticks=175, reaped=5, threads=1, rss_pages=12)
    """
    # the command name may hold spaces and parentheses: split after the last ')'
    close = text.rindex(b")")
    f = text[close + 2 :].split(maxsplit=22)  # the fields up to rss: not the 30 after it
    # state is f[0]; utime stime cutime cstime are fields 14-17 (1-based), num_threads 20, rss 24
    return PidStat(text[text.index(b"(") + 1 : close].decode(errors="replace"), int(f[1]),
                   int(f[11]) + int(f[12]), int(f[13]) + int(f[14]), int(f[17]), int(f[21]))


def io_counter(text: bytes, key: bytes) -> int | None:
    """One line of /proc/PID/io (a search, not a split of its seven lines).

    >>> io = b"rchar: 1\\nread_bytes: 0\\nwrite_bytes: 8192\\ncancelled_write_bytes: 4096\\n"
    >>> io_counter(io, b"write_bytes"), io_counter(io, b"read_bytes"), io_counter(b"rchar: 1\\n", b"write_bytes")
    (8192, 0, None)
    """
    # at a line's start (the first line is rchar): write_bytes is not cancelled_write_bytes
    i = text.find(b"\n" + key + b":")
    if i < 0:
        return None
    start = i + len(key) + 2
    end = text.find(b"\n", start)
    return int(text[start : end if end >= 0 else None])


def read_stats(files: ProcFiles, proc: str = "/proc") -> dict[int, PidStat]:
    """Every process's stat (those that end between the listing and the read are left out)."""
    out: dict[int, PidStat] = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            out[int(entry)] = parse_stat(files.read(f"{proc}/{entry}/stat"))
        except (OSError, ValueError, IndexError):
            continue  # gone since the listing
    return out


class StatsPass(NamedTuple):
    """One pass over /proc: when it began (monotonic) and every process's stat then."""

    t: float
    stats: Mapping[int, PidStat]


def read_pass(files: ProcFiles, proc: str = "/proc") -> StatsPass:
    return StatsPass(time.monotonic(), read_stats(files, proc))


class LatestPass:
    """The newest pass over /proc a run's interval scan made, for the run's
    other readers of the same processes (the OS monitor's server tree): with
    256 backends each pass is ~330 stat files read and parsed, and two
    readers a second each making their own doubled that.

    >>> shared = LatestPass()
    >>> shared.publish(StatsPass(time.monotonic(), {}))
    >>> shared.newest(1.0) is not None, shared.newest(-1.0)
    (True, None)
    """

    def __init__(self) -> None:
        self._newest: StatsPass | None = None

    def publish(self, taken: StatsPass) -> None:
        self._newest = taken  # one reference replaced: a reader in another thread sees the old pass or the new

    def newest(self, max_age_s: float) -> StatsPass | None:
        """The newest pass when it began at most `max_age_s` ago."""
        taken = self._newest
        return taken if taken is not None and time.monotonic() - taken.t <= max_age_s else None


def tree_ticks(live: Sequence[int], reaped: int) -> int:
    """A process tree's CPU in clock ticks: its live processes' and what its
    root has reaped of the children that ended.  /proc/PID/stat floors each
    process's utime and stime to a tick, a tick short on average, and a
    reaped child's time reaches the root's cutime unfloored: so each live
    process counts a tick more, else 256 backends ending at once put 2.5 s
    into one interval ('postgres 3.6 of 2 cores' as a run ended).

    >>> tree_ticks([100, 20], 50)
    172
    """
    return sum(live) + len(live) + reaped


def tree(root: int | None, stats: Mapping[int, PidStat]) -> set[int]:
    """`root` and its descendants among `stats` (empty when root is not there).

    >>> s = {1: PidStat("init", 0, 0, 0, 1, 0), 5: PidStat("pm", 1, 0, 0, 1, 0), 6: PidStat("be", 5, 0, 0, 1, 0)}
    >>> sorted(tree(5, s)), tree(9, s)
    ([5, 6], set())
    """
    if root is None or root not in stats:
        return set()
    kids: dict[int, list[int]] = {}
    for pid, st in stats.items():
        kids.setdefault(st.ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += kids.get(pid, [])
    return out
