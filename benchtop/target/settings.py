"""Server settings a scenario sweeps, applied per step and restored at the end.

MySQL/MariaDB: `SET GLOBAL name = value` (the value found first is put back
the same way).  PostgreSQL: `ALTER SYSTEM SET name = 'value'` and
`pg_reload_conf()`; a setting whose context is `postmaster` only takes effect
after a restart, which `needs_restart` says so the scenario runs its restart
hook; restoring sets back what postgresql.auto.conf had (or resets the
setting when it had nothing).  PgBouncer (`pgbouncer.default_pool_size`):
`SET default_pool_size = N` on its admin console, which takes effect at once
(a RELOAD would re-read the file and undo it).

Nothing is changed in monitor mode: `SettingsControl(..., monitor_mode=True)`
refuses every change.  The value found first is written to the server's
state file (benchtop.target.leftovers) before the change, so a run killed
before its restore leaves a record that `benchtop restore` puts back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import psycopg
import pymysql

from benchtop.errors import one_line
from benchtop.target import Target
from benchtop.target import mysql_client
from benchtop.target.connection import libpq_params, pymysql_kwargs
from benchtop.target.leftovers import ChangeRecord, LeftoverError

PGBOUNCER_PREFIX = "pgbouncer."
RECORD_SECTION = "settings"  # its section of the server's state file
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


class SettingsError(Exception):
    """A setting could not be read, changed or restored; one line."""


def setting_value_sql(value: Any) -> str:
    """A value as SET GLOBAL / ALTER SYSTEM take it.

    >>> setting_value_sql(1), setting_value_sql(True), setting_value_sql("4G"), setting_value_sql("it's")
    ('1', 'ON', "'4G'", "'it''s'")
    """
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return "'" + str(value).replace("'", "''") + "'"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise SettingsError(f"{name!r} is not a server setting name")
    return name


def change_statements(kind: str, name: str, value: Any) -> list[str]:
    """What applying one setting runs (for --dry-run and the timeline).

    >>> change_statements("mysql", "sync_binlog", 0)
    ['SET GLOBAL sync_binlog = 0']
    >>> change_statements("postgresql", "synchronous_commit", "off")
    ["ALTER SYSTEM SET synchronous_commit = 'off'", 'SELECT pg_reload_conf()']
    >>> change_statements("postgresql", "pgbouncer.default_pool_size", 20)
    ['SET default_pool_size = 20 (PgBouncer admin console)']
    """
    check_name(name)
    if name.startswith(PGBOUNCER_PREFIX):
        return [f"SET {name[len(PGBOUNCER_PREFIX):]} = {value} (PgBouncer admin console)"]
    if kind == "mysql":
        return [f"SET GLOBAL {name} = {setting_value_sql(value)}"]
    if kind == "postgresql":
        return [f"ALTER SYSTEM SET {name} = '{str(setting_value_sql(value)).strip(chr(39))}'", "SELECT pg_reload_conf()"]
    raise SettingsError(f"server settings need --engine mysql or postgres, not {kind}")


@dataclass
class _Saved:
    value: str
    in_auto_conf: bool = False  # PostgreSQL: ALTER SYSTEM had set it


@dataclass
class SettingsControl:
    """Applies settings on the target (and its PgBouncer) and restores the
    values found before the first change.  `restore()` is idempotent and
    reconnects; use it in a finally block or from a signal's clean exit."""

    target: Target
    pgbouncer: Target | None = None
    monitor_mode: bool = False
    timeout_s: float = 10.0
    saved: dict[str, _Saved] = field(default_factory=dict)
    current: dict[str, Any] = field(default_factory=dict)

    def apply(self, settings: Mapping[str, Any]) -> list[str]:
        """Make the settings current; returns what was run, one text per setting."""
        if self.monitor_mode:
            raise SettingsError("monitor mode is read-only: server settings are never changed there")
        done = []
        for name, value in settings.items():
            check_name(name)
            try:
                if name.startswith(PGBOUNCER_PREFIX):
                    self._pgbouncer_set(name, value)
                elif self.target.kind == "mysql":
                    self._mysql_set(name, value)
                elif self.target.kind == "postgresql":
                    self._pg_set(name, value)
                else:
                    raise SettingsError(f"server settings need --engine mysql or postgres, not {self.target.kind}")
            except (pymysql.MySQLError, psycopg.Error, OSError) as exc:
                raise SettingsError(f"cannot set {name} = {value}: {one_line(exc)}") from None
            self.current[name] = value
            done.append(f"{name} = {value}")
        return done

    def needs_restart(self, names: list[str]) -> list[str]:
        """PostgreSQL settings among `names` that take effect only after a restart."""
        if self.target.kind != "postgresql":
            return []
        names = [n for n in names if not n.startswith(PGBOUNCER_PREFIX)]
        if not names:
            return []
        with psycopg.connect(**self._pg_params(), autocommit=True) as conn:
            rows = conn.execute("SELECT name FROM pg_settings WHERE context = 'postmaster' AND name = ANY(%s)",
                                (names,)).fetchall()
        return [r[0] for r in rows]

    def read(self, name: str) -> str:
        """The setting's current value on the server, as text."""
        if name.startswith(PGBOUNCER_PREFIX):
            return self._pgbouncer_read(name[len(PGBOUNCER_PREFIX):])
        if self.target.kind == "mysql":
            with mysql_client.connect(**self._my_params()) as conn, conn.cursor() as cur:
                cur.execute(f"SELECT @@GLOBAL.{check_name(name)}")
                row = cur.fetchone()
            return "" if row is None or row[0] is None else str(row[0])
        with psycopg.connect(**self._pg_params(), autocommit=True) as conn:
            row = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
        return "" if row is None else str(row[0])

    def restore(self) -> list[str]:
        """Put every changed setting back; returns what was restored.  Raises
        SettingsError naming what could not be restored (the rest is)."""
        failed, done = [], []
        for name, saved in list(self.saved.items()):
            try:
                if name.startswith(PGBOUNCER_PREFIX):
                    self._pgbouncer_exec(f"SET {name[len(PGBOUNCER_PREFIX):]} = {saved.value}")
                elif self.target.kind == "mysql":
                    with mysql_client.connect(**self._my_params()) as conn, conn.cursor() as cur:
                        cur.execute(f"SET GLOBAL {name} = {_mysql_literal(saved.value)}")
                else:
                    with psycopg.connect(**self._pg_params(), autocommit=True) as conn:
                        if saved.in_auto_conf:
                            conn.execute(f"ALTER SYSTEM SET {name} = {setting_value_sql(saved.value)}")
                        else:
                            conn.execute(f"ALTER SYSTEM RESET {name}")
                        conn.execute("SELECT pg_reload_conf()")
            except (pymysql.MySQLError, psycopg.Error, OSError) as exc:
                failed.append(f"{name} ({one_line(exc)})")
                continue
            del self.saved[name]
            self.current.pop(name, None)
            done.append(f"{name} = {saved.value}")
        if failed:
            raise SettingsError("could not restore " + "; ".join(failed))
        if done:
            try:
                ChangeRecord(self.target).clear(RECORD_SECTION)
            except LeftoverError as exc:
                raise SettingsError(f"settings restored, but {exc}") from None
        return done

    def restore_leftovers(self) -> list[str]:
        """Put back what a run killed before its restore left changed, from
        the server's state file; what was restored (none: nothing recorded)."""
        try:
            saved = ChangeRecord(self.target).saved(RECORD_SECTION) or {}
            self.saved.update({str(n): _Saved(str(v[0]), bool(v[1])) for n, v in saved.items()})
        except LeftoverError as exc:
            raise SettingsError(str(exc)) from None
        except (IndexError, TypeError, KeyError):
            raise SettingsError("the server's state file holds no settings benchtop can restore: "
                                "check them by hand, then delete it") from None
        return self.restore()

    def _remember(self, name: str, found: _Saved) -> _Saved:
        """Record the value found before changing it; a value already on file
        (left changed by a killed run) is the one to restore instead."""
        try:
            merged = ChangeRecord(self.target).record(RECORD_SECTION, {name: [found.value, found.in_auto_conf]})
        except LeftoverError as exc:
            raise SettingsError(f"{name} not changed: {exc}") from None
        value, in_auto_conf = merged[name]
        return _Saved(str(value), bool(in_auto_conf))

    # -- MySQL
    def _my_params(self) -> dict[str, Any]:
        return pymysql_kwargs(self.target, timeout_s=self.timeout_s, program_name="benchtop-settings",
                              with_database=False)

    def _mysql_set(self, name: str, value: Any) -> None:
        with mysql_client.connect(**self._my_params()) as conn, conn.cursor() as cur:
            if name not in self.saved:
                cur.execute(f"SELECT @@GLOBAL.{name}")
                row = cur.fetchone()
                self.saved[name] = self._remember(name, _Saved("" if row is None or row[0] is None else str(row[0])))
            cur.execute(f"SET GLOBAL {name} = {setting_value_sql(value)}")

    # -- PostgreSQL
    def _pg_params(self) -> dict[str, Any]:
        return libpq_params(self.target, timeout_s=self.timeout_s, application_name="benchtop-settings")

    def _pg_set(self, name: str, value: Any) -> None:
        with psycopg.connect(**self._pg_params(), autocommit=True) as conn:
            if name not in self.saved:
                row = conn.execute(
                    "SELECT setting, coalesce(sourcefile, '') LIKE '%%postgresql.auto.conf' FROM pg_settings"
                    " WHERE name = %s", (name,)).fetchone()
                if row is None:
                    raise SettingsError(f"PostgreSQL has no setting {name!r}")
                self.saved[name] = self._remember(name, _Saved(str(row[0]), bool(row[1])))
            text = str(setting_value_sql(value)).strip("'")
            conn.execute(f"ALTER SYSTEM SET {name} = {setting_value_sql(text)}")
            conn.execute("SELECT pg_reload_conf()")

    # -- PgBouncer
    def _pgbouncer_read(self, key: str) -> str:
        if self.pgbouncer is None:
            raise SettingsError(f"pgbouncer.{key}: the scenario names no PgBouncer (pgbouncer = \"pgbouncer://...\")")
        with psycopg.connect(**libpq_params(self.pgbouncer, timeout_s=self.timeout_s, dbname="pgbouncer"),
                             autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
            cur = conn.cursor()
            cur.execute("SHOW CONFIG")
            for row in cur.fetchall():
                if row[0] == key:
                    return str(row[1])
        raise SettingsError(f"PgBouncer has no setting {key!r}")

    def _pgbouncer_exec(self, sql: str) -> None:
        if self.pgbouncer is None:
            raise SettingsError("the scenario names no PgBouncer (pgbouncer = \"pgbouncer://...\")")
        with psycopg.connect(**libpq_params(self.pgbouncer, timeout_s=self.timeout_s, dbname="pgbouncer"),
                             autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
            conn.cursor().execute(sql)

    def _pgbouncer_set(self, name: str, value: Any) -> None:
        key = name[len(PGBOUNCER_PREFIX):]
        if name not in self.saved:
            self.saved[name] = _Saved(self._pgbouncer_read(key))
        self._pgbouncer_exec(f"SET {key} = {value}")


def _mysql_literal(text: str) -> str:
    """A value read back from @@GLOBAL, as SET GLOBAL takes it."""
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
