"""Live instrumentation control for benchmark mode (key `i`, `--instrumentation`).

MySQL/MariaDB: the nine performance_schema configurations of the classic
overhead study, applied with UPDATEs of setup_instruments / setup_consumers
on a connection of our own.  PostgreSQL: track_io_timing,
track_wal_io_timing and pg_stat_statements.track, through ALTER SYSTEM +
pg_reload_conf() so that the load's sessions (not just ours) pick them up.

The state found at the start (every instrument's ENABLED/TIMED, every
consumer, each setting and whether postgresql.auto.conf set it) is saved
before the first change, in memory and in the server's state file
(benchtop.target.leftovers), and `restore()` puts it back exactly, then
removes the record.  A run killed before its restore leaves the record:
`restore_leftovers()` (`benchtop restore`) puts back what it names.  Each change is
recorded as an `InstrumentationEvent` for the run's timeline.  Changes are
refused in monitor mode unless `allow_changes=True` (`--allow-changes`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from benchtop.errors import one_line
from benchtop.target.connection import libpq_params, pymysql_kwargs
from benchtop.target import Target
from benchtop.target.leftovers import ChangeRecord, LeftoverError

if TYPE_CHECKING:
    import psycopg
    import pymysql

# Presets: (instrument LIKE patterns enabled + timed, consumers enabled).
# All others are switched off.  "all_enabled", "all_disabled" and "default"
# are handled separately: "default" is the state the server had when
# benchtop started (its configured defaults), since MySQL and MariaDB ship
# different ones.
_BASE_CONSUMERS = ("global_instrumentation", "thread_instrumentation")
MYSQL_PRESETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mdl_only": (("wait/lock/metadata/%",), _BASE_CONSUMERS),
    "memory_only": (("memory/%",), _BASE_CONSUMERS),
    "stages_and_statements": (
        ("stage/%", "statement/%"),
        _BASE_CONSUMERS + ("events_stages_current", "events_statements_current", "statements_digest"),
    ),
    "stages_only": (("stage/%",), _BASE_CONSUMERS + ("events_stages_current",)),
    "statements_only": (("statement/%",), _BASE_CONSUMERS + ("events_statements_current", "statements_digest")),
    "waits_only": (("wait/%",), _BASE_CONSUMERS + ("events_waits_current",)),
}
MYSQL_PRESET_NAMES = ("all_disabled", "all_enabled", "default", *MYSQL_PRESETS)

# PostgreSQL presets: setting -> value ("default" restores the original).
PG_SETTINGS = ("track_io_timing", "track_wal_io_timing", "pg_stat_statements.track")
PG_PRESETS: dict[str, dict[str, str]] = {
    "all_disabled": {"track_io_timing": "off", "track_wal_io_timing": "off", "pg_stat_statements.track": "none"},
    "all_enabled": {"track_io_timing": "on", "track_wal_io_timing": "on", "pg_stat_statements.track": "all"},
    "io_timing": {"track_io_timing": "on", "track_wal_io_timing": "on", "pg_stat_statements.track": "none"},
    "statements_only": {"track_io_timing": "off", "track_wal_io_timing": "off", "pg_stat_statements.track": "top"},
}
PG_PRESET_NAMES = ("all_disabled", "all_enabled", "default", "io_timing", "statements_only")

_CHUNK = 200  # names per IN (...) list when restoring instruments
RECORD_SECTION = "instrumentation"  # its section of the server's state file


class InstrumentationError(Exception):
    """A change could not be made or was refused; the message is one line."""


@dataclass(frozen=True, slots=True)
class InstrumentationEvent:
    """One change, for the timeline: at `t` (unix time) the preset became active."""

    t: float
    preset: str
    kind: str  # mysql | postgresql

    def to_dict(self) -> dict[str, Any]:
        return {"t": round(self.t, 3), "type": "instrumentation", "preset": self.preset, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class PerfSchemaState:
    """Every instrument's (ENABLED, TIMED) and every consumer's ENABLED."""

    instruments: Mapping[str, tuple[str, str | None]]
    consumers: Mapping[str, str]


def _perf_schema_state(saved: Mapping[str, Any]) -> PerfSchemaState:
    """A PerfSchemaState from its layout in the state file."""
    return PerfSchemaState({str(n): (str(v[0]), None if v[1] is None else str(v[1]))
                            for n, v in saved["instruments"].items()},
                           {str(n): str(v) for n, v in saved["consumers"].items()})


def presets_for(kind: str) -> tuple[str, ...]:
    return MYSQL_PRESET_NAMES if kind == "mysql" else PG_PRESET_NAMES


def mysql_preset_statements(preset: str) -> list[tuple[str, tuple[Any, ...]]]:
    """The UPDATEs that make `preset` current (except "default").

    >>> for sql, args in mysql_preset_statements("stages_only"): print(sql, args)
    UPDATE performance_schema.setup_instruments SET ENABLED = 'NO', TIMED = 'NO' ()
    UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' WHERE NAME LIKE %s ('stage/%',)
    UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' ()
    UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN (%s, %s, %s) ('global_instrumentation',
    'thread_instrumentation', 'events_stages_current')
    """
    ins = "UPDATE performance_schema.setup_instruments SET ENABLED = '{0}', TIMED = '{0}'"
    con = "UPDATE performance_schema.setup_consumers SET ENABLED = '{0}'"
    if preset == "all_enabled":
        return [(ins.format("YES"), ()), (con.format("YES"), ())]
    if preset == "all_disabled":
        return [(ins.format("NO"), ()), (con.format("NO"), ())]
    if preset not in MYSQL_PRESETS:
        raise InstrumentationError(f"unknown preset {preset!r}: use one of {', '.join(MYSQL_PRESET_NAMES)}")
    patterns, consumers = MYSQL_PRESETS[preset]
    out: list[tuple[str, tuple[Any, ...]]] = [(ins.format("NO"), ())]
    out += [(ins.format("YES") + " WHERE NAME LIKE %s", (p,)) for p in patterns]
    out.append((con.format("NO"), ()))
    out.append((con.format("YES") + f" WHERE NAME IN ({', '.join(['%s'] * len(consumers))})", tuple(consumers)))
    return out


def mysql_restore_statements(state: PerfSchemaState) -> list[tuple[str, tuple[Any, ...]]]:
    """UPDATEs that put back a saved state, grouped by value so there are few.

    >>> s = PerfSchemaState({"a": ("YES", "NO"), "b": ("YES", "NO"), "m": ("NO", None)}, {"c": "YES"})
    >>> for sql, args in mysql_restore_statements(s): print(sql, args)
    UPDATE performance_schema.setup_instruments SET ENABLED = 'NO' WHERE NAME IN (%s) ('m',)
    UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'NO' WHERE NAME IN (%s, %s) ('a', 'b')
    UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN (%s) ('c',)
    """
    groups: dict[tuple[str, str | None], list[str]] = {}
    for name, value in state.instruments.items():
        groups.setdefault(value, []).append(name)
    out: list[tuple[str, tuple[Any, ...]]] = []
    for (enabled, timed), names in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        # MySQL 8 memory instruments have TIMED NULL and refuse a value.
        sets = f"ENABLED = '{enabled}'" + ("" if timed is None else f", TIMED = '{timed}'")
        out += _in_chunks(f"UPDATE performance_schema.setup_instruments SET {sets}", names)
    by_value: dict[str, list[str]] = {}
    for name, enabled in state.consumers.items():
        by_value.setdefault(enabled, []).append(name)
    for enabled, names in sorted(by_value.items()):
        out += _in_chunks(f"UPDATE performance_schema.setup_consumers SET ENABLED = '{enabled}'", names)
    return out


def _in_chunks(prefix: str, names: Sequence[str]) -> list[tuple[str, tuple[Any, ...]]]:
    out = []
    for i in range(0, len(names), _CHUNK):
        chunk = tuple(names[i : i + _CHUNK])
        out.append((f"{prefix} WHERE NAME IN ({', '.join(['%s'] * len(chunk))})", chunk))
    return out


def _client_errors(kind: str) -> tuple[type[Exception], ...]:
    """The errors of the one client library `kind` uses.  Each library is
    imported when first needed: every mysql/postgresql run makes this control
    but few use it, and importing psycopg was half of a run's start-up CPU."""
    if kind == "mysql":
        import pymysql

        return (pymysql.MySQLError, OSError)
    import psycopg

    return (psycopg.Error, OSError)


