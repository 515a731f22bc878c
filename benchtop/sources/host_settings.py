"""Host settings that change benchmark results (the kernel's, not the
server's): swappiness, the CPU frequency governor, the data device's I/O
scheduler and read-ahead, dirty page limits and transparent huge pages.
Recorded with every run, and flagged where they differ from the usual
benchmark advice (Percona's and PostgreSQL's tuning guides)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

PROC = Path("/proc")
SYS = Path("/sys")


@dataclass(frozen=True, slots=True)
class HostFlag:
    setting: str  # "vm.swappiness=60"
    advice: str  # what the usual benchmark advice is, and why

    def text(self) -> str:
        return f"{self.setting}: {self.advice}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _bracketed(text: str | None) -> str | None:
    """The selected value of a sysfs choice list: 'always [madvise] never' -> 'madvise'."""
    if text is None:
        return None
    if "[" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


def block_device(path: str | None, sys_root: Path = SYS) -> str | None:
    """The whole disk (sda, nvme0n1) holding `path`; None when unknown
    (a path on tmpfs or overlay has no block device)."""
    if not path:
        return None
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    link = sys_root / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    try:
        real = link.resolve(strict=True)
    except OSError:
        return None
    # a partition's folder sits inside its disk's, which has the queue/ folder
    for candidate in (real, real.parent):
        if (candidate / "queue").is_dir():
            return candidate.name
    return None


def read_host_settings(data_path: str | None = None, proc: Path = PROC, sys_root: Path = SYS) -> dict[str, Any]:
    """The settings as plain values (None where this host does not have them).
    `data_path`: a path on the database's data device (else the root file system)."""
    vm = proc / "sys" / "vm"
    governors = sorted({g for g in (_read(p) for p in (sys_root / "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")) if g})
    device = block_device(data_path or "/", sys_root)
    queue = sys_root / "block" / device / "queue" if device else None

    def num(path: Path) -> int | None:
        text = _read(path)
        return int(text) if text is not None and text.lstrip("-").isdigit() else None

    return {
        "swappiness": num(vm / "swappiness"),
        "dirty_ratio": num(vm / "dirty_ratio"),
        "dirty_bytes": num(vm / "dirty_bytes"),
        "dirty_background_ratio": num(vm / "dirty_background_ratio"),
        "dirty_background_bytes": num(vm / "dirty_background_bytes"),
        "cpu_governor": ",".join(governors) if governors else None,
        "transparent_hugepage": _bracketed(_read(sys_root / "kernel/mm/transparent_hugepage/enabled")),
        "data_path": data_path,
        "data_device": device,
        "io_scheduler": _bracketed(_read(queue / "scheduler")) if queue else None,
        "read_ahead_kb": num(queue / "read_ahead_kb") if queue else None,
        "rotational": num(queue / "rotational") if queue else None,
    }


def host_flags(s: Mapping[str, Any]) -> list[HostFlag]:
    """
    >>> [f.setting for f in host_flags({"swappiness": 60, "cpu_governor": "powersave",
    ...     "transparent_hugepage": "always", "dirty_ratio": 20, "dirty_bytes": 0,
    ...     "io_scheduler": "bfq", "read_ahead_kb": 4096, "rotational": 0})]
    ['vm.swappiness=60', 'cpu governor=powersave', 'transparent_hugepage=always', 'vm.dirty_ratio=20', 'io scheduler=bfq', 'read_ahead_kb=4096']
    >>> host_flags({"swappiness": 1, "cpu_governor": "performance", "transparent_hugepage": "never",
    ...             "dirty_bytes": 268435456, "io_scheduler": "none", "read_ahead_kb": 128})
    []
    """
    out = []
    swap = s.get("swappiness")
    if isinstance(swap, int) and swap > 10:
        out.append(HostFlag(f"vm.swappiness={swap}", "advice is 1-10, so the buffer pool is not swapped out under pressure"))
    gov = s.get("cpu_governor")
    if gov and gov != "performance":
        out.append(HostFlag(f"cpu governor={gov}", "advice is 'performance': frequency scaling adds latency and run-to-run noise"))
    thp = s.get("transparent_hugepage")
    if thp == "always":
        out.append(HostFlag("transparent_hugepage=always", "advice is 'never' or 'madvise': THP compaction stalls database servers"))
    ratio, dbytes = s.get("dirty_ratio"), s.get("dirty_bytes")
    if not dbytes and isinstance(ratio, int) and ratio >= 20:
        out.append(HostFlag(f"vm.dirty_ratio={ratio}", "advice is a small vm.dirty_bytes / dirty_background_bytes: "
                                                      "a large dirty page cache flushes in bursts (write stalls)"))
    sched = s.get("io_scheduler")
    if sched in ("bfq", "cfq") and not s.get("rotational"):
        out.append(HostFlag(f"io scheduler={sched}", "advice for SSD/NVMe is 'none' or 'mq-deadline'"))
    ra = s.get("read_ahead_kb")
    if isinstance(ra, int) and ra > 512:
        out.append(HostFlag(f"read_ahead_kb={ra}", "advice is 128 KB or less for random-I/O OLTP: larger read-ahead reads pages nobody asked for"))
    return out
