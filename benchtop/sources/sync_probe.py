"""How long one sync takes on the disk that holds a local server's data:
the time of a 4 KiB overwrite and fdatasync, as a redo or WAL log commits,
in an unnamed temporary file on the same filesystem (never inside the
server's data directory: benchtop writes nothing of the server's).

The server counts its syncs but not their time (InnoDB's log file I/O is
not instrumented in MariaDB's performance_schema; PostgreSQL's wal_sync_time
needs track_wal_io_timing), and a host's flush counters are every
process's.  A sync may also be spent partly on the CPU (a virtual disk's
flush runs in the guest's kernel), so the workers' time off the CPUs
understates it; timing one says what each durable commit waits for."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

BLOCK = 4096
SYNCS = 8  # timed per probe: about 2 ms of a disk that syncs in a quarter of a millisecond


def data_directory(pid: int) -> Path | None:
    """A server's working directory: mariadbd and PostgreSQL's postmaster
    run in their data directories (None when /proc does not tell us)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def probe_directory(data: Path) -> Path | None:
    """A directory benchtop may write on the same filesystem as `data`
    (the temporary directory, then the home directory), or None."""
    try:
        device = data.stat().st_dev
    except OSError:
        return None
    for folder in (Path(tempfile.gettempdir()), Path.home()):
        try:
            if folder.stat().st_dev == device and os.access(folder, os.W_OK | os.X_OK):
                return folder
        except OSError:
            continue
    return None


def _queued_ns(fd: int) -> int:
    """This thread's time runnable but not running (schedstat's second field)."""
    return int(os.pread(fd, 128, 0).split()[1])


def timed_sync_ms(folder: Path, syncs: int = SYNCS) -> float | None:
    """The median time of a 4 KiB overwrite and fdatasync in `folder` (ms),
    less this thread's wait for a CPU meanwhile (on a busy host the probe
    queues for a CPU as the server's sessions do for theirs: that wait is
    not the disk's); None when no file can be written there."""
    block = b"\0" * BLOCK
    try:
        sched = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        sched = -1
    try:
        with tempfile.TemporaryFile(dir=folder) as f:
            fd = f.fileno()
            # allocated and synced first: an overwrite syncs the data alone, as a preallocated log does
            os.pwrite(fd, block * syncs, 0)
            os.fsync(fd)
            times = []
            for i in range(syncs):
                q0 = _queued_ns(sched) if sched >= 0 else 0
                t0 = time.perf_counter_ns()
                os.pwrite(fd, block, i * BLOCK)
                os.fdatasync(fd)
                t1 = time.perf_counter_ns()
                queued = _queued_ns(sched) - q0 if sched >= 0 else 0
                times.append(max(0, t1 - t0 - queued) / 1e6)
    except (OSError, ValueError, IndexError):
        return None
    finally:
        if sched >= 0:
            os.close(sched)
    return round(statistics.median(times), 3)
