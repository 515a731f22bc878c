"""What a run's operations cost, as values and as text.

The values: `Work` (what the host did between two readings), `PerOp` (it
per transaction), `ClientCpu`, and what an interval (`IntervalCosts`) and a
whole run (`RunCosts`: per type, sizes, totals, host advice) carry; each
`to_dict()` is its JSON in interval lines and summary.json, and
`RunCosts.from_dict` reads a summary back (a results folder, old or new).
The text: the per-transaction line (summary, TUI, report), the summary's
cost lines, and the units they use.  The figures themselves are measured by
benchtop.run.costs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from benchtop.sources.os import OSDelta

# How the per-type figures are shared out (no counter says which transaction
# wrote which byte): what is written goes to the types that write, an equal
# share per transaction (Callaghan's insert benchmark: WAL per insert is the
# run's WAL / inserts), a read-only query is charged none; the rest by each
# type's share of the workers' service time (a new_order costs more CPU than an
# order_status), from each transaction's actual start: an open-loop type's wait
# for its ticket costs the host nothing.  Every per-type figure carries this text.
APPORTIONED = ("apportioned: host writes and WAL/redo to the types that write, per transaction; "
               "reads, CPU and context switches by service time")


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


def _round(v: float) -> float:
    return round(v, 6) if abs(v) < 10 else round(v, 3)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


@dataclass(frozen=True, slots=True)
class PerOp:
    """Each amount per transaction (None when unknown or nothing ran)."""

    reads: float | None = None  # the host's, vmstat/iostat: all its disks and CPUs
    kb_read: float | None = None
    kb_written: float | None = None
    context_switches: float | None = None
    cpu_s: float | None = None
    wal_bytes: float | None = None  # the server's own counters
    server_cpu_s: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"reads": self.reads, "kb_read": self.kb_read, "kb_written": self.kb_written,
                "context_switches": self.context_switches, "cpu_s": self.cpu_s, "wal_bytes": self.wal_bytes,
                "server_cpu_s": self.server_cpu_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PerOp:
        return cls(_num(d.get("reads")), _num(d.get("kb_read")), _num(d.get("kb_written")),
                   _num(d.get("context_switches")), _num(d.get("cpu_s")), _num(d.get("wal_bytes")),
                   _num(d.get("server_cpu_s")))


@dataclass(frozen=True, slots=True)
class Work:
    """What the host did between two readings (absolute amounts, not per op)."""

    seconds: float
    reads: float = 0.0
    kb_read: float = 0.0
    kb_written: float = 0.0
    context_switches: float = 0.0
    cpu_s: float = 0.0  # host user+sys (+irq, steal) CPU seconds
    idle_s: float = 0.0  # host idle + iowait CPU seconds
    wal_bytes: float | None = None
    server_cpu_s: float | None = None
    client_cpu_s: float = 0.0
    has_os: bool = True

    def per_op(self, ops: float) -> PerOp:
        """Each amount divided by the operations (None when unknown or no ops).

        >>> Work(1.0, reads=20, kb_read=160.0, kb_written=80.0, context_switches=1000, cpu_s=0.5).per_op(10).kb_read
        16.0
        >>> Work(1.0).per_op(0).cpu_s is None
        True
        """
        def div(v: float | None) -> float | None:
            if v is None or ops <= 0:
                return None
            return _round(v / ops)

        os_ok = self.has_os
        return PerOp(
            reads=div(self.reads if os_ok else None),
            kb_read=div(self.kb_read if os_ok else None),
            kb_written=div(self.kb_written if os_ok else None),
            context_switches=div(self.context_switches if os_ok else None),
            cpu_s=div(self.cpu_s if os_ok else None),
            wal_bytes=div(self.wal_bytes),
            server_cpu_s=div(self.server_cpu_s),
        )

    def split_writes(self) -> tuple["Work", "Work"]:
        """(everything but what was written, only what was written).

        >>> rest, writes = Work(1.0, kb_read=8.0, kb_written=4.0, cpu_s=0.5, wal_bytes=100.0).split_writes()
        >>> (rest.kb_written, rest.wal_bytes, rest.cpu_s), (writes.kb_written, writes.wal_bytes, writes.cpu_s)
        ((0.0, None, 0.5), (4.0, 100.0, 0.0))
        """
        rest = Work(self.seconds, self.reads, self.kb_read, 0.0, self.context_switches, self.cpu_s, self.idle_s,
                    None, self.server_cpu_s, self.client_cpu_s, self.has_os)
        return rest, Work(0.0, kb_written=self.kb_written, wal_bytes=self.wal_bytes, has_os=self.has_os)

    def scaled(self, share: float) -> "Work":
        return Work(self.seconds, self.reads * share, self.kb_read * share, self.kb_written * share,
                    self.context_switches * share, self.cpu_s * share, self.idle_s * share,
                    None if self.wal_bytes is None else self.wal_bytes * share,
                    None if self.server_cpu_s is None else self.server_cpu_s * share,
                    self.client_cpu_s * share, self.has_os)

    def plus(self, other: "Work") -> "Work":
        def add(a: float | None, b: float | None) -> float | None:
            return b if a is None else a if b is None else a + b

        return Work(self.seconds + other.seconds, self.reads + other.reads, self.kb_read + other.kb_read,
                    self.kb_written + other.kb_written, self.context_switches + other.context_switches,
                    self.cpu_s + other.cpu_s, self.idle_s + other.idle_s, add(self.wal_bytes, other.wal_bytes),
                    add(self.server_cpu_s, other.server_cpu_s), self.client_cpu_s + other.client_cpu_s,
                    self.has_os and other.has_os)

    @property
    def host_busy_pct(self) -> float | None:
        total = self.cpu_s + self.idle_s
        return round(100.0 * self.cpu_s / total, 1) if self.has_os and total > 0 else None


@dataclass(frozen=True, slots=True)
class ClientCpu:
    """benchtop's own CPU over a stretch, and a warning when it may be what the result measures."""

    cpu_s: float = 0.0
    per_op_us: float | None = None
    cores: float = 0.0
    per_worker_cores: float | None = None
    host_busy_pct: float | None = None
    warning: str | None = None
    # of cpu_s, what benchtop's readings of the local server's processes in /proc took (the run's total only)
    readings_cpu_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"cpu_s": self.cpu_s, "per_op_us": self.per_op_us, "cores": self.cores,
               "per_worker_cores": self.per_worker_cores, "host_busy_pct": self.host_busy_pct,
               "warning": self.warning}
        if self.readings_cpu_s is not None:  # a run's total beside a local server (intervals have none)
            out["readings_cpu_s"] = self.readings_cpu_s
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClientCpu:
        warning = d.get("warning")
        return cls(_num(d.get("cpu_s")) or 0.0, _num(d.get("per_op_us")), _num(d.get("cores")) or 0.0,
                   _num(d.get("per_worker_cores")), _num(d.get("host_busy_pct")),
                   str(warning) if warning else None, _num(d.get("readings_cpu_s")))


