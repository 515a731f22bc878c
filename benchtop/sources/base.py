"""What every server/proxy source is: a poller that owns one connection and
returns immutable snapshots.  No UI code here.

A source's snapshot holds *panels*: each panel is either data (rows or a
mapping) or a `Missing` that says what is lacking and how to grant it, so one
missing privilege degrades one panel, not the whole source.
"""

from __future__ import annotations

import re
import socket
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from benchtop.target import Target


@dataclass(frozen=True, slots=True)
class Missing:
    """A panel that could not be read: what is missing and how to fix it."""

    what: str
    hint: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"missing": self.what, "hint": self.hint}


# A headless run reads the server's processes as a whole (the verdict's and the costs' figures), not one by one
PER_PROCESS_NOT_READ = Missing("each process's CPU and I/O: read only when a screen shows them",
                               "run without --headless to record them")
# ... and its sessions by count (the verdict's figures), not row by row: 256 sessions were most of a
# PostgreSQL poll's client CPU and 98% of a run's monitor.jsonl
PER_SESSION_NOT_READ = Missing("each session's row: read only when a screen shows them",
                               "run without --headless to record them")


# In JSON (monitor --json, recordings) a panel holding one of ProxySQL's
# admin tables goes by that table's name, as ProxySQL's users know them.
JSON_NAMES: Mapping[str, Mapping[str, str]] = {
    "proxysql": {
        "connection_pool": "stats_mysql_connection_pool",
        "servers": "runtime_mysql_servers",
        "global": "stats_mysql_global",
        "commands": "stats_mysql_commands_counters",
        "processlist": "stats_mysql_processlist",
        "query_rules": "stats_mysql_query_rules",
        "query_rule_config": "runtime_mysql_query_rules",
        "digest_top": "stats_mysql_query_digest",
    },
}


def panel_from_json(kind: str, key: str) -> str:
    """The panel name of a JSON key (the inverse of JSON_NAMES).

    >>> panel_from_json("proxysql", "stats_mysql_query_digest"), panel_from_json("mysql", "waits")
    ('digest_top', 'waits')
    """
    for panel, name in JSON_NAMES.get(kind, {}).items():
        if name == key:
            return panel
    return key


@dataclass(frozen=True, slots=True)
class SourceSnapshot:
    """One poll of one source.

    `panels` maps a panel name (e.g. "pools", "waits", "innodb", "checkpoints")
    to plain JSON-able data (dict, list of dicts, number) or a `Missing`.
    Rates in panels are per second over [prev poll, this poll].
    """

    name: str
    kind: str  # proxysql | pgbouncer | mysql | postgresql | os
    t: float  # unix time of the poll's end
    ok: bool
    poll_ms: float = 0.0  # the poll's own cost, to tell it apart from the load
    error: str | None = None
    interval_s: float | None = None  # time since the previous poll (None on the first)
    panels: Mapping[str, Any] = field(default_factory=dict)

    def panel(self, name: str, default: Any = None) -> Any:
        value = self.panels.get(name, default)
        return default if isinstance(value, Missing) else value

    def to_dict(self) -> dict[str, Any]:
        """The JSON object `benchtop monitor --json` prints for this source."""
        out: dict[str, Any] = {"kind": self.kind, "ok": self.ok, "poll_ms": round(self.poll_ms, 3)}
        if self.error:
            out["error"] = self.error
        if self.interval_s is not None:
            out["interval_s"] = round(self.interval_s, 3)
        names = JSON_NAMES.get(self.kind, {})
        for key, value in self.panels.items():
            out[names.get(key, key)] = value.to_dict() if isinstance(value, Missing) else value
        return out


