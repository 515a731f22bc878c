"""One pass over /proc per interval for the verdict and the run's costs:
every process's CPU (what the host's other processes take from the run, and
the server tree's own), the time benchtop's workers and the server's tasks
spent runnable but not running (/proc/PID/schedstat: waiting in the run
queue for a CPU), and the server's own writes (/proc/PID/io).  `shares`
turns two scans into per-second figures.  Only world-readable files are
needed, except /proc/PID/io of another user's server (None then)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Iterable, Mapping

from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_table import LatestPass, PidStat, StatsPass, io_counter, read_pass, tree, tree_ticks
from benchtop.sources.process import DATABASES, POOLERS, ProcessReading, clock_ticks, read_bytes

# The load's threads as the engine names them (top -H, perf): their waits are the workers'.
WORKER_THREADS = (b"bt-worker", b"bt-loop")
# A pooler or a proxy in front of a database: the database's processes behind it belong to the run too.
_SERVING = DATABASES | POOLERS
ACTIVE_RUN_SHARE = 0.01  # a server task on a CPU this share of the interval serves the load
MAX_TASK_READS = 64  # of benchtop's own threads, and of the server's tasks, whose run-queue waits a scan reads


@dataclass(frozen=True, slots=True)
class ProcScan:
    """Cumulative counters at one instant."""

    t: float  # monotonic
    ticks: Mapping[int, tuple[str, int]]  # every process: pid -> (command name, user+system ticks)
    run: frozenset[int]  # benchtop and the server's tree: the run's own processes
    worker_wait_ns: int | None  # benchtop's workers' run-queue wait
    server_tasks: Mapping[int, tuple[int, int]] | None  # the server's tasks: tid -> (on-CPU ns, run-queue wait ns)
    server_write_bytes: int | None  # the server tree's writes (None: not readable)
    server: ProcessReading | None = None  # the server tree's CPU: its live processes' and what root reaped
    server_tasks_scale: float = 1.0  # the server's tasks for each one in server_tasks (a sample past MAX_TASK_READS)


@dataclass(frozen=True, slots=True)
class ProcShares:
    """What two scans say about an interval."""

    seconds: float
    neighbour_cores: float  # cores the host's other processes took
    neighbours: tuple[tuple[str, float], ...]  # their cores by command name, busiest first
    worker_cpu_wait: float | None  # workers waiting for a CPU, on average
    server_cpu_wait: float | None  # the server's tasks waiting for a CPU, on average
    server_write_bytes_per_s: float | None

    def top(self, n: int = 3) -> str:
        """`sh 0.98, dd 0.31` (the busiest command names, 0.05 cores or more).

        >>> ProcShares(1.0, 1.3, (("sh", 0.98), ("dd", 0.31), ("cron", 0.01)), None, None, None).top()
        'sh 0.98, dd 0.31'
        """
        return ", ".join(f"{name} {cores:.2f}" for name, cores in self.neighbours[:n] if cores >= 0.05)


def parse_schedstat(text: bytes) -> tuple[int, int]:
    """(on-CPU ns, run-queue wait ns) of a /proc/PID/schedstat line (on-CPU ns, wait ns, timeslices).

    >>> parse_schedstat(b"220300 1500 3\\n")
    (220300, 1500)
    """
    f = text.split()
    return int(f[0]), int(f[1])


def _sampled(ids: Iterable[int]) -> tuple[list[int], float]:
    """At most MAX_TASK_READS of `ids`, and how many ids each one kept
    stands for: those whose hash falls in the smallest power-of-two share
    that leaves no more, so the same ones from one scan to the next as tasks
    come and go (a hash, not the id's own low bits: ids handed out in pairs
    would leave a parity rule with none).

    >>> kept, each = _sampled(range(1000, 1640))
    >>> len(kept), round(each, 1), set(kept) <= set(_sampled(range(1000, 1660))[0])
    (41, 15.6, True)
    >>> len(_sampled(range(1001, 2001, 2))[0])  # odd ids alone
    64
    >>> _sampled([3, 5, 7])
    ([3, 5, 7], 1.0)
    """
    every = list(ids)
    kept, bits = every, 0
    while len(kept) > MAX_TASK_READS:
        bits += 1
        kept = [i for i in every if (i * 0x9E3779B1) & 0xFFFFFFFF < 1 << (32 - bits)]
    return kept, len(every) / max(1, len(kept))


def _server_tasks(files: ProcFiles, base: str, pids: Iterable[int],
                  stats: Mapping[int, PidStat]) -> tuple[dict[int, tuple[int, int]], float]:
    """The schedstat of the server's tasks (a process's own when it has one
    thread), at most MAX_TASK_READS of them, and how many tasks each read
    one stands for (256 backends were 256 files a second, 10,000 would be
    10,000)."""
    paths: dict[int, str] = {}
    for pid in pids:
        if stats[pid].threads == 1:
            paths[pid] = f"{base}/{pid}/schedstat"
            continue
        try:
            paths.update((int(t), f"{base}/{pid}/task/{t}/schedstat") for t in os.listdir(f"{base}/{pid}/task"))
        except (OSError, ValueError):
            continue  # ended since the listing
    kept, each = _sampled(paths)
    out = {}
    for tid in kept:
        try:
            out[tid] = parse_schedstat(files.read(paths[tid]))
        except (OSError, ValueError, IndexError):
            continue  # the task ended between the listing and the read
    return out, each


def _worker_waits(files: ProcFiles, base: str, pid: int, only: tuple[bytes, ...]) -> int:
    """Run-queue wait of the threads whose names start so (all of them when
    none does), read from a bounded sample of them (_sampled): 4,096 workers
    were 8,000 files a reading, a second or more of the run's one
    controlling thread on a busy host."""
    picked, each = _sampled(int(t) for t in os.listdir(f"{base}/{pid}/task"))
    named = total = 0
    found = False
    for task in picked:
        try:
            wait = parse_schedstat(files.read(f"{base}/{pid}/task/{task}/schedstat"))[1]
            total += wait
            if files.read(f"{base}/{pid}/task/{task}/comm").startswith(only):
                named += wait
                found = True
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return int((named if found else total) * each)


def scan(server_pid: int | None, own_pid: int | None = None, proc: str = "/proc",
         files: ProcFiles | None = None, taken: StatsPass | None = None,
         shared: LatestPass | None = None) -> ProcScan:
    """Every process's CPU, the run's processes, the server tree's CPU, and
    the run-queue waits and writes of the run's tasks.  `files`: a reader
    that keeps them open from one scan to the next (without it each file is
    opened and closed).  `taken`: a pass over /proc just made (else one is
    made); `shared`: where the pass is published for the run's other readers."""
    files = files if files is not None else ProcFiles(most=0)
    own = own_pid if own_pid is not None else os.getpid()
    taken = taken or read_pass(files, proc)
    if shared is not None:
        shared.publish(taken)
    stats = taken.stats
    ticks = {pid: (st.name, st.ticks) for pid, st in stats.items()}
    server = tree(server_pid, stats)
    mine = tree(own, stats)
    if not server or ticks.get(server_pid or 0, ("", 0))[0] not in DATABASES:
        # the server is not known here, or what listens is a pooler or a proxy: the databases here serve the run
        mine |= {pid for pid, (name, _) in ticks.items() if name in _SERVING}
    worker_wait: int | None
    try:
        worker_wait = _worker_waits(files, proc, own, WORKER_THREADS)
    except (OSError, ValueError, IndexError):
        worker_wait = None
    # the databases behind a pooler or a proxy are left out of the neighbours, not counted in the wait:
    # which of this host's database processes serve the run is not known
    tasks, scale = _server_tasks(files, proc, server, stats)
    written: int | None = 0 if server else None
    for pid in server:
        if written is not None:
            try:
                w = io_counter(files.read(f"{proc}/{pid}/io"), b"write_bytes")
                written = None if w is None else written + w
            except PermissionError:
                written = None  # another user's server
            except (OSError, ValueError):
                pass
    files.sweep()
    cpu = None
    if server and server_pid is not None:
        cpu = ProcessReading(len(server), tree_ticks([stats[p].ticks for p in server], stats[server_pid].reaped)
                             / clock_ticks(), None)
    return ProcScan(time.monotonic(), ticks, frozenset(server | mine), worker_wait,
                    tasks if server else None, written, cpu, scale)


