"""The rest of what top, vmstat, iostat -x and pg_activity show of this host,
from /proc: load and run queue, memory and swap (with swapping rates), each
disk's utilisation and latency, and each process of the local server's tree
with its CPU and I/O (a PostgreSQL backend's title says its user, database
and state).  Pure parsers plus two small readers that keep the previous
reading to turn counters into rates."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_table import PidStat, io_counter, tree, tree_ticks
from benchtop.sources.process import ProcessReading, clock_ticks, memory_shares, tree_rss

_SECTOR_BYTES = 512
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def parse_loadavg(text: str, cpus: int) -> dict[str, Any]:
    """/proc/loadavg, and the load per CPU (top's line).

    >>> parse_loadavg("1.50 0.75 0.25 3/412 9999\\n", 2)
    {'load_1m': 1.5, 'load_5m': 0.75, 'load_15m': 0.25, 'runnable': 3, 'tasks': 412, 'cpus': 2, 'load_per_cpu': 0.75}
    """
    parts = text.split()
    run, _, tasks = parts[3].partition("/")
    return {"load_1m": float(parts[0]), "load_5m": float(parts[1]), "load_15m": float(parts[2]),
            "runnable": int(run), "tasks": int(tasks), "cpus": cpus,
            "load_per_cpu": round(float(parts[0]) / cpus, 2) if cpus else None}


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes: memory used, available, cached, dirty, and swap.

    >>> m = parse_meminfo("MemTotal: 1000 kB\\nMemFree: 100 kB\\nMemAvailable: 600 kB\\nBuffers: 50 kB\\n"
    ...                   "Cached: 300 kB\\nDirty: 20 kB\\nWriteback: 0 kB\\nSwapTotal: 500 kB\\nSwapFree: 400 kB\\n")
    >>> m["total_bytes"], m["used_bytes"], m["swap_used_bytes"], m["dirty_bytes"]
    (1024000, 409600, 102400, 20480)
    """
    kb: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            kb[key] = int(parts[0])
    total, available = kb.get("MemTotal", 0), kb.get("MemAvailable", kb.get("MemFree", 0))
    swap_total, swap_free = kb.get("SwapTotal", 0), kb.get("SwapFree", 0)
    return {k: v * 1024 for k, v in {
        "total_bytes": total, "available_bytes": available, "used_bytes": total - available,
        "cached_bytes": kb.get("Cached", 0) + kb.get("Buffers", 0), "dirty_bytes": kb.get("Dirty", 0),
        "writeback_bytes": kb.get("Writeback", 0), "swap_total_bytes": swap_total,
        "swap_used_bytes": swap_total - swap_free}.items()}


def parse_swapping(text: str) -> tuple[int, int]:
    """Pages swapped in and out since boot (/proc/vmstat).

    >>> parse_swapping("nr_free_pages 5\\npswpin 12\\npswpout 34\\n")
    (12, 34)
    """
    found = {k: int(v) for k, v in (line.split()[:2] for line in text.splitlines() if line.count(" ") >= 1)
             if k in ("pswpin", "pswpout")}
    return found.get("pswpin", 0), found.get("pswpout", 0)


@dataclass(frozen=True, slots=True)
class DiskCounters:
    """One whole disk's /proc/diskstats counters."""

    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    io_ms: int
    weighted_ms: int


def parse_disks(text: str, disks: set[str] | None, looks_virtual) -> dict[str, DiskCounters]:
    """Every whole disk's counters (the disks the OS source counts).

    >>> parse_disks("   8  0 sda 100 0 800 40 50 0 400 30 0 90 120\\n", {"sda"}, None)["sda"].weighted_ms
    120
    """
    out = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) < 14:
            continue
        name = p[2]
        if (name not in disks) if disks is not None else looks_virtual(name):
            continue
        out[name] = DiskCounters(int(p[3]), int(p[5]), int(p[6]), int(p[7]), int(p[9]), int(p[10]), int(p[12]),
                                 int(p[13]))
    return out


def disk_rows(prev: dict[str, DiskCounters], cur: dict[str, DiskCounters], seconds: float) -> list[dict[str, Any]]:
    """iostat -x per disk: utilisation, requests, throughput, await, queue.

    >>> a = {"sda": DiskCounters(0, 0, 0, 0, 0, 0, 0, 0)}
    >>> b = {"sda": DiskCounters(100, 800, 50, 200, 1600, 400, 500, 900)}
    >>> r = disk_rows(a, b, 1.0)[0]
    >>> r["util_pct"], r["r_await_ms"], r["w_await_ms"], r["queue"], r["write_bytes_per_s"]
    (50.0, 0.5, 2.0, 0.9, 819200.0)
    """
    s = max(seconds, 1e-9)
    out = []
    for name, c in cur.items():
        p = prev.get(name)
        if p is None:
            continue
        reads, writes = max(c.reads - p.reads, 0), max(c.writes - p.writes, 0)
        out.append({
            "disk": name,
            "util_pct": min(100.0, round(100.0 * max(c.io_ms - p.io_ms, 0) / (1000.0 * s), 1)),
            "reads_per_s": round(reads / s, 1),
            "writes_per_s": round(writes / s, 1),
            "read_bytes_per_s": round(max(c.read_sectors - p.read_sectors, 0) * _SECTOR_BYTES / s, 1),
            "write_bytes_per_s": round(max(c.write_sectors - p.write_sectors, 0) * _SECTOR_BYTES / s, 1),
            "r_await_ms": round(max(c.read_ms - p.read_ms, 0) / reads, 3) if reads else None,
            "w_await_ms": round(max(c.write_ms - p.write_ms, 0) / writes, 3) if writes else None,
            "queue": round(max(c.weighted_ms - p.weighted_ms, 0) / (1000.0 * s), 2),
        })
    return sorted(out, key=lambda r: -r["util_pct"])


