"""How a run's costs read as text: the per-transaction line (summary, TUI,
report), the summary's cost lines, and the units they use.  The figures
themselves are measured by benchtop.run.costs."""

from __future__ import annotations

from typing import Any, Mapping

# How the per-type figures are shared out (no counter says which transaction
# wrote which byte): what is written goes to the types that write, an equal
# share per transaction (Callaghan's insert benchmark: WAL per insert is the
# run's WAL / inserts), a read-only query is charged none; the rest by each
# type's share of the workers' busy time (a new_order costs more CPU than an
# order_status).  Every per-type figure carries this text.
APPORTIONED = ("apportioned: host writes and WAL/redo to the types that write, per transaction; "
               "reads, CPU and context switches by busy time")


def log_name(engine: str) -> str:
    """What the server's log is called: InnoDB's is the redo log, not a WAL.

    >>> log_name("mysql"), log_name("postgres"), log_name("sqlite")
    ('redo', 'WAL', 'WAL')
    """
    return "redo" if engine == "mysql" else "WAL"


def kib(v: float) -> str:
    """Bytes per transaction in binary units, as read (1,559 B is 1.52 KiB).

    >>> kib(1559), kib(300), kib(5 * 2**20), kib(12.25 * 1024)
    ('1.52 KiB', '300 B', '5.00 MiB', '12.2 KiB')
    """
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            x = v / scale
            return f"{x:.2f} {unit}" if abs(x) < 10 else f"{x:.1f} {unit}" if abs(x) < 100 else f"{x:.0f} {unit}"
    return f"{v:.0f} B"


def per_op_parts(per_op: Mapping[str, Any], log: str = "WAL") -> list[tuple[str, str]]:
    """(group, text) of each known figure, the host's (vmstat/iostat: all
    the host's disks and CPUs) then the server's (its own counters)."""
    parts = []
    if per_op.get("reads") is not None:
        parts.append(("host", f"reads {per_op['reads']:.2f}"))
    if per_op.get("kb_read") is not None:
        parts.append(("host", f"read {kib(1024 * per_op['kb_read'])}"))
    if per_op.get("kb_written") is not None:
        parts.append(("host", f"written {kib(1024 * per_op['kb_written'])}"))
    if per_op.get("context_switches") is not None:
        parts.append(("host", f"cs {per_op['context_switches']:.1f}"))
    if per_op.get("cpu_s") is not None:
        parts.append(("host", f"CPU {1000 * per_op['cpu_s']:.3f} ms"))
    if per_op.get("wal_bytes") is not None:
        parts.append(("server", f"{log} {kib(per_op['wal_bytes'])}"))
    if per_op.get("server_cpu_s") is not None:
        parts.append(("server", f"CPU {1000 * per_op['server_cpu_s']:.3f} ms"))
    return parts


def per_op_line(per_op: Mapping[str, Any], log: str = "WAL", prefix: str = "per transaction: ") -> str:
    """The compact "per transaction" line (summary, TUI): the host's disk
    and CPU, then the server's own log bytes and CPU, each group named.

    >>> per_op_line({"reads": 0.5, "kb_read": 4.0, "kb_written": 12.25, "context_switches": 30.0,
    ...              "cpu_s": 0.00125, "wal_bytes": 2048.0, "server_cpu_s": 0.0008}, log="redo")
    'per transaction: host reads 0.50  read 4.00 KiB  written 12.2 KiB  cs 30.0  CPU 1.250 ms  server redo 2.00 KiB  CPU 0.800 ms'
    """
    out, group = [], ""
    for g, text in per_op_parts(per_op, log):
        out.append(f"{g} {text}" if g != group else text)
        group = g
    return prefix + ("  ".join(out) if out else "-")


def _bytes(v: Any) -> str:
    if not isinstance(v, (int, float)):
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f} B"


def costs_text(summary: Mapping[str, Any]) -> list[str]:
    """Lines for the end of the text summary."""
    lines = []
    log = summary.get("log_name") or "WAL"
    if summary.get("per_op"):
        lines.append(per_op_line(summary["per_op"], log))
    by_type = summary.get("by_type") or {}
    if by_type:
        lines.append(f"per type ({APPORTIONED}):")
    for name, po in by_type.items():
        lines.append(per_op_line(po, log, f"  {name} ({po.get('ops', 0)}): "))
    sizes = summary.get("sizes") or {}
    db, rss = sizes.get("database_bytes") or {}, sizes.get("server_rss_bytes") or {}
    if db.get("end") is not None or rss.get("end") is not None:
        lines.append(f"sizes: database {_bytes(db.get('start'))} -> {_bytes(db.get('end'))}, "
                     f"server RSS {_bytes(rss.get('start'))} -> {_bytes(rss.get('end'))}")
    totals = {k: v for k, v in (summary.get("totals") or {}).items() if v is not None}
    if totals:
        lines.append("totals: " + ", ".join(f"{log} {_bytes(v)}" if k == "wal_bytes" else f"{k} {v}"
                                            for k, v in totals.items()))
    cc = summary.get("client_cpu") or {}
    if cc.get("per_op_us") is not None:
        lines.append(f"client CPU: {cc['per_op_us']:.1f} us/transaction, {cc['cores']:.2f} cores"
                     + (f", host {cc['host_busy_pct']:.0f}% busy" if cc.get("host_busy_pct") is not None else ""))
    if cc.get("warning"):
        lines.append(f"warning: {cc['warning']}")
    flags = (summary.get("host") or {}).get("flags") or []
    if flags:  # the advice behind each is in summary.json and the report
        lines.append("host settings against benchmark advice: " + ", ".join(f.split(":", 1)[0] for f in flags))
    return lines