def shares(prev: ProcScan, cur: ProcScan) -> ProcShares:
    """Two scans' difference: the other processes' cores by name, the run's CPU waits and the server's writes.

    >>> a = ProcScan(0.0, {1: ("sh", 100), 2: ("postgres", 0), 3: ("dd", 0)}, frozenset({2}), 0, {2: (0, 0)}, 0)
    >>> b = ProcScan(2.0, {1: ("sh", 300), 2: ("postgres", 50), 4: ("dd", 20)}, frozenset({2}), 10**9,
    ...              {2: (5 * 10**8, 2 * 10**8)}, 8192)
    >>> s = shares(a, b)
    >>> s.neighbour_cores, s.neighbours, s.worker_cpu_wait, s.server_cpu_wait, s.server_write_bytes_per_s
    (1.1, (('sh', 1.0), ('dd', 0.1)), 0.5, 0.1, 4096.0)
    """
    seconds = max(cur.t - prev.t, 1e-9)
    hz = clock_ticks()
    by_name: dict[str, float] = {}
    for pid, (name, ticks) in cur.ticks.items():
        if pid in cur.run:
            continue
        before = prev.ticks.get(pid)
        # a kernel thread renames itself as it works (kworker/0:0H-kblockd): the pid is the process
        used = ticks - before[1] if before is not None and ticks >= before[1] else ticks  # new: all of it is new
        if used > 0:
            label = name.split("/")[0]  # kworker/0:2 and kworker/1:1H are one kind of work
            by_name[label] = by_name.get(label, 0.0) + used / hz / seconds
    ranked = tuple(sorted(((k, round(v, 3)) for k, v in by_name.items()), key=lambda kv: -kv[1]))
    return ProcShares(seconds, round(sum(by_name.values()), 3), ranked,
                      _rate(prev.worker_wait_ns, cur.worker_wait_ns, seconds * 1e9),
                      _serving_wait(prev.server_tasks, cur.server_tasks, seconds, cur.server_tasks_scale),
                      _rate(prev.server_write_bytes, cur.server_write_bytes, seconds))