@dataclass(frozen=True, slots=True)
class TypeCost:
    """One transaction type's share of the run's work (APPORTIONED)."""

    ops: int
    per_op: PerOp
    apportioned: str = APPORTIONED

    def to_dict(self) -> dict[str, Any]:
        return {"ops": self.ops, **self.per_op.to_dict(), "apportioned": self.apportioned}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TypeCost:
        return cls(_int(d.get("ops")) or 0, PerOp.from_dict(d), str(d.get("apportioned") or APPORTIONED))


@dataclass(frozen=True, slots=True)
class Growth:
    """A size at the run's start and end (bytes), and its growth per hour."""

    start: int | None = None
    end: int | None = None
    growth_per_hour: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "growth_per_hour": self.growth_per_hour}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Growth:
        return cls(_int(d.get("start")), _int(d.get("end")), _num(d.get("growth_per_hour")))


@dataclass(frozen=True, slots=True)
class Sizes:
    database_bytes: Growth = field(default_factory=Growth)
    server_rss_bytes: Growth = field(default_factory=Growth)

    def to_dict(self) -> dict[str, Any]:
        return {"database_bytes": self.database_bytes.to_dict(), "server_rss_bytes": self.server_rss_bytes.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sizes:
        return cls(Growth.from_dict(_map(d.get("database_bytes"))), Growth.from_dict(_map(d.get("server_rss_bytes"))))


@dataclass(frozen=True, slots=True)
class Totals:
    """The run's totals from the target's counters (None where unknown)."""

    wal_bytes: int | None = None
    checkpoints_timed: int | None = None
    checkpoints_requested: int | None = None
    rows_inserted: int | None = None
    rows_updated: int | None = None
    rows_deleted: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {"wal_bytes": self.wal_bytes, "checkpoints_timed": self.checkpoints_timed,
                "checkpoints_requested": self.checkpoints_requested, "rows_inserted": self.rows_inserted,
                "rows_updated": self.rows_updated, "rows_deleted": self.rows_deleted}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Totals:
        return cls(_int(d.get("wal_bytes")), _int(d.get("checkpoints_timed")), _int(d.get("checkpoints_requested")),
                   _int(d.get("rows_inserted")), _int(d.get("rows_updated")), _int(d.get("rows_deleted")))


@dataclass(frozen=True, slots=True)
class HostAdvice:
    """The host's settings as the run began, and those against benchmark advice (one text each)."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    flags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "flags": list(self.flags)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HostAdvice:
        return cls(_map(d.get("settings")), tuple(str(f) for f in d.get("flags") or ()))


@dataclass(frozen=True, slots=True)
class IntervalCosts:
    """What an interval cost: per transaction, and the client's CPU (in its
    JSON line); the work and the OS counters' difference serve the verdict
    and the per-type shares, and no line prints them."""

    per_op: PerOp
    client_cpu: ClientCpu
    work: Work
    log_name: str = "WAL"
    os: OSDelta | None = None


@dataclass(frozen=True, slots=True)
class RunCosts:
    """What a run (or a scenario) cost: summary.json's per_op, log_name,
    by_type, sizes, totals, client_cpu and host objects.  One read back from
    a folder may lack any of them (older runs, a scenario's steps)."""

    per_op: PerOp | None = None
    log_name: str = "WAL"
    by_type: Mapping[str, TypeCost] = field(default_factory=dict)
    sizes: Sizes | None = None
    totals: Totals | None = None
    client_cpu: ClientCpu | None = None
    host: HostAdvice | None = None

    def to_dict(self) -> dict[str, Any]:
        """The objects as summary.json has them, in its order."""
        out: dict[str, Any] = {}
        if self.per_op is not None:
            out["per_op"] = self.per_op.to_dict()
        out["log_name"] = self.log_name
        out["by_type"] = {name: t.to_dict() for name, t in self.by_type.items()}
        if self.sizes is not None:
            out["sizes"] = self.sizes.to_dict()
        if self.totals is not None:
            out["totals"] = self.totals.to_dict()
        if self.client_cpu is not None:
            out["client_cpu"] = self.client_cpu.to_dict()
        if self.host is not None:
            out["host"] = self.host.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunCosts:
        """The costs of a summary (or a scenario's step) read from JSON."""
        def part(key: str) -> Mapping[str, Any] | None:
            v = d.get(key)
            return v if isinstance(v, Mapping) else None

        per_op, sizes, totals, cc, host = (part(k) for k in ("per_op", "sizes", "totals", "client_cpu", "host"))
        return cls(per_op=PerOp.from_dict(per_op) if per_op else None,
                   log_name=str(d.get("log_name") or "WAL"),
                   by_type={str(k): TypeCost.from_dict(v) for k, v in _map(d.get("by_type")).items()
                            if isinstance(v, Mapping)},
                   sizes=Sizes.from_dict(sizes) if sizes else None,
                   totals=Totals.from_dict(totals) if totals else None,
                   client_cpu=ClientCpu.from_dict(cc) if cc else None,
                   host=HostAdvice.from_dict(host) if host else None)


def per_op_parts(per_op: PerOp, log: str = "WAL") -> list[tuple[str, str]]:
    """(group, text) of each known figure, the host's (vmstat/iostat: all
    the host's disks and CPUs) then the server's (its own counters)."""
    parts = []
    if per_op.reads is not None:
        parts.append(("host", f"reads {per_op.reads:.2f}"))
    if per_op.kb_read is not None:
        parts.append(("host", f"read {kib(1024 * per_op.kb_read)}"))
    if per_op.kb_written is not None:
        parts.append(("host", f"written {kib(1024 * per_op.kb_written)}"))
    if per_op.context_switches is not None:
        parts.append(("host", f"cs {per_op.context_switches:.1f}"))
    if per_op.cpu_s is not None:
        parts.append(("host", f"CPU {1000 * per_op.cpu_s:.3f} ms"))
    if per_op.wal_bytes is not None:
        parts.append(("server", f"{log} {kib(per_op.wal_bytes)}"))
    if per_op.server_cpu_s is not None:
        parts.append(("server", f"CPU {1000 * per_op.server_cpu_s:.3f} ms"))
    return parts


def per_op_line(per_op: PerOp, log: str = "WAL", prefix: str = "per transaction: ") -> str:
    """The compact "per transaction" line (summary, TUI): the host's disk
    and CPU, then the server's own log bytes and CPU, each group named.

    >>> per_op_line(PerOp(reads=0.5, kb_read=4.0, kb_written=12.25, context_switches=30.0,
    ...                   cpu_s=0.00125, wal_bytes=2048.0, server_cpu_s=0.0008), log="redo")
    'per transaction: host reads 0.50  read 4.00 KiB  written 12.2 KiB  cs 30.0  CPU 1.250 ms  server redo 2.00 KiB  CPU 0.800 ms'
    """
    out, group = [], ""
    for g, text in per_op_parts(per_op, log):
        out.append(f"{g} {text}" if g != group else text)
        group = g
    return prefix + ("  ".join(out) if out else "-")


def _bytes(v: float | None) -> str:
    if v is None:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f} B"


