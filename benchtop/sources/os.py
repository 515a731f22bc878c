"""The local operating system, from /proc: CPU split, disk throughput and
context switches, as vmstat and iostat would show them, plus the same
counters per transaction (the normalised view engineers compute by hand).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from benchtop.sources.base import PER_PROCESS_NOT_READ, Missing, Source, SourceError, SourceSnapshot
from benchtop.sources.fields import (
    CONTEXT_SWITCHES_PER_S,
    CPU,
    DISK,
    DISKS,
    LOAD,
    MEMORY,
    RUN_QUEUE,
    SERVER_PROCESS,
    SERVER_PROCESSES,
)
from benchtop.sources.host_state import (
    DiskCounters,
    ProcCounters,
    disk_rows,
    parse_disks,
    parse_loadavg,
    parse_meminfo,
    parse_swapping,
    process_rows,
    title,
    tree_counters,
    tree_reading,
)
from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_table import LatestPass, PidStat, StatsPass, read_pass
from benchtop.sources.process import clock_ticks, listener_pid, process_name, self_cpu_s
from benchtop.target import Target

_SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# a run's pass over /proc this recent serves a headless run's server-tree panel (its rate counts from the pass's time)
SHARED_PASS_AGE_S = 1.0


@dataclass(frozen=True, slots=True)
class OSCounters:
    """Cumulative counters read at one instant."""

    t: float  # monotonic seconds
    cpu: tuple[int, ...]  # jiffies in _CPU_FIELDS order
    reads: int
    writes: int
    read_sectors: int
    write_sectors: int
    context_switches: int
    # per whole disk: busy, write and flush milliseconds (the utilisation and
    # fsync latency iostat shows), and the runnable tasks at the instant read
    disk_times: dict[str, DiskTimes] = field(default_factory=dict)
    procs_running: int | None = None

    def delta(self, prev: "OSCounters") -> "OSDelta":
        seconds = self.t - prev.t
        return OSDelta(
            seconds=self.t - prev.t,
            cpu={f: max(a - b, 0) for f, a, b in zip(_CPU_FIELDS, self.cpu, prev.cpu, strict=True)},
            reads=max(self.reads - prev.reads, 0),
            writes=max(self.writes - prev.writes, 0),
            read_kb=max(self.read_sectors - prev.read_sectors, 0) * _SECTOR_BYTES / 1024,
            write_kb=max(self.write_sectors - prev.write_sectors, 0) * _SECTOR_BYTES / 1024,
            context_switches=max(self.context_switches - prev.context_switches, 0),
            disks={name: now.minus(prev.disk_times[name], seconds) for name, now in self.disk_times.items()
                   if name in prev.disk_times},
            procs_running=self.procs_running,
        )


@dataclass(frozen=True, slots=True)
class DiskTimes:
    """One disk's cumulative counters from /proc/diskstats (milliseconds)."""

    io_ms: int  # time with at least one request in flight
    writes: int
    write_ms: int
    flushes: int = 0  # flush requests (fsync reaching the device), kernels >= 5.5
    flush_ms: int = 0

    def minus(self, prev: "DiskTimes", seconds: float) -> "DiskBusy":
        s = max(seconds, 1e-9)
        writes, flushes = max(self.writes - prev.writes, 0), max(self.flushes - prev.flushes, 0)
        return DiskBusy(
            util_pct=min(100.0, round(100.0 * max(self.io_ms - prev.io_ms, 0) / (1000.0 * s), 1)),
            writes_per_s=round(writes / s, 1),
            write_await_ms=round(max(self.write_ms - prev.write_ms, 0) / writes, 3) if writes else None,
            flushes_per_s=round(flushes / s, 1),
            flush_await_ms=round(max(self.flush_ms - prev.flush_ms, 0) / flushes, 3) if flushes else None,
        )


@dataclass(frozen=True, slots=True)
class DiskBusy:
    """One disk over an interval, as iostat -x shows it."""

    util_pct: float
    writes_per_s: float
    write_await_ms: float | None
    flushes_per_s: float
    flush_await_ms: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {"util_pct": self.util_pct, "writes_per_s": self.writes_per_s, "write_await_ms": self.write_await_ms,
                "flushes_per_s": self.flushes_per_s, "flush_await_ms": self.flush_await_ms}