def _serving_wait(prev: Mapping[int, tuple[int, int]] | None, cur: Mapping[int, tuple[int, int]] | None,
                  seconds: float, scale: float = 1.0) -> float | None:
    """The server's tasks waiting for a CPU on average, counting the tasks
    that ran at least ACTIVE_RUN_SHARE of the interval, or half the average
    of those that ran when that is less: those serving the load, not the
    background processes waking now and then (whose waits on a crowded host
    add up without holding a worker back).  With 256 backends sharing two
    CPUs each ran 6 ms a second, under 1%: every one was left out and 14
    tasks queued on average read as none.  `scale`: the tasks each one read
    stands for.

    >>> a = {1: (0, 0), 2: (0, 0)}
    >>> _serving_wait(a, {1: (200_000_000, 300_000_000), 2: (1_000_000, 400_000_000)}, 1.0)
    0.3
    >>> _serving_wait(a, {1: (200_000_000, 300_000_000), 2: (1_000_000, 400_000_000)}, 1.0, 4.0)
    1.2
    >>> many = {t: (6_000_000, 50_000_000) for t in range(3, 259)}
    >>> _serving_wait({**a, **{t: (0, 0) for t in many}}, {1: (300_000, 90_000_000), 2: (0, 0), **many}, 1.0)
    12.8
    """
    if prev is None or cur is None:
        return None
    ran = {}
    for tid, (run, waited) in cur.items():
        before = prev.get(tid)
        if before is not None and run > before[0]:
            ran[tid] = (run - before[0], max(waited - before[1], 0))
    if not ran:
        return 0.0
    floor = min(ACTIVE_RUN_SHARE * seconds * 1e9, 0.5 * sum(r for r, _ in ran.values()) / len(ran))
    wait = sum(w for r, w in ran.values() if r >= floor)
    return round(wait * scale / (seconds * 1e9), 3)


def _rate(a: int | None, b: int | None, per: float) -> float | None:
    return None if a is None or b is None else round(max(b - a, 0) / per, 3)


def allowed_cpus(pid: int | None = None, proc: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> float | None:
    """The CPUs a process may use: its affinity (taskset, cpusets), less its
    cgroup's CPU quota (cpu.max: 50000 100000 is half a core) when smaller;
    None when neither can be read."""
    try:
        cpus: float | None = float(len(os.sched_getaffinity(pid or 0)))
    except (AttributeError, OSError):
        cpus = None
    quota = cgroup_quota(pid, proc, cgroup_root)
    if quota is not None:
        cpus = quota if cpus is None else min(cpus, quota)
    return cpus


def cgroup_quota(pid: int | None = None, proc: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> float | None:
    """The smallest cgroup v2 cpu.max quota, in cores, on the way from the process's cgroup to the root."""
    try:
        lines = read_bytes(f"{proc}/{pid if pid else 'self'}/cgroup").decode().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    path = next((line[3:] for line in lines if line.startswith("0::")), None)
    if path is None:
        return None
    return min_quota(_cpu_max(f"{cgroup_root}{p}") for p in _ancestors(path))


def _ancestors(path: str) -> list[str]:
    """
    >>> _ancestors("/a/b")
    ['/a/b', '/a', '']
    """
    parts = path.strip("/").split("/") if path.strip("/") else []
    return ["/" + "/".join(parts[:i]) if i else "" for i in range(len(parts), -1, -1)]


def _cpu_max(folder: str) -> str | None:
    try:
        return read_bytes(f"{folder}/cpu.max").decode()
    except (OSError, UnicodeDecodeError):
        return None


def min_quota(texts: Iterable[str | None]) -> float | None:
    """The smallest quota of cpu.max texts, in cores (`max`: none).

    >>> min_quota(["max 100000\\n", "150000 100000\\n", None])
    1.5
    >>> min_quota(["max 100000"]) is None
    True
    """
    found = []
    for text in texts:
        parts = (text or "").split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit() and int(parts[1]) > 0:
            found.append(int(parts[0]) / int(parts[1]))
    return min(found) if found else None
