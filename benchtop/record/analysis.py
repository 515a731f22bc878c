"""What a run's numbers mean: steady state, stalls, and whether the target's
settings make the result comparable with durable ones.

Works on plain data (interval dicts as in intervals.jsonl, monitor records as
in monitor.jsonl, settings panels as the sources produce them) so the report,
the scenario runner and the headless summary share one implementation.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from benchtop.record.folder import CONFIG, MONITOR, SUMMARY, FolderReader
from benchtop.record.workers import workers_of
from benchtop.sources.base import SourceError
from benchtop.sources.fields import BINLOG, CHECKPOINTS, CLIENTS, CLIENT_STATES, SETTINGS, WAL_BYTES_PER_S, InnoDBPanel
from benchtop.sources.registry import source_class
from benchtop.target import TargetError
from benchtop.verdict.stretch import stretch_text, stretch_verdict

DEFAULT_STALL_FRACTION = 0.5


# ------------------------------------------------------------------ steady state


@dataclass(frozen=True, slots=True)
class SteadyState:
    """Per-interval TPS after the warm-up."""

    samples: int
    median: float
    mean: float
    stddev: float
    min: float
    max: float

    @property
    def cv(self) -> float:
        """Coefficient of variation: stddev relative to the mean."""
        return self.stddev / self.mean if self.mean else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}
        d["cv"] = round(self.cv, 4)
        return d


def steady_state(tps: Sequence[float]) -> SteadyState:
    """
    >>> s = steady_state([100, 110, 90, 100])
    >>> s.median, s.mean, round(s.stddev, 2)
    (100.0, 100.0, 8.16)
    """
    values = [float(v) for v in tps]
    if not values:
        return SteadyState(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return SteadyState(
        samples=len(values),
        median=float(statistics.median(values)),
        mean=statistics.fmean(values),
        stddev=statistics.stdev(values) if len(values) > 1 else 0.0,
        min=min(values),
        max=max(values),
    )


def after_warmup(intervals: Iterable[Mapping[str, Any]], warmup_s: float, start_s: float = 0.0) -> list[Mapping[str, Any]]:
    """Intervals that begin at or after start + warm-up (an interval's `t` is its end)."""
    out = []
    for iv in intervals:
        dt = float(iv.get("dt", 1.0))
        if float(iv["t"]) - dt >= start_s + warmup_s - 1e-3 * dt:
            out.append(iv)
    return out


# ------------------------------------------------------------------ stalls


@dataclass(frozen=True, slots=True)
class Stall:
    start: float  # run seconds
    duration: float
    min_tps: float
    seen: tuple[str, ...] = ()  # what the monitor sources recorded around it

    def to_dict(self) -> dict[str, Any]:
        return {"start": round(self.start, 3), "duration": round(self.duration, 3),
                "min_tps": round(self.min_tps, 2), "seen": list(self.seen)}


def find_stalls(intervals: Sequence[Mapping[str, Any]], median: float,
                fraction: float = DEFAULT_STALL_FRACTION) -> list[Stall]:
    """Runs of consecutive intervals whose TPS is below `fraction` x median.
    Paused intervals are not stalls, nor are open-loop intervals that kept up
    with their arrival rate (a low rate chosen on purpose is not a stall).

    >>> ivs = [{"t": t, "tps": v} for t, v in enumerate([100, 100, 0, 10, 100, 30, 100], start=1)]
    >>> [(s.start, s.duration, s.min_tps) for s in find_stalls(ivs, 100.0)]
    [(2.0, 2.0, 0.0), (5.0, 1.0, 30.0)]
    >>> find_stalls([{"t": 1, "tps": 100}, {"t": 2, "tps": 20, "rate": 20.0}], 100.0)
    []
    """
    if median <= 0:
        return []
    limit = fraction * median
    stalls: list[Stall] = []
    current: list[Mapping[str, Any]] = []

    def close() -> None:
        if current:
            first_dt = _dt(current[0], None)
            start = float(current[0]["t"]) - first_dt
            end = float(current[-1]["t"])
            stalls.append(Stall(start, end - start, min(float(iv["tps"]) for iv in current)))
            current.clear()

    prev_t: float | None = None
    for iv in intervals:
        iv = dict(iv)
        iv.setdefault("dt", _dt(iv, prev_t))
        prev_t = float(iv["t"])
        tps = float(iv.get("tps", 0.0))
        kept_up = bool(iv.get("rate")) and tps >= 0.9 * float(iv["rate"])
        if tps < limit and not iv.get("paused") and not kept_up:
            current.append(iv)
        else:
            close()
    close()
    return stalls


def _dt(iv: Mapping[str, Any], prev_t: float | None) -> float:
    if "dt" in iv:
        return float(iv["dt"])
    if prev_t is not None:
        return max(float(iv["t"]) - prev_t, 1e-3)
    return 1.0


def record_time(record: Mapping[str, Any], started_at: float | None) -> float | None:
    """A monitor record's time in run seconds: `run_t` if the writer put it
    there, else its unix `t` minus the run's start."""
    if "run_t" in record:
        return float(record["run_t"])
    if started_at is not None and "t" in record:
        return float(record["t"]) - started_at
    return None


def sources_seen(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Checkpoint, WAL, binlog and pool events in consecutive monitor records.

    >>> recs = [{"sources": {"pg": {"kind": "postgresql", "ok": True, "checkpoints": {"timed": 3, "requested": 1},
    ...                             "wal_bytes_per_s": 1e6}}},
    ...         {"sources": {"pg": {"kind": "postgresql", "ok": True, "checkpoints": {"timed": 3, "requested": 2},
    ...                             "wal_bytes_per_s": 4.5e7}}}]
    >>> sources_seen(recs)
    ['pg: requested checkpoint', 'pg: WAL up to 42.9 MiB/s']
    """
    out: list[str] = []
    prev: dict[str, Mapping[str, Any]] = {}
    peaks: dict[tuple[str, str], float] = {}
    for rec in records:
        for name, src in (rec.get("sources") or {}).items():
            if not isinstance(src, Mapping):
                continue
            if not src.get("ok", True):
                _add(out, f"{name}: down ({src.get('error', 'no answer')})")
                continue
            kind = src.get("kind")
            before = prev.get(name)
            if kind == "postgresql":
                ck, ck0 = src.get(CHECKPOINTS), (before or {}).get(CHECKPOINTS)
                if isinstance(ck, Mapping) and isinstance(ck0, Mapping):
                    for key in ("timed", "requested"):
                        if _num(ck.get(key)) > _num(ck0.get(key)):
                            _add(out, f"{name}: {key} checkpoint")
                _peak(peaks, name, "WAL", src.get(WAL_BYTES_PER_S))
            elif kind == "mysql":
                binlog = src.get(BINLOG)
                if isinstance(binlog, Mapping) and _num(binlog.get("rotations")) > 0:
                    _add(out, f"{name}: binlog rotation")
                inn = InnoDBPanel.of(src)
                if inn is not None:
                    _peak(peaks, name, "checkpoint age", inn.checkpoint_age_pct)
                    _peak(peaks, name, "redo", inn.redo_bytes_per_s)
            elif kind == "pgbouncer":
                # client_states; recordings made before the SHOW CLIENTS list called it clients
                clients = src.get(CLIENT_STATES, src.get(CLIENTS))
                if isinstance(clients, Mapping) and _num(clients.get("waiting")) > 0:
                    _peak(peaks, name, "clients waiting", clients.get("waiting"))
            prev[name] = src
    for (name, what), value in peaks.items():
        if what in ("WAL", "redo"):
            _add(out, f"{name}: {what} up to {value / 2**20:.1f} MiB/s")
        elif what == "checkpoint age":
            _add(out, f"{name}: checkpoint age up to {value:.0f}%")
        else:
            _add(out, f"{name}: up to {value:.0f} {what}")
    return out


def _add(out: list[str], item: str) -> None:
    if item not in out:
        out.append(item)


def _peak(peaks: dict[tuple[str, str], float], name: str, what: str, value: Any) -> None:
    if isinstance(value, (int, float)) and value > 0:
        key = (name, what)
        peaks[key] = max(peaks.get(key, 0.0), float(value))


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def annotate_stalls(stalls: Sequence[Stall], records: Sequence[Mapping[str, Any]],
                    started_at: float | None, margin_s: float = 1.0) -> list[Stall]:
    """Each stall with what the monitor saw from just before it to just after
    (one record before the window is kept so counters can be compared)."""
    stamped = [(record_time(r, started_at), r) for r in records]
    timed = [(t, r) for t, r in stamped if t is not None]
    out = []
    for s in stalls:
        lo, hi = s.start - margin_s, s.start + s.duration + margin_s
        idx = [i for i, (t, _) in enumerate(timed) if lo <= t <= hi]
        if idx and idx[0] > 0:
            idx.insert(0, idx[0] - 1)
        window = [timed[i][1] for i in idx]
        out.append(Stall(s.start, s.duration, s.min_tps, tuple(sources_seen(window))))
    return out


# ------------------------------------------------------------------ validity


@dataclass(frozen=True, slots=True)
class Validity:
    """Whether the target could lose committed transactions in a crash."""

    status: str  # "durable", "crash-unsafe", "not crash-durable", "unknown", "no database"
    reasons: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    # every benchmark rule the settings break, each "rule: setting" (durability
    # ones too): the sysbench-tpcc tuning post's production rules and the
    # Optane post's recommended settings
    flags: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "durable"

    @property
    def label(self) -> str:
        """Short, for tables: 'ok', 'UNSAFE', 'NOT DURABLE', '?'."""
        return {"durable": "ok", "crash-unsafe": "UNSAFE", "not crash-durable": "NOT DURABLE",
                "no database": "n/a"}.get(self.status, "?")

    def text(self) -> str:
        """One line for the text summary."""
        if self.status == "durable":
            return "validity: durable settings (crash-safe)"
        if self.status in ("unknown", "no database"):
            return f"validity: {self.status}" + (f" ({'; '.join(self.reasons)})" if self.reasons else "")
        return (f"validity: {self.status.upper()} settings ({', '.join(self.reasons)}): "
                "not comparable with results on durable settings")

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "crash_safe": self.ok if self.status != "unknown" else None,
                "reasons": list(self.reasons), "flags": list(self.flags), "settings": dict(self.settings)}

    def flag_lines(self) -> list[str]:
        """One line per broken rule, for the text summary and the report."""
        return [f"validity: breaks {flag}" for flag in self.flags]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Validity":
        if not d:
            return cls("unknown", ("no settings recorded",))
        return cls(str(d.get("status", "unknown")), tuple(d.get("reasons") or ()), dict(d.get("settings") or {}),
                   tuple(d.get("flags") or ()))


MYSQL_KEYS = ("version", "innodb_flush_log_at_trx_commit", "sync_binlog", "innodb_doublewrite", "log_bin",
              "binlog_format", "innodb_flush_method", "innodb_checksum_algorithm", "innodb_checksums",
              "performance_schema")
PG_KEYS = ("server_version", "fsync", "full_page_writes", "synchronous_commit", "wal_level", "archive_mode",
           "max_wal_senders", "autovacuum")

# the rules a result is judged by (each flag names the one it breaks)
ACID = "ACID durability"
CRASH = "crash recovery"
PITR = "point-in-time recovery"
REPLICA = "replica-usable WAL"
AUTOVACUUM = "autovacuum on"
RECOMMENDED = "recommended settings"


def mysql_flags(s: Mapping[str, Any]) -> list[str]:
    """
    >>> mysql_flags({"innodb_flush_log_at_trx_commit": 2, "log_bin": "OFF", "innodb_doublewrite": "ON",
    ...              "innodb_checksum_algorithm": "none", "performance_schema": "OFF"})
    ['ACID durability: innodb_flush_log_at_trx_commit=2', 'point-in-time recovery: log_bin=OFF (no binary log to replay)', 'replica-usable WAL: log_bin=OFF (replicas read the binary log)', 'recommended settings: innodb_checksum_algorithm=none (page checksums off)', 'recommended settings: performance_schema=OFF']
    """
    out = []
    flush = s.get("innodb_flush_log_at_trx_commit")
    if flush is not None and str(flush) != "1":
        out.append(f"{ACID}: innodb_flush_log_at_trx_commit={flush}")
    binlog = s.get("log_bin")
    if binlog is not None and _on(binlog):
        if s.get("sync_binlog") is not None and str(s.get("sync_binlog")) != "1":
            out.append(f"{ACID}: sync_binlog={s.get('sync_binlog')} with the binary log on")
    elif binlog is not None:
        out.append(f"{PITR}: log_bin={binlog} (no binary log to replay)")
        out.append(f"{REPLICA}: log_bin={binlog} (replicas read the binary log)")
    dw = s.get("innodb_doublewrite")
    if dw is not None and not _on(dw):
        out.append(f"{CRASH}: innodb_doublewrite={dw} (torn pages cannot be repaired)")
    algo = str(s.get("innodb_checksum_algorithm") or "").lower()
    if algo in ("none", "strict_none"):
        out.append(f"{RECOMMENDED}: innodb_checksum_algorithm={algo} (page checksums off)")
    checksums = s.get("innodb_checksums")
    if checksums is not None and not _on(checksums):
        out.append(f"{RECOMMENDED}: innodb_checksums={checksums}")
    ps = s.get("performance_schema")
    if ps is not None and not _on(ps):
        out.append(f"{RECOMMENDED}: performance_schema={ps}")
    return out


def pg_flags(s: Mapping[str, Any]) -> list[str]:
    """
    >>> pg_flags({"fsync": "off", "full_page_writes": "on", "synchronous_commit": "on", "wal_level": "minimal",
    ...           "archive_mode": "off", "max_wal_senders": 0, "autovacuum": "off"})
    ['ACID durability: fsync=off', 'crash recovery: fsync=off', 'point-in-time recovery: wal_level=minimal', 'point-in-time recovery: archive_mode=off (no WAL archive)', 'replica-usable WAL: wal_level=minimal', 'replica-usable WAL: max_wal_senders=0', 'autovacuum on: autovacuum=off']
    """
    def off(key: str) -> bool:
        return str(s.get(key, "")).lower() == "off"

    out = []
    for key in ("fsync", "synchronous_commit"):
        if off(key):
            out.append(f"{ACID}: {key}=off")
    for key in ("fsync", "full_page_writes"):
        if off(key):
            out.append(f"{CRASH}: {key}=off")
    minimal = str(s.get("wal_level", "")).lower() == "minimal"
    if minimal:
        out.append(f"{PITR}: wal_level=minimal")
    if off("archive_mode"):
        out.append(f"{PITR}: archive_mode=off (no WAL archive)")
    if minimal:
        out.append(f"{REPLICA}: wal_level=minimal")
    if str(s.get("max_wal_senders", "")) == "0":
        out.append(f"{REPLICA}: max_wal_senders=0")
    if off("autovacuum"):
        out.append(f"{AUTOVACUUM}: autovacuum=off")
    return out
SQLITE_ENGINE_SYNCHRONOUS = "NORMAL"  # what native/driver_sqlite.c sets, with journal_mode=WAL


def _on(value: Any) -> bool:
    return str(value).upper() in ("ON", "1", "YES", "TRUE", "FAST")


def validity_from_settings(kind: str, settings: Mapping[str, Any] | None) -> Validity:
    """
    >>> validity_from_settings("mysql", {"innodb_flush_log_at_trx_commit": 2, "log_bin": "ON",
    ...                                  "sync_binlog": 0, "innodb_doublewrite": "ON"}).reasons
    ('innodb_flush_log_at_trx_commit=2', 'sync_binlog=0 with the binary log on')
    >>> validity_from_settings("postgresql", {"fsync": "on", "full_page_writes": "on",
    ...                                       "synchronous_commit": "on", "wal_level": "replica"}).status
    'durable'
    >>> validity_from_settings("sqlite", {"synchronous": "NORMAL"}).text()
    'validity: NOT CRASH-DURABLE settings (synchronous=NORMAL): not comparable with results on durable settings'
    """
    if kind == "null":
        return Validity("no database")
    if settings is None:
        return Validity("unknown", ("settings not readable",))
    reasons: list[str] = []
    if kind == "mysql":
        kept = {k: settings[k] for k in MYSQL_KEYS if k in settings}
        flush = settings.get("innodb_flush_log_at_trx_commit")
        if flush is not None and str(flush) != "1":
            reasons.append(f"innodb_flush_log_at_trx_commit={flush}")
        if _on(settings.get("log_bin")) and settings.get("sync_binlog") is not None and str(settings.get("sync_binlog")) != "1":
            reasons.append(f"sync_binlog={settings.get('sync_binlog')} with the binary log on")
        dw = settings.get("innodb_doublewrite")
        if dw is not None and not _on(dw):
            reasons.append(f"innodb_doublewrite={dw}")
        status = "crash-unsafe" if reasons else "durable"
        flags = mysql_flags(settings)
        if flush is None:
            status, reasons = "unknown", ["innodb_flush_log_at_trx_commit not readable"]
    elif kind == "postgresql":
        kept = {k: settings[k] for k in PG_KEYS if k in settings}
        for key in ("fsync", "full_page_writes", "synchronous_commit"):
            if str(settings.get(key, "")).lower() == "off":
                reasons.append(f"{key}=off")
        status = "crash-unsafe" if reasons else "durable"
        flags = pg_flags(settings)
        if "fsync" not in settings:
            status, reasons = "unknown", ["fsync not readable"]
    elif kind == "sqlite":
        sync = str(settings.get("synchronous", SQLITE_ENGINE_SYNCHRONOUS)).upper()
        kept = {"synchronous": sync, "journal_mode": settings.get("journal_mode", "WAL")}
        if sync in ("OFF", "0", "NORMAL", "1"):
            reasons.append(f"synchronous={sync}")
        status = "not crash-durable" if reasons else "durable"
        flags = [f"{ACID}: {r}" for r in reasons]
    else:
        return Validity("unknown", (f"no durability rules for {kind}",))
    return Validity(status, tuple(reasons), kept, tuple(flags))


def read_target_settings(target: Any, timeout_s: float = 5.0) -> Mapping[str, Any] | None:
    """One poll of the target's settings through its monitor source; None
    when the source is unavailable or the server cannot be read."""
    kind = getattr(target, "kind", "")
    if kind not in ("mysql", "postgresql"):
        return None
    try:
        source = source_class(kind)("target", target, timeout_s)
    except TargetError:  # the driver is not installed: only the verdict is lost
        return None
    try:
        source.connect()
        snap = source.poll()
    except SourceError:
        return None
    finally:
        source.close()
    settings = snap.panel(SETTINGS)
    return settings if isinstance(settings, Mapping) else None


def validity_from_snapshot(snap: Any) -> Validity | None:
    """The verdict from a monitor snapshot of the target (its `settings`
    panel), sparing a connection of our own; None if it has none."""
    settings = snap.panel(SETTINGS) if getattr(snap, "ok", False) else None
    if not isinstance(settings, Mapping) or snap.kind not in ("mysql", "postgresql"):
        return None
    return validity_from_settings(snap.kind, settings)


def target_validity(engine: str, target: Any) -> Validity:
    """The verdict for a run's target (SQLite: the engine's own pragmas)."""
    if engine == "sqlite":
        return validity_from_settings("sqlite", {"synchronous": SQLITE_ENGINE_SYNCHRONOUS})
    if engine in ("null", "fileio"):  # no database: durability of files is the file system's
        return validity_from_settings("null", None)
    return validity_from_settings(engine, read_target_settings(target))


# ------------------------------------------------------------------ a results folder

# timeline events after which the load is another one: steady state is per
# stretch between them (and per scenario step), never across them
KNOB_KINDS = ("threads", "rate", "pause", "resume", "instrumentation")


def paused_spans(events: Sequence[Mapping[str, Any]], end: float = float("inf")) -> list[tuple[float, float]]:
    """(from, to) of every user pause on the timeline (to the end if never resumed).

    >>> paused_spans([{"t": 5, "kind": "pause"}, {"t": 9, "kind": "resume"}, {"t": 20, "kind": "pause"}], 30)
    [(5.0, 9.0), (20.0, 30)]
    """
    spans: list[tuple[float, float]] = []
    since: float | None = None
    for ev in sorted(events, key=lambda e: float(e.get("t", 0.0))):
        kind, t = ev.get("kind"), float(ev.get("t", 0.0))
        if kind == "pause" and since is None:
            since = t
        elif kind == "resume" and since is not None:
            spans.append((since, t))
            since = None
    if since is not None:
        spans.append((since, end))
    return spans


def split_segments(intervals: Sequence[Mapping[str, Any]],
                   events: Sequence[Mapping[str, Any]] = ()) -> list[list[Mapping[str, Any]]]:
    """The intervals in stretches of one setting: a new stretch at every knob
    change on the timeline and every scenario step; the interval a change
    happened in (half one setting, half the other) and intervals that
    overlap a user pause belong to none.

    >>> ivs = [{"t": t, "tps": 100, "dt": 1} for t in range(1, 11)]
    >>> evs = [{"t": 3.5, "kind": "threads"}, {"t": 6.2, "kind": "pause"}, {"t": 7.5, "kind": "resume"}]
    >>> [[iv["t"] for iv in seg] for seg in split_segments(ivs, evs)]
    [[1, 2, 3], [5, 6], [9, 10]]
    >>> [len(seg) for seg in split_segments(ivs, [{"t": 5.004, "kind": "rate"}])]  # at an edge: no interval lost
    [5, 5]
    """
    changes = sorted(float(e["t"]) for e in events if e.get("kind") in KNOB_KINDS and "t" in e)
    pauses = paused_spans(events)
    out: list[list[Mapping[str, Any]]] = []
    current: list[Mapping[str, Any]] = []
    key: tuple[int, Any] | None = None
    prev_t: float | None = None
    for iv in intervals:
        end = float(iv["t"])
        start = end - _dt(iv, prev_t)
        prev_t = end
        # a change this close to an edge is at the edge (the timeline and the
        # engine read two clocks; a scenario changes knobs at its boundaries)
        tol = min(0.05 * (end - start), 0.05)
        mixed = any(start + tol < c < end - tol for c in changes)
        in_pause = bool(iv.get("paused")) or any(a < end - tol and b > start + tol for a, b in pauses)
        if mixed or in_pause:
            if current:
                out.append(current)
            current, key = [], None
            continue
        k = (sum(1 for c in changes if c <= start + tol), iv.get("step"))
        if k != key and current:
            out.append(current)
            current = []
        key = k
        current.append(iv)
    if current:
        out.append(current)
    return out


def _usual(seg: Sequence[Mapping[str, Any]], key: str, default: Any = None) -> Any:
    """The setting most of a stretch's intervals read.  Not the last one's:
    an interval that ends a few milliseconds after a knob change belongs to
    the stretch before it (split_segments) but reads the new setting.

    >>> _usual([{"threads": 4}, {"threads": 4}, {"threads": 5}], "threads")
    4
    """
    return Counter(iv.get(key, default) for iv in seg).most_common(1)[0][0]


def _clock(seconds: float) -> str:
    s = int(max(seconds, 0.0))
    return f"{s // 60}:{s % 60:02d}"


def analyse(intervals: Sequence[Mapping[str, Any]], warmup_s: float = 0.0, start_s: float = 0.0,
            records: Sequence[Mapping[str, Any]] = (), started_at: float | None = None,
            fraction: float = DEFAULT_STALL_FRACTION, events: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """`steady_state`, `segments` and `stalls` for summary.json, over
    intervals after the warm-up: steady state per stretch between knob
    changes (`events`, the timeline) and per scenario step, with the
    longest stretch as the run's `steady_state`; stalls against their own
    stretch's median; paused time is neither."""
    kept = after_warmup(intervals, warmup_s, start_s)
    segments = []
    stalls: list[Stall] = []
    for seg in split_segments(kept, events):
        ss = steady_state([float(iv["tps"]) for iv in seg])
        first_dt = _dt(seg[0], None)
        workers = Counter(workers_of(iv) for iv in seg).most_common(1)[0][0]  # as _usual
        d = {"t_start": round(float(seg[0]["t"]) - first_dt, 3), "t_end": round(float(seg[-1]["t"]), 3),
             **workers.to_dict(), "rate": _usual(seg, "rate", 0), **ss.to_dict()}
        if seg[-1].get("step") is not None:
            d["step"] = seg[-1]["step"]
        verdict = stretch_verdict(seg)
        if verdict is not None:
            d["verdict"] = verdict
        segments.append(d)
        stalls += find_stalls(seg, ss.median, fraction)
    stalls = annotate_stalls(stalls, records, started_at)
    longest = max(reversed(segments), key=lambda d: d["samples"], default=None)
    return {"steady_state": longest or steady_state([]).to_dict(), "segments": segments,
            "stall_fraction": fraction, "stalls": [s.to_dict() for s in stalls]}


def enrich_results(folder: Path, validity: Validity | None = None, fraction: float = DEFAULT_STALL_FRACTION) -> dict[str, Any]:
    """Add steady state, stalls (and validity, when given) to a finished
    run's summary.json; returns the new summary.  The intervals in the
    folder are already past the run's warm-up."""
    path = folder / SUMMARY
    summary = json.loads(path.read_text())
    results = FolderReader(folder)
    intervals = results.intervals()
    records = results.records(MONITOR)
    # the timeline is on the run's clock, the intervals after its warm-up
    warmup = float((_read_config(folder).get("warmup_s") or 0.0))
    events = [dict(ev, t=float(ev["t"]) - warmup) for ev in results.timeline() if "t" in ev]
    summary.update(analyse(intervals, records=records, started_at=summary.get("started_at"), fraction=fraction,
                           events=events))
    if validity is not None:
        summary["validity"] = validity.to_dict()
    tmp = folder / f".{SUMMARY}.tmp"
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    tmp.replace(path)
    return summary


def _read_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / CONFIG).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return config if isinstance(config, dict) else {}


