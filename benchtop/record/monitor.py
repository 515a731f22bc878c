"""A line of monitor.jsonl, built here for every writer (the run's monitor
side-car, `benchtop monitor` headless and in the TUI) and read back here
for replay: one poll's snapshots at a wall-clock time, with the headless
monitor's verdict when it decided one (and each server's, when it watches
more than one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchtop.sources.base import Missing, SourceSnapshot, panel_from_json
from benchtop.verdict.decide import Verdict

SNAPSHOT = "snapshot"  # the record's type
# a recorded snapshot's own fields; every other key is one of its panels
_META = {"kind", "ok", "poll_ms", "error", "interval_s"}


@dataclass(frozen=True, slots=True)
class ServerVerdict:
    """The verdict about one of several servers watched, and which it is."""

    source: str  # the source's name: mysql, mysql-2
    server: str  # its host:port (or socket), "" when unknown
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "server": self.server, **self.verdict.to_dict()}

    def text(self) -> str:
        """The headless line: `mysql-2 10.0.0.2:3306: bound by ...`."""
        return f"{self.source} {self.server}".rstrip() + f": {self.verdict.text()}"


@dataclass(frozen=True, slots=True)
class MonitorRecord:
    t: float  # unix time, as the writer rounds it (or not)
    snapshots: tuple[SourceSnapshot, ...]
    verdict: Verdict | None = None  # the first server's (the only one's)
    verdicts: tuple[ServerVerdict, ...] = ()  # every server's, when more than one is watched

    def to_dict(self) -> dict[str, Any]:
        """
        >>> snap = SourceSnapshot(name="pg", kind="postgresql", t=5.0, ok=True, panels={"wal": {"wal_bytes_per_s": 1}})
        >>> MonitorRecord(5.0, (snap,)).to_dict()
        {'type': 'snapshot', 't': 5.0, 'sources': {'pg': {'kind': 'postgresql', 'ok': True, 'poll_ms': 0.0, 'wal': {'wal_bytes_per_s': 1}}}}
        """
        d: dict[str, Any] = {"type": SNAPSHOT, "t": self.t, "sources": {s.name: s.to_dict() for s in self.snapshots}}
        if self.verdict is not None:
            d["verdict"] = self.verdict.to_dict()
        if self.verdicts:
            d["verdicts"] = [v.to_dict() for v in self.verdicts]
        return d


def is_monitor_record(record: dict[str, Any]) -> bool:
    """A monitor.jsonl line that holds snapshots."""
    return isinstance(record.get("sources"), dict)


def recorded_snapshots(record: dict[str, Any], t: float) -> list[SourceSnapshot]:
    """A monitor record's snapshots, each placed at `t` (the replay's clock)."""
    return [snapshot_from_dict(name, t, d) for name, d in record["sources"].items() if isinstance(d, dict)]


def snapshot_from_dict(name: str, t: float, d: dict[str, Any]) -> SourceSnapshot:
    """The inverse of SourceSnapshot.to_dict (a panel that was Missing stays one)."""
    panels = {}
    kind = str(d.get("kind", "?"))
    for key, value in d.items():
        if key in _META:
            continue
        if isinstance(value, dict) and set(value) == {"missing", "hint"}:
            value = Missing(value["missing"], value["hint"])
        panels[panel_from_json(kind, key)] = value
    return SourceSnapshot(name=name, kind=str(d.get("kind", "?")), t=t, ok=bool(d.get("ok", True)),
                          poll_ms=float(d.get("poll_ms", 0.0)), error=d.get("error"),
                          interval_s=d.get("interval_s"), panels=panels)