@dataclass(frozen=True, slots=True)
class OSDelta:
    """What happened between two readings."""

    seconds: float
    cpu: dict[str, int]  # jiffies per field
    reads: int
    writes: int
    read_kb: float
    write_kb: float
    context_switches: int
    disks: dict[str, DiskBusy] = field(default_factory=dict)
    procs_running: int | None = None

    def busiest_disk(self) -> tuple[str, DiskBusy] | None:
        """The disk with the highest utilisation (None without disks)."""
        return max(self.disks.items(), key=lambda kv: kv[1].util_pct, default=None)

    @property
    def cpu_busy_ms(self) -> float:
        busy = sum(v for k, v in self.cpu.items() if k not in ("idle", "iowait"))
        return busy * 1000.0 / clock_ticks()

    def cpu_pct(self) -> dict[str, float]:
        total = sum(self.cpu.values())
        if not total:
            return {"user_pct": 0.0, "system_pct": 0.0, "iowait_pct": 0.0, "idle_pct": 100.0, "steal_pct": 0.0}

        def pct(*fields: str) -> float:
            return round(100.0 * sum(self.cpu[f] for f in fields) / total, 2)

        return {
            "user_pct": pct("user", "nice"),
            "system_pct": pct("system", "irq", "softirq"),
            "iowait_pct": pct("iowait"),
            "idle_pct": pct("idle"),
            "steal_pct": pct("steal"),
        }


def per_transaction(os_delta: OSDelta, transactions: float) -> dict[str, float | None]:
    """OS work per transaction over the same interval.

    >>> d = OSDelta(1.0, {"user": 50, "system": 50, "idle": 100}, 20, 5, 160.0, 80.0, 1000)
    >>> per_transaction(d, 10)["kb_read"], per_transaction(d, 0)["reads"]
    (16.0, None)
    """
    if not transactions or transactions <= 0:
        return {k: None for k in ("reads", "writes", "kb_read", "kb_written", "context_switches", "cpu_ms")}
    n = float(transactions)
    return {
        "reads": round(os_delta.reads / n, 4),
        "writes": round(os_delta.writes / n, 4),
        "kb_read": round(os_delta.read_kb / n, 4),
        "kb_written": round(os_delta.write_kb / n, 4),
        "context_switches": round(os_delta.context_switches / n, 4),
        "cpu_ms": round(os_delta.cpu_busy_ms / n, 4),
    }


def parse_stat(text: str) -> tuple[tuple[int, ...], int]:
    """Aggregate CPU jiffies and the context-switch count from /proc/stat.

    >>> parse_stat("cpu  10 1 5 100 3 0 1 0 0 0\\ncpu0 5 0 2 50 1 0 0 0 0 0\\nctxt 4242\\n")
    ((10, 1, 5, 100, 3, 0, 1, 0), 4242)
    """
    cpu: tuple[int, ...] = ()
    ctxt = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            values = [int(x) for x in parts[1 : 1 + len(_CPU_FIELDS)]]
            cpu = tuple(values + [0] * (len(_CPU_FIELDS) - len(values)))
        elif parts[0] == "ctxt":
            ctxt = int(parts[1])
    return cpu, ctxt


def parse_diskstats(text: str, disks: set[str] | None) -> tuple[int, int, int, int]:
    """Reads, writes, read sectors, written sectors summed over whole disks.

    `disks` is the set of real whole-disk names; None means "guess by name"
    (no partitions, loop, ram, device-mapper or md, which would double count).

    >>> line = "   8       0 sda 100 0 800 0 50 0 400 0 0 0 0\\n   8       1 sda1 90 0 700 0 40 0 300 0 0 0 0\\n"
    >>> parse_diskstats(line, {"sda"})
    (100, 50, 800, 400)
    """
    reads = writes = rsec = wsec = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 10:
            continue
        name = parts[2]
        if disks is not None:
            if name not in disks:
                continue
        elif _looks_virtual_or_partition(name):
            continue
        reads += int(parts[3])
        rsec += int(parts[5])
        writes += int(parts[7])
        wsec += int(parts[9])
    return reads, writes, rsec, wsec


def parse_disk_times(text: str, disks: set[str] | None) -> dict[str, DiskTimes]:
    """Busy, write and flush times per whole disk (the same disks as parse_diskstats).

    >>> line = "   8       0 sda 100 0 800 7 50 0 400 30 0 90 120 0 0 0 0 12 24\\n"
    >>> parse_disk_times(line, {"sda"})["sda"]
    DiskTimes(io_ms=90, writes=50, write_ms=30, flushes=12, flush_ms=24)
    """
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 13:
            continue
        name = parts[2]
        if (name not in disks) if disks is not None else _looks_virtual_or_partition(name):
            continue
        flushes = (int(parts[18]), int(parts[19])) if len(parts) >= 20 else (0, 0)
        out[name] = DiskTimes(int(parts[12]), int(parts[7]), int(parts[10]), *flushes)
    return out