class InstrumentationControl:
    """Applies presets on one target and restores its original state.

    Use as a context manager, or call `restore()` yourself (it is idempotent
    and reconnects if the connection was lost)."""

    def __init__(
        self, target: Target, *, monitor_mode: bool = False, allow_changes: bool = False, timeout_s: float = 10.0
    ) -> None:
        if target.kind not in ("mysql", "postgresql"):
            raise InstrumentationError(f"instrumentation control needs a mysql or postgresql target, not {target.kind}")
        self.target = target
        self.monitor_mode = monitor_mode
        self.allow_changes = allow_changes
        self.timeout_s = timeout_s
        self.events: list[InstrumentationEvent] = []
        self.current: str | None = None
        self._saved_mysql: PerfSchemaState | None = None
        self._saved_pg: dict[str, tuple[str, bool]] | None = None  # name -> (value, set in auto.conf)
        self._my: pymysql.connections.Connection | None = None
        self._pg: psycopg.Connection | None = None
        self._record = ChangeRecord(target)

    def _errors(self) -> tuple[type[Exception], ...]:
        # an except clause evaluates this only when something was raised
        return _client_errors(self.target.kind)

    @property
    def presets(self) -> tuple[str, ...]:
        return presets_for(self.target.kind)

    def __enter__(self) -> "InstrumentationControl":
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.restore()
        finally:
            self.close()

    # -- public

    def apply(self, preset: str) -> InstrumentationEvent:
        """Make `preset` current; the original state is saved first."""
        if self.monitor_mode and not self.allow_changes:
            raise InstrumentationError("monitor mode is read-only: pass --allow-changes to change instrumentation")
        if preset not in self.presets:
            choices = ", ".join(self.presets)
            raise InstrumentationError(f"unknown preset {preset!r} for {self.target.kind}: use one of {choices}")
        try:
            if self.target.kind == "mysql":
                self._apply_mysql(preset)
            else:
                self._apply_pg(preset)
        except self._errors() as exc:
            raise InstrumentationError(
                f"cannot apply preset {preset}: {one_line(exc)}{self._grant_hint(exc)}"
            ) from None
        self.current = preset
        event = InstrumentationEvent(time.time(), preset, self.target.kind)
        self.events.append(event)
        return event

    def restore(self) -> bool:
        """Put the saved state back; True if there was something to restore.
        Retries once on a fresh connection (the old one may be gone)."""
        if self._saved_mysql is None and self._saved_pg is None:
            return False
        for attempt in (1, 2):
            try:
                if self._saved_mysql is not None:
                    self._run_mysql(mysql_restore_statements(self._saved_mysql))
                if self._saved_pg is not None:
                    self._restore_pg(self._saved_pg)
                break
            except self._errors() as exc:
                self.close()
                if attempt == 2:
                    raise InstrumentationError(f"cannot restore instrumentation: {one_line(exc)}") from None
        self._saved_mysql = None
        self._saved_pg = None
        self.current = None
        self.events.append(InstrumentationEvent(time.time(), "restored", self.target.kind))
        try:
            self._record.clear(RECORD_SECTION)
        except LeftoverError as exc:
            raise InstrumentationError(f"instrumentation restored, but {exc}") from None
        return True

    def restore_leftovers(self) -> bool:
        """Put back what a run killed before its restore left changed, from
        the server's state file; False when the file records nothing."""
        try:
            saved = self._record.saved(RECORD_SECTION)
        except LeftoverError as exc:
            raise InstrumentationError(str(exc)) from None
        if saved is None:
            return False
        try:
            if self.target.kind == "mysql":
                self._saved_mysql = _perf_schema_state(saved)
            else:
                self._saved_pg = {str(n): (str(v[0]), bool(v[1])) for n, v in saved.items()}
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise InstrumentationError(f"{self._record.path} does not hold {self.target.kind} instrumentation: "
                                       "check the server's settings by hand, then delete it") from None
        return self.restore()

    def _remember(self, saved: Mapping[str, Any]) -> dict[str, Any]:
        """Record the state found before changing it; what the file already
        held (a killed run's originals) comes back to be restored instead."""
        try:
            return self._record.record(RECORD_SECTION, saved)
        except LeftoverError as exc:
            raise InstrumentationError(f"nothing changed: {exc}") from None

    def close(self) -> None:
        for conn in (self._my, self._pg):
            if conn is not None:
                try:
                    conn.close()
                except self._errors():
                    pass
        self._my = None
        self._pg = None

    # -- MySQL

    def _mysql(self) -> pymysql.connections.Connection:
        if self._my is None or not self._my.open:
            kwargs = pymysql_kwargs(
                self.target, timeout_s=self.timeout_s, program_name="benchtop-instrumentation", with_database=False
            )
            from benchtop.target import mysql_client

            self._my = mysql_client.connect(**kwargs)
        return self._my

    def read_mysql_state(self) -> PerfSchemaState:
        with self._mysql().cursor() as cur:
            cur.execute("SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments")
            instruments = {name: (enabled, timed) for name, enabled, timed in cur.fetchall()}
            cur.execute("SELECT NAME, ENABLED FROM performance_schema.setup_consumers")
            consumers = {name: enabled for name, enabled in cur.fetchall()}
        return PerfSchemaState(instruments, consumers)

    def _apply_mysql(self, preset: str) -> None:
        if self._saved_mysql is None:
            found = self.read_mysql_state()
            self._saved_mysql = _perf_schema_state(self._remember(
                {"instruments": {n: list(v) for n, v in found.instruments.items()}, "consumers": dict(found.consumers)}))
        if preset == "default":
            self._run_mysql(mysql_restore_statements(self._saved_mysql))
        else:
            self._run_mysql(mysql_preset_statements(preset))

    def _run_mysql(self, statements: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        with self._mysql().cursor() as cur:
            for stmt, args in statements:
                cur.execute(stmt, args or None)

    # -- PostgreSQL

    def _postgres(self) -> psycopg.Connection:
        if self._pg is None or self._pg.closed:
            params = libpq_params(self.target, timeout_s=self.timeout_s, application_name="benchtop-instrumentation")
            import psycopg

            self._pg = psycopg.connect(**params, autocommit=True)
        return self._pg

    def read_pg_state(self) -> dict[str, tuple[str, bool]]:
        """Each known setting's value and whether ALTER SYSTEM had set it."""
        query = (
            "SELECT name, setting, coalesce(sourcefile, '') LIKE '%%postgresql.auto.conf'"
            " FROM pg_settings WHERE name = ANY(%s)"
        )
        rows = self._postgres().execute(query, (list(PG_SETTINGS),)).fetchall()
        return {name: (setting, bool(auto)) for name, setting, auto in rows}

    def _apply_pg(self, preset: str) -> None:
        if self._saved_pg is None:
            found = self._remember({n: [v, auto] for n, (v, auto) in self.read_pg_state().items()})
            self._saved_pg = {n: (str(v[0]), bool(v[1])) for n, v in found.items()}
        if preset == "default":
            self._restore_pg(self._saved_pg)
            return
        conn = self._postgres()
        for name, value in PG_PRESETS[preset].items():
            if name in self._saved_pg:  # pg_stat_statements.track exists only when the library is loaded
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")

    def _restore_pg(self, saved: Mapping[str, tuple[str, bool]]) -> None:
        conn = self._postgres()
        for name, (value, in_auto_conf) in saved.items():
            if in_auto_conf:
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            else:
                conn.execute(f"ALTER SYSTEM RESET {name}")
        conn.execute("SELECT pg_reload_conf()")

    def _grant_hint(self, exc: BaseException) -> str:
        text = str(exc).lower()
        if "denied" in text or "permission" in text or "must be superuser" in text:
            if self.target.kind == "mysql":
                return " (needs UPDATE ON performance_schema.setup_instruments and setup_consumers)"
            return " (needs superuser or GRANT ALTER SYSTEM ON PARAMETER ...)"
        return ""