@dataclass(frozen=True, slots=True)
class ProcCounters:
    cpu_ticks: int
    read_bytes: int | None  # /proc/PID/io: None when not readable (another user's process)
    write_bytes: int | None
    rss_bytes: int
    title: str
    reaped_ticks: int = 0  # cutime + cstime: the CPU of the children it has waited for
    memory: tuple[int, int] | None = None  # anonymous and shared bytes (process_counters' `memory`)


def process_counters(pid: int, st: PidStat, files: ProcFiles, proc: str = "/proc",
                     memory: bool = False, io: bool = True) -> ProcCounters:
    """One process's CPU ticks, block I/O (/proc/PID/io: None when not ours
    to read, or not asked for) and RSS from its stat line; with `memory` its
    anonymous and shared memory as well (/proc/PID/statm, for tree_reading).
    No title: `title` reads it for the rows shown."""
    read = written = None
    if io:
        try:
            counters = files.read(f"{proc}/{pid}/io")
            read, written = io_counter(counters, b"read_bytes"), io_counter(counters, b"write_bytes")
        except (OSError, ValueError):
            pass
    mem: tuple[int, int] | None = None
    if memory:
        try:
            mem = memory_shares(files.read(f"{proc}/{pid}/statm"))
        except (OSError, ValueError, IndexError):
            pass
    return ProcCounters(st.ticks, read, written, st.rss_pages * _PAGE, "", st.reaped, mem)


def title(pid: int, name: str, files: ProcFiles, proc: str = "/proc") -> str:
    """A process's command line as ps shows it (a PostgreSQL backend's title:
    `postgres: user db client state`); its command name when it has none."""
    try:
        text = files.read(f"{proc}/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        text = ""
    return text or name


def tree_counters(root: int, stats: Mapping[int, PidStat], files: ProcFiles, proc: str = "/proc",
                  memory: bool = False, io: bool = True) -> dict[int, ProcCounters]:
    """The counters of `root` and its descendants among a pass's `stats` (empty when root is gone)."""
    # by pid: the rows' order among equals stays the same from one reading to the next
    return {pid: process_counters(pid, stats[pid], files, proc, memory, io) for pid in sorted(tree(root, stats))}


def tree_reading(procs: dict[int, ProcCounters], root: int) -> ProcessReading | None:
    """The tree's CPU (its live processes' and what root reaped) and memory
    (each process's anonymous memory, plus the largest shared part once:
    PostgreSQL's backends all map the same shared buffers) from a
    tree_counters(root, ..., memory=True) reading; None when root is gone.

    >>> p = {1: ProcCounters(100, None, None, 0, "pm", 50, (10, 580)),
    ...      2: ProcCounters(20, None, None, 0, "be", 0, (30, 490))}
    >>> tree_reading(p, 1)
    ProcessReading(pids=2, cpu_s=1.72, rss_bytes=620)
    """
    top = procs.get(root)
    if top is None:
        return None
    mems = [c.memory for c in procs.values() if c.memory is not None]
    ticks = tree_ticks([c.cpu_ticks for c in procs.values()], top.reaped_ticks)
    return ProcessReading(pids=len(mems), cpu_s=ticks / clock_ticks(), rss_bytes=tree_rss(mems))


def process_rows(prev: dict[int, ProcCounters], cur: dict[int, ProcCounters], seconds: float,
                 ticks: int) -> list[dict[str, Any]]:
    """Each process's CPU (% of one core) and block I/O over the interval,
    busiest first (pg_activity's CPU%, READ/s, WRITE/s).

    >>> a = {7: ProcCounters(100, 0, 0, 1 << 20, "postgres: sbtest sbtest 127.0.0.1(5) idle")}
    >>> b = {7: ProcCounters(150, 4096, 8192, 1 << 20, "postgres: sbtest sbtest 127.0.0.1(5) UPDATE")}
    >>> r = process_rows(a, b, 1.0, 100)[0]
    >>> r["cpu_pct"], r["read_bytes_per_s"], r["write_bytes_per_s"], r["title"]
    (50.0, 4096.0, 8192.0, 'postgres: sbtest sbtest 127.0.0.1(5) UPDATE')
    """
    s = max(seconds, 1e-9)
    out = []
    for pid, c in cur.items():
        p = prev.get(pid)
        if p is None:
            continue

        def rate(a: int | None, b: int | None) -> float | None:
            return round(max(a - b, 0) / s, 1) if a is not None and b is not None else None

        out.append({"pid": pid, "cpu_pct": round(100.0 * max(c.cpu_ticks - p.cpu_ticks, 0) / ticks / s, 1),
                    "read_bytes_per_s": rate(c.read_bytes, p.read_bytes),
                    "write_bytes_per_s": rate(c.write_bytes, p.write_bytes),
                    "rss_bytes": c.rss_bytes, "title": c.title})
    return sorted(out, key=lambda r: (-r["cpu_pct"], -(r["write_bytes_per_s"] or 0)))