def parse_procs_running(text: str) -> int | None:
    """Runnable tasks now, from /proc/stat (vmstat's r column).

    >>> parse_procs_running("cpu  1 2 3\\nprocs_running 3\\nprocs_blocked 0\\n")
    3
    """
    for line in text.splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    return None


def _looks_virtual_or_partition(name: str) -> bool:
    if name.startswith(("loop", "ram", "dm-", "md", "zram", "sr", "fd")):
        return True
    if name.startswith("nvme") or name.startswith("mmcblk"):
        return "p" in name.split("n", 2)[-1]
    return name[-1].isdigit()


def real_disks(sys_block: Path = Path("/sys/block")) -> set[str] | None:
    """Whole disks that are not virtual (loop, dm, md, zram live under /sys/devices/virtual)."""
    if not sys_block.is_dir():
        return None
    return {p.name for p in sys_block.iterdir() if "/virtual/" not in str(p.resolve())}


def read_counters(proc: Path = Path("/proc"), disks: set[str] | None = None) -> OSCounters:
    stat, diskstats = (proc / "stat").read_text(), (proc / "diskstats").read_text()
    cpu, ctxt = parse_stat(stat)
    reads, writes, rsec, wsec = parse_diskstats(diskstats, disks)
    return OSCounters(time.monotonic(), cpu, reads, writes, rsec, wsec, ctxt, parse_disk_times(diskstats, disks),
                      parse_procs_running(stat))


def others_busy_cores(window_s: float = 0.1, proc: Path = Path("/proc"),
                      sleep: Callable[[float], None] = time.sleep) -> float | None:
    """Cores this host's other processes kept busy over `window_s` (user,
    system, irq and softirq time less this process's own); None when /proc
    cannot say."""
    try:
        before, own_before, t0 = parse_stat((proc / "stat").read_text())[0], self_cpu_s(), time.monotonic()
        sleep(window_s)
        after, own_after, t1 = parse_stat((proc / "stat").read_text())[0], self_cpu_s(), time.monotonic()
    except (OSError, ValueError, IndexError):
        return None
    # /proc/stat's fields: user nice system idle iowait irq softirq steal
    busy = sum(after[i] - before[i] for i in (0, 1, 2, 5, 6)) / clock_ticks() - (own_after - own_before)
    return max(busy, 0.0) / max(t1 - t0, 1e-3)