def costs_text(costs: RunCosts | None) -> list[str]:
    """Lines for the end of the text summary."""
    if costs is None:
        return []
    lines = []
    log = costs.log_name
    if costs.per_op is not None:
        lines.append(per_op_line(costs.per_op, log))
    if costs.by_type:
        lines.append(f"per type ({APPORTIONED}):")
    for name, t in costs.by_type.items():
        lines.append(per_op_line(t.per_op, log, f"  {name} ({t.ops}): "))
    if costs.sizes is not None:
        db, rss = costs.sizes.database_bytes, costs.sizes.server_rss_bytes
        if db.end is not None or rss.end is not None:
            lines.append(f"sizes: database {_bytes(db.start)} -> {_bytes(db.end)}, "
                         f"server RSS {_bytes(rss.start)} -> {_bytes(rss.end)}")
    totals = {k: v for k, v in costs.totals.to_dict().items() if v is not None} if costs.totals is not None else {}
    if totals:
        lines.append("totals: " + ", ".join(f"{log} {_bytes(v)}" if k == "wal_bytes" else f"{k} {v}"
                                            for k, v in totals.items()))
    cc = costs.client_cpu
    if cc is not None and cc.per_op_us is not None:
        lines.append(f"client CPU: {cc.per_op_us:.1f} µs/transaction, {cc.cores:.2f} cores"
                     + (f", host {cc.host_busy_pct:.0f}% busy" if cc.host_busy_pct is not None else ""))
    if cc is not None and cc.warning:
        lines.append(f"warning: {cc.warning}")
    flags = costs.host.flags if costs.host is not None else ()
    if flags:  # the advice behind each is in summary.json and the report
        lines.append("host settings against benchmark advice: " + ", ".join(f.split(":", 1)[0] for f in flags))
    return lines
