"""What benchtop changed on a server and has not put back yet, kept on disk.

Before benchtop changes a server's settings (instrumentation presets, a
scenario's settings) it writes the values it found to a small state file,
one per server, under the user's state folder ($BENCHTOP_STATE_DIR, else
$XDG_STATE_HOME/benchtop, else ~/.local/state/benchtop); the restore removes
the record.  A run killed with SIGKILL cannot restore: its record stays, the
next run or monitor of that server names what was left changed, and
`benchtop restore` puts it back from the record.

The file is JSON: {"server": ..., "changes": {SECTION: {"pid": ..., "t": ...,
"saved": {...}}}}, a section per kind of change (each saved by its owner's
own layout).  Values found first win: a later run that changes a setting
left changed must not take the changed value for the original.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchtop.target.dsn import Target, fill_defaults, parse_dsn

STATE_DIR_ENV = "BENCHTOP_STATE_DIR"


class LeftoverError(Exception):
    """The state file could not be written or read; one line."""


def state_dir() -> Path:
    """The folder of the state files (the tests point BENCHTOP_STATE_DIR at a temporary one)."""
    own = os.environ.get(STATE_DIR_ENV)
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "benchtop"


def server_address(target: Target) -> str:
    """The server a target reaches, the same whoever connects (the benchmark user or --admin-dsn's).

    >>> server_address(Target("postgresql", "localhost", 15432, "sbtest"))
    'postgresql 127.0.0.1:15432'
    >>> server_address(Target("mysql", socket="/run/mysqld/mysqld.sock"))
    'mysql /run/mysqld/mysqld.sock'
    """
    if target.socket:
        return f"{target.kind} {target.socket}"
    host = "127.0.0.1" if target.host.lower() in ("localhost", "::1", "") else target.host.lower()
    return f"{target.kind} {host}:{target.effective_port}"


def _file_name(address: str) -> str:
    """
    >>> _file_name("postgresql 127.0.0.1:15432")
    'postgresql_127.0.0.1_15432.json'
    """
    return re.sub(r"[^A-Za-z0-9.-]+", "_", address).strip("_") + ".json"


@dataclass(frozen=True, slots=True)
class Change:
    """One section of a record: what one owner changed, and the values it found first."""

    section: str
    pid: int
    t: float
    saved: Mapping[str, Any]

    @property
    def live(self) -> bool:
        """Whether the process that made the change still runs (its own restore is still to come)."""
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process: alive
            return True
        return True


class ChangeRecord:
    """The state file of one server."""

    def __init__(self, target: Target, folder: Path | None = None) -> None:
        self.address = server_address(target)
        self.path = (folder or state_dir()) / _file_name(self.address)

    def changes(self) -> list[Change]:
        """The sections on file; a damaged file is an error naming it."""
        try:
            data = json.loads(self.path.read_text())
            return [Change(name, int(c["pid"]), float(c["t"]), dict(c["saved"]))
                    for name, c in dict(data["changes"]).items()]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LeftoverError(f"cannot read {self.path}: {exc}; delete it once the server's settings are checked") \
                from None

    def saved(self, section: str) -> Mapping[str, Any] | None:
        return next((c.saved for c in self.changes() if c.section == section), None)

    def record(self, section: str, saved: Mapping[str, Any]) -> dict[str, Any]:
        """Write `saved` (the values found) before the change is made.  A value
        already on file (left changed by a run killed before its restore) is
        kept, and returned with the others: the values to restore."""
        changes = {c.section: c for c in self.changes()}
        was = changes.get(section)
        merged = {**saved, **(was.saved if was is not None else {})}
        changes[section] = Change(section, os.getpid(), time.time(), merged)
        self._write(changes)
        return merged

    def clear(self, section: str) -> None:
        """The section's changes are restored: forget them (and the file once empty)."""
        changes = {c.section: c for c in self.changes() if c.section != section}
        if changes:
            self._write(changes)
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise LeftoverError(f"cannot remove {self.path}: {exc}") from None

    def _write(self, changes: Mapping[str, Change]) -> None:
        body = {"server": self.address,
                "changes": {c.section: {"pid": c.pid, "t": round(c.t, 3), "saved": dict(c.saved)}
                            for c in changes.values()}}
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(body, sort_keys=True))
            os.replace(tmp, self.path)  # a kill mid-write leaves the old record whole
        except OSError as exc:
            raise LeftoverError(f"cannot record the server's settings before changing them in {self.path}: {exc}") \
                from None