_SECRET_WORDS = ("password", "secret")
_CONNINFO_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def scrub_setting(name: str, value: str) -> str:
    """A server setting's value with any secret in it masked (a standby's
    primary_conninfo, Galera's wsrep_sst_auth): settings go to results files.

    >>> scrub_setting("primary_conninfo", "host=a user=r password='s e' port=5432")
    'host=a user=r password=*** port=5432'
    >>> scrub_setting("wsrep_sst_auth", "root:pw"), scrub_setting("key_buffer_size", "8388608")
    ('***', '8388608')
    """
    lowered = name.lower()
    if "conninfo" in lowered:
        return _CONNINFO_PASSWORD.sub(r"\1***", value)
    if (any(word in lowered for word in _SECRET_WORDS) or lowered.endswith("_auth")) and value:
        return "***"
    return value


class SourceError(Exception):
    """A poll failed as a whole (connection lost, server gone); one line."""


class PanelFailed(Exception):
    """One statement failed but the connection is fine: the panel is Missing."""

    def __init__(self, missing: Missing) -> None:
        super().__init__(missing.what)
        self.missing = missing


class Source(ABC):
    """A poller: `connect()`, then `poll()` at the caller's pace, then `close()`.

    Sources are used from one thread at a time (the caller guarantees polls
    never overlap).  They issue read-only statements only, each under a
    statement timeout, on a connection of their own.
    """

    kind: ClassVar[str]
    CAN_CHANGE_SETTINGS: ClassVar[bool] = False

    def __init__(self, name: str, target: Target, timeout_s: float = 5.0, *, per_process: bool = True) -> None:
        self.name = name
        self.target = target
        self.timeout_s = timeout_s
        # each of a local server's processes read from /proc (a row each: CPU, I/O, title) where the source does:
        # only where a screen shows them, for beside hundreds of backends they are most of a poll's cost
        self.per_process = per_process

    @property
    def where(self) -> str:
        """The server's address as a DBA names it (host:port or socket); ""
        for a source of this host (the OS)."""
        target: Target | None = self.target
        if target is None:
            return ""
        return target.socket or f"{target.host}:{target.effective_port}"

    @abstractmethod
    def connect(self) -> None:
        """Open the connection; raises SourceError with a one-line message."""

    @abstractmethod
    def poll(self) -> SourceSnapshot:
        """Read once; raises SourceError if the connection is lost."""

    @abstractmethod
    def close(self) -> None:
        """Close quietly (never raises)."""

    def interrupt(self) -> None:
        """Unblock a poll stuck in a read on a hung server (called from
        another thread while poll() runs); a source with no socket of its
        own has nothing to unblock."""

    def try_reconnect(self) -> bool:
        """Close and connect again; False (not an exception) if still down."""
        self.close()
        try:
            self.connect()
        except SourceError:
            return False
        return True

    def snapshot(self, panels: Mapping[str, Any], started: float, interval_s: float | None) -> SourceSnapshot:
        """A successful poll's snapshot; `started` is the poll's
        `time.perf_counter()` at its start, so `poll_ms` is the poll's own cost."""
        return SourceSnapshot(
            name=self.name,
            kind=self.kind,
            t=time.time(),
            ok=True,
            poll_ms=(time.perf_counter() - started) * 1000.0,
            interval_s=interval_s,
            panels=panels,
        )

    def failed_snapshot(self, error: str) -> SourceSnapshot:
        return SourceSnapshot(name=self.name, kind=self.kind, t=time.time(), ok=False, error=error)


def flatten(text: Any, limit: int = 4096) -> str | None:
    """A statement as one line (newlines and runs of blanks folded), cut at `limit`.

    >>> flatten("SELECT a,\\n       b\\tFROM t"), flatten(None), flatten(b"SELECT 1")
    ('SELECT a, b FROM t', None, 'SELECT 1')
    """
    if text is None:
        return None
    if isinstance(text, (bytes, bytearray)):
        text = text.decode(errors="replace")
    return " ".join(str(text).split())[:limit]


def shut_down_socket(sock: socket.socket | None) -> None:
    """Unblock a poll stuck reading from a hung server (called from another
    thread): a socket shut down makes the blocked read see end-of-file at once."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def shut_down_descriptor(fd: int) -> None:
    """The same for a descriptor a client library owns (libpq's): it stays open for the library to close."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return
    try:
        shut_down_socket(sock)
    finally:
        sock.detach()
