"""Per-process /proc files kept open between readings.

A reading of a local server's processes reads the same few files of each
process every second (stat, schedstat, io, status).  Opening one costs a
path walk through /proc/PID each time; read again through an open
descriptor with pread at offset 0, the kernel generates it afresh for a
half to a fifth of the CPU (measured here with 262 PostgreSQL
processes: stat 12-17 us opened, read and closed, 4-7 us by pread;
schedstat 10 against 2; io 13 against 4).

Only files the kernel writes as one record belong here (stat, schedstat,
io, status, statm, comm, cmdline): a read that returns less than asked for
is the whole file.  A multi-record file (task/TID/children, net/tcp) may
return one page at a time and is read with `read_bytes`.

Kept descriptors count against RLIMIT_NOFILE, which the load's sockets
need: the soft limit is raised by what is kept (in steps of KEEP_STEP); when
the hard limit allows no more, a file is kept only while its descriptor is
in the lowest quarter of the limit, else opened and closed each time as
before.  A descriptor of a process that ended reads ESRCH: it is closed and
the path read afresh (its pid may be another process's by now); `sweep`
closes those not read since the last sweep.
"""

from __future__ import annotations

import os
import resource
import threading
import weakref

from benchtop.sources.process import read_bytes

KEEP_STEP = 256  # descriptors added to the soft limit at a time
KEEP_MOST = 4096  # at most this many kept by one reader; past it, opened and closed each time
_SIZE = 16384  # larger than any one-record file read here (status is about 1.5 KiB)
_LIMIT = threading.Lock()  # readers in several threads raise the same limit


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


class ProcFiles:
    """Reads one-record /proc files, keeping them open from one reading to the next."""

    def __init__(self, most: int = KEEP_MOST) -> None:
        self._fds: dict[str, int] = {}
        self._read: set[str] = set()
        self._room = 0  # descriptors the soft limit was raised for
        self._most = most
        # a reader dropped without close() (a run that failed) still gives its descriptors back
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    @property
    def kept(self) -> int:
        return len(self._fds)

    def read(self, path: str) -> bytes:
        """The file's bytes; OSError as open() would raise it (the process ended, not ours to read)."""
        fd = self._fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            if not self._may_keep(fd):
                try:
                    return _whole(fd)
                finally:
                    os.close(fd)
            self._fds[path] = fd
        self._read.add(path)
        try:
            out = os.pread(fd, _SIZE, 0)
        except OSError:
            # the process it was opened on ended: its pid may be another's by now, read afresh
            self._drop(path)
            return read_bytes(path)
        return out if len(out) < _SIZE else read_bytes(path)

    def sweep(self) -> None:
        """Closes the files not read since the last sweep (their processes ended or are no longer read)."""
        for path in [p for p in self._fds if p not in self._read]:
            self._drop(path)
        self._read = set()

    def close(self) -> None:
        _close_all(self._fds)
        self._read = set()

    def _drop(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        self._read.discard(path)
        if fd is not None:
            os.close(fd)

    def _may_keep(self, fd: int) -> bool:
        """Whether descriptor `fd` may stay open: the soft limit raised for
        it, if need be; when the hard limit allows no more, while it is in the
        lowest quarter of the limit (the rest stays the load's sockets')."""
        if len(self._fds) < self._room:
            return True
        if len(self._fds) >= self._most:
            return False
        with _LIMIT:
            try:
                soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                if soft == resource.RLIM_INFINITY:
                    return True
                new = soft + KEEP_STEP if hard == resource.RLIM_INFINITY else min(soft + KEEP_STEP, hard)
                if new <= soft:
                    return fd < soft // 4
                resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            except (ValueError, OSError):
                return False
        self._room += new - soft
        return True


def _whole(fd: int) -> bytes:
    out = b""
    while more := os.read(fd, _SIZE):
        out += more
    return out