def _steady_line(ss: Mapping[str, Any]) -> str:
    return (f"median {ss['median']:.2f} tps, mean {ss['mean']:.2f}, stddev {ss['stddev']:.2f} "
            f"({100 * ss.get('cv', 0):.1f}%) over {ss['samples']} intervals")


def _setting(seg: Mapping[str, Any]) -> str:
    rate = seg.get("rate") or 0
    return workers_of(seg).setting + (f", rate {rate:g}/s" if rate else "")


def analysis_text(summary: Mapping[str, Any]) -> str:
    """Lines for the end of the text summary: steady state per stretch
    between knob changes (per step in a scenario), stalls, validity."""
    lines = []
    steps = [s for s in summary.get("steps") or [] if isinstance(s, Mapping) and "index" in s]
    if steps:
        lines.append("steady state per step:")
        for st in steps:
            ss = st.get("steady_state") or {}
            if ss.get("samples"):
                lines.append(f"  step {st['index'] + 1} ({_setting(st)}): {_steady_line(ss)}")
                if ss.get("verdict"):
                    lines.append(f"    {stretch_text(ss['verdict'])}")
            segs = st.get("segments") or []
            if len(segs) > 1:
                for seg in segs:
                    lines.append(f"    {_clock(seg['t_start'])}-{_clock(seg['t_end'])} ({_setting(seg)}): "
                                 f"{_steady_line(seg)}")
    else:
        segs = [seg for seg in summary.get("segments") or [] if seg.get("samples")]
        ss = summary.get("steady_state")
        if len(segs) > 1:
            lines.append("steady state per stretch between knob changes:")
            for seg in segs:
                lines.append(f"  {_clock(seg['t_start'])}-{_clock(seg['t_end'])} ({_setting(seg)}): {_steady_line(seg)}")
                if seg.get("verdict"):
                    lines.append(f"    {stretch_text(seg['verdict'])}")
        elif ss and ss.get("samples"):
            lines.append(f"steady state: {_steady_line(ss)}")
            if ss.get("verdict"):
                lines.append(f"what limits it: {stretch_text(ss['verdict'])}")
    for st in summary.get("stalls") or []:
        seen = f"; {', '.join(st['seen'])}" if st.get("seen") else ""
        lines.append(f"stall at {st['start']:.0f}s for {st['duration']:.0f}s (min {st['min_tps']:.0f} tps){seen}")
    if "validity" in summary:
        validity = Validity.from_dict(summary["validity"])
        lines.append(validity.text())
        lines += validity.flag_lines()
    return "\n".join(lines)
