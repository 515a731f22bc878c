"""This host's CPU and disk."""

from __future__ import annotations

from rich.text import Text

from benchtop.panels.views.spec import facts, mapping_of, panel_of
from benchtop.panels.units import mib_s, pct, per_s
from benchtop.sources.base import SourceSnapshot


def os_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    cpu, disk = mapping_of(panel_of(snap, "cpu")), mapping_of(panel_of(snap, "disk"))
    return [
        facts(
            [
                ("cpu user", pct(cpu.get("user_pct"))),
                ("system", pct(cpu.get("system_pct"))),
                ("iowait", pct(cpu.get("iowait_pct"))),
                ("steal", pct(cpu.get("steal_pct"))),
                ("context switches", per_s(panel_of(snap, "context_switches_per_s"))),
            ], width),
        facts(
            [
                ("disk read", mib_s((disk.get("read_kb_per_s") or 0) * 1024 if "read_kb_per_s" in disk else None)),
                ("write", mib_s((disk.get("write_kb_per_s") or 0) * 1024 if "write_kb_per_s" in disk else None)),
                ("reads", per_s(disk.get("reads_per_s"))),
                ("writes", per_s(disk.get("writes_per_s"))),
            ], width),
    ]
