"""The report's time series beyond throughput: latency percentiles per
interval, the server's and the OS's series from monitor.jsonl on the run's
time axis, the latency CDF, and the marks and knob changes every time plot
draws.  Plain data, as `benchtop.report.plots` draws it."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from benchtop.record.analysis import record_time
from benchtop.report.data import RunData
from benchtop.sources.fields import CLIENTS, CPU, DATABASE, DISK, INNODB, SERVER_PROCESS, WAL_BYTES_PER_S

MARK_KINDS = ("mark", "threads", "rate", "pause", "resume")
LATENCY_KEYS = ("p50", "p95", "p99")


def marks(runs: list[RunData]) -> tuple[tuple[float, str], ...]:
    """Marks and thread/rate changes on the timeline (prefixed with the run's
    name when several runs share the plot)."""
    out = []
    for r in runs:
        for ev in r.timeline:
            if ev.get("kind") in MARK_KINDS and "t" in ev:
                text = str(ev.get("text", ev["kind"]))
                out.append((float(ev["t"]), text if len(runs) == 1 else f"{r.name}: {text}"))
    return tuple(sorted(out))


def latency_series(r: RunData) -> list[tuple[str, tuple[float, ...], tuple[float, ...]]]:
    """(label, t, latency ms) per percentile over the run's intervals."""
    out = []
    for key in LATENCY_KEYS:
        pts = [(float(iv["t"]), float(iv["latency_ms"][key])) for iv in r.intervals
               if isinstance(iv.get("latency_ms"), Mapping) and isinstance(iv["latency_ms"].get(key), (int, float))]
        if pts:
            out.append((f"{r.label} {key}", tuple(x for x, _ in pts), tuple(y for _, y in pts)))
    return out


def type_latency_series(r: RunData, keys: tuple[str, ...] = ("p50", "p99")) -> list[tuple[str, tuple[float, ...], tuple[float, ...]]]:
    """(label, t, latency ms) per transaction type and percentile, for
    workloads with types (intervals.jsonl's txn_latency_ms)."""
    names: list[str] = []
    for iv in r.intervals:
        for name in iv.get("txn_latency_ms") or {}:
            if name not in names:
                names.append(name)
    out = []
    for name in names:
        for key in keys:
            pts = [(float(iv["t"]), float(iv["txn_latency_ms"][name][key])) for iv in r.intervals
                   if isinstance((iv.get("txn_latency_ms") or {}).get(name), Mapping)
                   and isinstance(iv["txn_latency_ms"][name].get(key), (int, float))]
            if pts:
                out.append((f"{r.label} {name} {key}", tuple(x for x, _ in pts), tuple(y for _, y in pts)))
    return out


def _get(d: Any, *path: str) -> float | None:
    for key in path:
        if not isinstance(d, Mapping):
            return None
        d = d.get(key)
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


Extractor = Callable[[str, Mapping[str, Any]], float | None]  # (source kind, source record) -> value


def _wal(kind: str, src: Mapping[str, Any]) -> float | None:
    if kind == "postgresql":
        v = _get(src, WAL_BYTES_PER_S)
    elif kind == "mysql":
        v = _get(src, INNODB, "redo_bytes_per_s")
    else:
        return None
    return None if v is None else v / 2**20


def _only(kind_wanted: str, *path: str, scale: float = 1.0) -> Extractor:
    def get(kind: str, src: Mapping[str, Any]) -> float | None:
        v = _get(src, *path) if kind == kind_wanted else None
        return None if v is None else v * scale

    return get


def _db_size(kind: str, src: Mapping[str, Any]) -> float | None:
    v = _get(src, DATABASE, "size_bytes") if kind in ("mysql", "postgresql") else None
    return None if v is None else v / 2**20


# (plot name, title, y label, [(series suffix, extractor)])
SERVER_PLOTS: tuple[tuple[str, str, str, tuple[tuple[str, Extractor], ...]], ...] = (
    ("wal_rate", "WAL (PostgreSQL) / redo (InnoDB) written, the server's counters", "MiB/s", (("", _wal),)),
    ("checkpoint_age", "InnoDB checkpoint age", "% of redo capacity",
     (("", _only("mysql", INNODB, "checkpoint_age_pct")),)),
    ("dirty_pages", "Dirty pages in the buffer pool", "% of pages", (("", _only("mysql", INNODB, "dirty_pages_pct")),)),
    ("disk", "Disk throughput (host, all its disks)", "MiB/s",
     (("read", _only("os", DISK, "read_kb_per_s", scale=1 / 1024)),
      ("write", _only("os", DISK, "write_kb_per_s", scale=1 / 1024)))),
    ("cpu", "CPU (host)", "%",
     (("user", _only("os", CPU, "user_pct")), ("sys", _only("os", CPU, "system_pct")),
      ("iowait", _only("os", CPU, "iowait_pct")))),
    ("database_size", "Database size", "MiB", (("", _db_size),)),
    ("server_rss", "Server memory (RSS)", "MiB", (("", _only("os", SERVER_PROCESS, "rss_bytes", scale=1 / 2**20)),)),
    ("pool_waits", "Clients waiting for a pool connection", "clients",
     (("", _only("pgbouncer", CLIENTS, "waiting")),)),
)


def server_series(r: RunData) -> dict[str, list[tuple[str, tuple[float, ...], tuple[float, ...]]]]:
    """Per plot name: (label, t, value) series of one run from its monitor records."""
    started_at = r.summary.get("started_at")
    points: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for rec in r.monitor:
        t = record_time(rec, started_at)
        if t is None:
            continue
        for src in rec["sources"].values():
            if not isinstance(src, Mapping) or not src.get("ok", True):
                continue
            kind = str(src.get("kind", ""))
            for name, _title, _ylabel, extractors in SERVER_PLOTS:
                for suffix, get in extractors:
                    v = get(kind, src)
                    if v is not None:
                        points.setdefault((name, suffix), []).append((t, v))
    out: dict[str, list[tuple[str, tuple[float, ...], tuple[float, ...]]]] = {}
    for name, _title, _ylabel, extractors in SERVER_PLOTS:
        for suffix, _get_value in extractors:
            pts = sorted(points.get((name, suffix), []))
            if pts:
                label = f"{r.label} {suffix}".rstrip()
                out.setdefault(name, []).append((label, tuple(x for x, _ in pts), tuple(y for _, y in pts)))
    return out
