"""This host as top, vmstat and iostat -x show it: CPU, load, memory and
swap, each disk's utilisation and latency, and the local server's processes
with their CPU and I/O (pg_activity's per-backend columns)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from benchtop.panels.units import ident, mib, mib_s, msec, num, pct, per_s
from benchtop.panels.views.spec import Col, TableSpec, facts, mapping_of, missing_line, panel_of
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import CONTEXT_SWITCHES_PER_S, CPU, DISK, DISKS, LOAD, MEMORY, SERVER_PROCESSES


def os_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    cpu, disk = mapping_of(panel_of(snap, CPU)), mapping_of(panel_of(snap, DISK))
    lines = [
        facts(
            [
                ("cpu user", pct(cpu.get("user_pct"))),
                ("system", pct(cpu.get("system_pct"))),
                ("iowait", pct(cpu.get("iowait_pct"))),
                ("steal", pct(cpu.get("steal_pct"))),
                ("context switches", per_s(panel_of(snap, CONTEXT_SWITCHES_PER_S))),
            ], width),
        facts(
            [
                ("disk read", mib_s((disk.get("read_kb_per_s") or 0) * 1024 if "read_kb_per_s" in disk else None)),
                ("write", mib_s((disk.get("write_kb_per_s") or 0) * 1024 if "write_kb_per_s" in disk else None)),
                ("reads", per_s(disk.get("reads_per_s"))),
                ("writes", per_s(disk.get("writes_per_s"))),
            ], width),
    ]
    load = panel_of(snap, LOAD)
    if isinstance(load, Mapping):
        lines.append(facts([("load", f"{num(load.get('load_1m') or 0)} {num(load.get('load_5m') or 0)} "
                                     f"{num(load.get('load_15m') or 0)}"),
                            ("per CPU", f"{load.get('load_per_cpu')} of {load.get('cpus')} CPUs"),
                            ("runnable", str(load.get("runnable"))),
                            ("tasks", str(load.get("tasks")))], width))
    mem = panel_of(snap, MEMORY)
    missing = missing_line("memory", mem)
    if missing is not None:
        lines.append(missing)
    elif isinstance(mem, Mapping):
        lines.append(facts([("memory used", f"{mib(mem.get('used_bytes'))} of {mib(mem.get('total_bytes'))}"),
                            ("available", mib(mem.get("available_bytes"))),
                            ("cached", mib(mem.get("cached_bytes"))),
                            ("dirty", mib(mem.get("dirty_bytes")))], width))
        swapping = (mem.get("swap_in_bytes_per_s") or 0) + (mem.get("swap_out_bytes_per_s") or 0)
        swap = facts([("swap used", f"{mib(mem.get('swap_used_bytes'))} of {mib(mem.get('swap_total_bytes'))}"),
                      ("in", mib_s(mem.get("swap_in_bytes_per_s"))),
                      ("out", mib_s(mem.get("swap_out_bytes_per_s")))], width,
                     "bold red" if swapping > 0 else "bold")
        lines.append(swap)
    return lines


def _disk_alert(row: Mapping[str, Any]) -> str | None:
    return "yellow" if (row.get("util_pct") or 0) >= 80 else None


OS_DISKS = TableSpec(
    DISKS,
    "disks (iostat -x: %util is time busy, await the mean time a request took)",
    (
        Col("Disk", "disk"),
        Col("%util", "util_pct", pct, True),
        Col("r/s", "reads_per_s", per_s, True),
        Col("w/s", "writes_per_s", per_s, True),
        Col("Read", "read_bytes_per_s", mib_s, True),
        Col("Written", "write_bytes_per_s", mib_s, True),
        Col("r_await", "r_await_ms", msec, True),
        Col("w_await", "w_await_ms", msec, True),
        Col("Queue", "queue", num, True, min_screen=100),
    ),
    "util_pct",
    alert=_disk_alert,
)


def _cpu(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v:.1f}%"


OS_PROCESSES = TableSpec(
    SERVER_PROCESSES,
    "the server's processes by CPU (a PostgreSQL backend's title: user, database, client, state)",
    (
        Col("PID", "pid", ident, True),
        Col("CPU", "cpu_pct", _cpu, True),
        Col("Read/s", "read_bytes_per_s", mib_s, True),
        Col("Write/s", "write_bytes_per_s", mib_s, True),
        Col("RSS", "rss_bytes", mib, True, min_screen=100),
        Col("Process", "title"),
    ),
    "cpu_pct",
    idle=lambda r: not r.get("cpu_pct") and not r.get("read_bytes_per_s") and not r.get("write_bytes_per_s"),
)