class OSSource(Source):
    """This host's OS; meaningful when the server under test runs here."""

    kind = "os"

    def __init__(self, name: str = "os", target: Target | None = None, timeout_s: float = 5.0,
                 server_port: int | None = None, *, per_process: bool = True,
                 shared: LatestPass | None = None) -> None:
        super().__init__(name, target or Target(kind="null", host="localhost"), timeout_s, per_process=per_process)
        self._disks: set[str] | None = None
        self._prev: OSCounters | None = None
        self._server_port = server_port  # the local server's port: its process's CPU and memory too
        self._server_pid: int | None = None
        self._server_prev: tuple[float, float] | None = None  # (monotonic, cpu_s)
        self._disks_prev: tuple[float, dict[str, DiskCounters]] | None = None
        self._swap_prev: tuple[float, tuple[int, int]] | None = None
        self._procs_prev: tuple[float, dict[int, ProcCounters]] | None = None
        self._files = ProcFiles()
        self._shared = shared  # the run's own pass over /proc, read instead of another when recent

    def connect(self) -> None:
        try:
            self._disks = real_disks()
            read_counters(disks=self._disks)
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot read /proc: {exc}") from None

    def close(self) -> None:
        self._prev = None  # a rate across a gap would mislead
        self._files.close()

    def poll(self) -> SourceSnapshot:
        t0 = time.perf_counter()
        try:
            cur = read_counters(disks=self._disks)
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot read /proc: {exc}") from None
        prev, self._prev = self._prev, cur
        panels: dict[str, Any] = {}
        interval_s = None
        if prev is not None and cur.t > prev.t:
            d = cur.delta(prev)
            interval_s = d.seconds
            panels[CPU] = d.cpu_pct()
            panels[DISK] = {
                "read_kb_per_s": round(d.read_kb / d.seconds, 2),
                "write_kb_per_s": round(d.write_kb / d.seconds, 2),
                "reads_per_s": round(d.reads / d.seconds, 2),
                "writes_per_s": round(d.writes / d.seconds, 2),
            }
            busiest = d.busiest_disk()
            if busiest is not None:
                panels[DISK].update(device=busiest[0], **busiest[1].to_dict())
            if d.procs_running is not None:
                panels[RUN_QUEUE] = d.procs_running
            panels[CONTEXT_SWITCHES_PER_S] = round(d.context_switches / d.seconds, 1)
        self._host_state(panels)
        if self._server_port:
            # one pass over /proc for both panels: the run's own when it made one lately, unless each process's
            # row is shown (its I/O is read now, so its rates need a pass of now, not one up to a second old)
            shared = (self._shared.newest(SHARED_PASS_AGE_S) if self._shared is not None and not self.per_process
                      else None)
            taken = shared or read_pass(self._files)
            procs = self._tree(taken.stats)
            if self._server_pid not in procs:
                self._server_pid = listener_pid(self._server_port or 0)
                self._server_prev = None
                procs = self._tree(taken.stats)
            self._files.sweep()
            panels[SERVER_PROCESS] = self._server_process(procs, taken.t)
            panels[SERVER_PROCESSES] = (self._server_processes(procs, taken) if self.per_process
                                        else PER_PROCESS_NOT_READ)
        return self.snapshot(panels, t0, interval_s)

    def _tree(self, stats: Mapping[int, PidStat]) -> dict[int, ProcCounters]:
        if self._server_pid is None:
            return {}
        return tree_counters(self._server_pid, stats, self._files, memory=True, io=self.per_process)

    def _host_state(self, panels: dict[str, Any], proc: Path = Path("/proc")) -> None:
        """Load, memory and swap, and each disk (iostat -x)."""
        now = time.monotonic()
        try:
            panels[LOAD] = parse_loadavg((proc / "loadavg").read_text(), os.cpu_count() or 1)
        except (OSError, ValueError, IndexError):
            panels[LOAD] = Missing("no /proc/loadavg")
        try:
            memory: dict[str, Any] = dict(parse_meminfo((proc / "meminfo").read_text()))
            swap = parse_swapping((proc / "vmstat").read_text())
            prev, self._swap_prev = self._swap_prev, (now, swap)
            if prev is not None and now > prev[0]:
                page = os.sysconf("SC_PAGE_SIZE")
                memory["swap_in_bytes_per_s"] = round(max(swap[0] - prev[1][0], 0) * page / (now - prev[0]), 1)
                memory["swap_out_bytes_per_s"] = round(max(swap[1] - prev[1][1], 0) * page / (now - prev[0]), 1)
            panels[MEMORY] = memory
        except (OSError, ValueError):
            panels[MEMORY] = Missing("no /proc/meminfo")
        try:
            cur = parse_disks((proc / "diskstats").read_text(), self._disks, _looks_virtual_or_partition)
        except (OSError, ValueError):
            panels[DISKS] = Missing("no /proc/diskstats")
            return
        prev_disks, self._disks_prev = self._disks_prev, (now, cur)
        if prev_disks is not None and now > prev_disks[0]:
            panels[DISKS] = disk_rows(prev_disks[1], cur, now - prev_disks[0])

    def _server_processes(self, cur: dict[int, ProcCounters], taken: StatsPass, top: int = 50) -> Any:
        """Each process of the local server's tree with its CPU and I/O
        (pg_activity's per-backend CPU%, READ/s, WRITE/s), the busiest `top`
        (their titles alone are read)."""
        if self._server_pid is None:
            return Missing("server process not found", "run as root or as the server's user to find it by its port")
        now, stats = taken.t, taken.stats
        prev, self._procs_prev = self._procs_prev, (now, cur)
        if prev is None or now <= prev[0]:
            return []
        rows = process_rows(prev[1], cur, now - prev[0], clock_ticks())[:top]
        for r in rows:
            r["title"] = title(r["pid"], stats[r["pid"]].name, self._files)
        return rows

    def _server_process(self, procs: dict[int, ProcCounters], now: float) -> Any:
        """The server's process tree: memory, and CPU in cores over the interval
        (`now`: when its pass over /proc began)."""
        reading = tree_reading(procs, self._server_pid) if self._server_pid is not None else None
        if reading is None:
            return Missing("server process not found", "run as root or as the server's user to find it by its port")
        prev, self._server_prev = self._server_prev, (now, reading.cpu_s)
        cores = None
        if prev is not None and now > prev[0]:
            cores = round(max(reading.cpu_s - prev[1], 0.0) / (now - prev[0]), 3)
        return {"pid": self._server_pid, "name": process_name(self._server_pid), "processes": reading.pids,
                "rss_bytes": reading.rss_bytes, "cpu_cores": cores}