def described(saved: Mapping[str, Any]) -> str:
    """A section's changes, named.

    >>> described({"track_io_timing": ["off", False], "pg_stat_statements.track": ["top", False]})
    'track_io_timing (was off), pg_stat_statements.track (was top)'
    >>> described({"instruments": {"a": ["NO", "NO"], "b": ["YES", "YES"]}, "consumers": {"c": "NO"}})
    'performance_schema: 1 of 2 instruments and 0 of 1 consumers were on (setup_instruments, setup_consumers)'
    """
    if isinstance(saved.get("instruments"), Mapping) and isinstance(saved.get("consumers"), Mapping):
        ins, con = saved["instruments"], saved["consumers"]
        on = sum(1 for v in ins.values() if isinstance(v, list) and v and v[0] == "YES")
        con_on = sum(1 for v in con.values() if v == "YES")
        return (f"performance_schema: {on} of {len(ins)} instruments and {con_on} of {len(con)} consumers were on "
                "(setup_instruments, setup_consumers)")
    return ", ".join(f"{name} (was {v[0] if isinstance(v, list) and v else v})" for name, v in saved.items())


def admin_target(target: Target, admin_dsn: str | None) -> Target:
    """--admin-dsn's connection to the target's server (its kind the
    target's), or the target itself without one."""
    if not admin_dsn:
        return target
    admin = fill_defaults(parse_dsn(admin_dsn))
    return admin if admin.kind == target.kind else replace(admin, kind=target.kind)


def record_places(target: Target, admin_dsn: str | None) -> list[Target]:
    """The admin's connection to each address a change may be recorded
    under: --admin-dsn's own (the connection that made it), then the
    target's host, port or socket when it is another (the admin often
    reaches the server by its socket, the benchmark by host:port).

    >>> [server_address(t) for t in record_places(Target("mysql", "127.0.0.1", 3306, "sbtest"),
    ...                                           "mysql://root@localhost/?unix_socket=/tmp/my.sock")]
    ['mysql /tmp/my.sock', 'mysql 127.0.0.1:3306']
    >>> len(record_places(Target("mysql", "127.0.0.1", 3306, "sbtest"), "mysql://root@localhost:3306/"))
    1
    """
    admin = admin_target(target, admin_dsn)
    if server_address(target) == server_address(admin):
        return [admin]
    return [admin, replace(admin, host=target.host, port=target.port, socket=target.socket)]


def leftover_warning(target: Target, admin_dsn: str | None = None) -> str | None:
    """One line naming what a run killed before its restore left changed on
    the target's server, and how to put it back; None when nothing is left
    (a run still going is left to restore its own).  A change is recorded
    under the address of the connection that made it, --admin-dsn's when a
    run has one (often the server's socket, where the benchmark uses
    host:port): both addresses are looked at, as `benchtop restore` does."""
    if target.kind not in ("mysql", "postgresql"):
        return None
    # the target's own address first: the one the warning names first
    records = [ChangeRecord(place) for place in reversed(record_places(target, admin_dsn))]
    found: list[tuple[ChangeRecord, list[Change]]] = []
    for record in records:
        try:
            left = [c for c in record.changes() if not c.live]
        except LeftoverError as exc:
            return f"benchtop: warning: {exc}"
        if left:
            found.append((record, left))
    if not found:
        return None
    left = [c for _, changes in found for c in changes]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(min(c.t for c in left)))
    engine = "postgres" if target.kind == "postgresql" else target.kind
    where = " and ".join(record.address.split(" ", 1)[1] for record, _ in found)
    return (f"benchtop: warning: {where} still {'has' if len(found) == 1 else 'have'} settings a benchtop run (pid "
            f"{', '.join(str(c.pid) for c in left)}, {when}) changed and never put back: "
            f"{'; '.join(described(c.saved) for c in left)}; put them back with `benchtop restore --engine {engine}` "
            f"and this run's target options (--dsn, --admin-dsn with the rights to change them); record: "
            f"{', '.join(str(record.path) for record, _ in found)}")
