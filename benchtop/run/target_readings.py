"""The target's own counters at a run's start and end, read through its
monitor source: WAL/redo position, database size, checkpoints and rows
changed (and their differences: a run's totals), its settings that differ
from the defaults, and where the server lives on this host (its process,
its data directory)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Mapping

from benchtop.record.costs import Totals
from benchtop.sources.base import PanelFailed, SourceError, SourceSnapshot
from benchtop.sources.fields import CHECKPOINTS, DATABASE, ROWS, WAL_BYTES_PER_S, WAL_POSITION, InnoDBPanel
from benchtop.sources.process import listener_pid, pid_from_file
from benchtop.sources.registry import is_local, source_class
from benchtop.target import Target, TargetError


def wal_position(snap: SourceSnapshot | None) -> float | None:
    """The WAL (PostgreSQL) or redo (InnoDB) position in bytes."""
    if snap is None or not snap.ok:
        return None
    pos = snap.panel(WAL_POSITION)
    if isinstance(pos, Mapping) and isinstance(pos.get("lsn_bytes"), (int, float)):
        return float(pos["lsn_bytes"])
    inn = InnoDBPanel.of(snap.panels)
    if inn is not None and isinstance(inn.lsn, (int, float)):
        return float(inn.lsn)
    return None


def wal_rate(snap: SourceSnapshot | None) -> float | None:
    """WAL/redo bytes per second over the source's last poll."""
    if snap is None or not snap.ok:
        return None
    rate = snap.panel(WAL_BYTES_PER_S)
    if isinstance(rate, (int, float)):
        return float(rate)
    inn = InnoDBPanel.of(snap.panels)
    if inn is not None and isinstance(inn.redo_bytes_per_s, (int, float)):
        return float(inn.redo_bytes_per_s)
    return None


def database_bytes(snap: SourceSnapshot | None) -> int | None:
    db = snap.panel(DATABASE) if snap is not None and snap.ok else None
    size = db.get("size_bytes") if isinstance(db, Mapping) else None
    return int(size) if isinstance(size, (int, float)) else None


def _counter(snap: SourceSnapshot | None, panel: str, key: str) -> float | None:
    p = snap.panel(panel) if snap is not None and snap.ok else None
    v = p.get(key) if isinstance(p, Mapping) else None
    return float(v) if isinstance(v, (int, float)) else None


def totals_between(first: SourceSnapshot | None, last: SourceSnapshot | None) -> Totals:
    """A run's totals from two snapshots of the target (None where unknown)."""
    def diff(a: float | None, b: float | None) -> int | None:
        return None if a is None or b is None else int(max(b - a, 0))

    rows = {}
    for key in ("inserted", "updated", "deleted"):
        pg = diff(_counter(first, DATABASE, f"tup_{key}"), _counter(last, DATABASE, f"tup_{key}"))
        rows[key] = pg if pg is not None else diff(_counter(first, ROWS, key), _counter(last, ROWS, key))
    return Totals(
        wal_bytes=diff(wal_position(first), wal_position(last)),
        checkpoints_timed=diff(_counter(first, CHECKPOINTS, "timed"), _counter(last, CHECKPOINTS, "timed")),
        checkpoints_requested=diff(_counter(first, CHECKPOINTS, "requested"),
                                   _counter(last, CHECKPOINTS, "requested")),
        rows_inserted=rows["inserted"],
        rows_updated=rows["updated"],
        rows_deleted=rows["deleted"],
    )


class TargetReader:
    """One poll of the target's own monitor source at a time (the run's
    start and end), and its settings snapshot; every failure is a None.
    A read never takes more than `deadline_s`: a server that stopped
    answering is interrupted and the run ends without its end figures."""

    def __init__(self, target: Target, timeout_s: float = 2.0, deadline_s: float = 3.0) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s

    def read(self, with_settings: bool = False) -> tuple[SourceSnapshot | None, dict[str, str] | None]:
        if self.target.kind not in ("mysql", "postgresql"):
            return None, None
        try:
            source = source_class(self.target.kind)("target", self.target, self.timeout_s)
        except TargetError:
            return None, None
        got: dict[str, Any] = {}

        def work() -> None:
            try:
                source.connect()
                got["snap"] = source.poll()
                if with_settings:
                    try:
                        got["settings"] = source.settings_snapshot()  # type: ignore[attr-defined]
                    except PanelFailed:  # the snapshot is optional; the counters are not
                        pass
            except SourceError:
                got.pop("snap", None)
            finally:
                source.close()

        worker = threading.Thread(target=work, name="benchtop-target-read", daemon=True)
        worker.start()
        worker.join(self.deadline_s)
        if worker.is_alive():
            source.interrupt()
            worker.join(1.0)
            return None, None
        return got.get("snap"), got.get("settings")


def server_pid(target: Target, settings: Mapping[str, Any] | None) -> int | None:
    """The local server's pid: the process listening on its port, else its pid file."""
    if target.kind not in ("mysql", "postgresql") or not is_local(target):
        return None
    pid = None if target.socket else listener_pid(target.effective_port)
    if pid is None and settings:
        pid = pid_from_file(str(settings.get("pid_file") or "") or None)
    return pid


def data_path(kind: str, target: Target, settings: Mapping[str, Any] | None) -> str | None:
    """A path on the database's data device (for the host's I/O settings)."""
    if kind == "sqlite" and target.database:
        return str(Path(target.database).resolve().parent)
    if settings:
        return str(settings.get("data_directory") or settings.get("datadir") or "") or None
    return None


def sqlite_bytes(path: str | None) -> int | None:
    """An SQLite database's size with its write-ahead log."""
    if not path:
        return None
    total, found = 0, False
    for suffix in ("", "-wal"):
        try:
            total += os.stat(path + suffix).st_size
            found = True
        except OSError:
            continue
    return total if found else None
