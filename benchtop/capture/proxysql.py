"""ProxySQL's statement digests (stats_mysql_query_digest on its admin
interface), read with SELECTs only: no *_reset table, nothing changed.
ProxySQL keeps no literal values (its query log is a file on the proxy's
host), so each placeholder's range comes from the backend's columns when
`--mysql` names the backend's schema (read there, read-only), and is left
unknown otherwise."""

from __future__ import annotations

from typing import Any

import pymysql

from benchtop.capture.model import CaptureSourceError, Column
from benchtop.capture.mysql_columns import MySQLColumns
from benchtop.capture.order import Seen
from benchtop.capture.window import Totals
from benchtop.errors import one_line
from benchtop.target import Target, mysql_client
from benchtop.target.connection import pymysql_kwargs

_DIGESTS = "SELECT * FROM stats.stats_mysql_query_digest"
_COMMITS = "SELECT Total_cnt FROM stats.stats_mysql_commands_counters WHERE Command = 'COMMIT'"
_EXECUTES = "SELECT Variable_Value FROM stats.stats_mysql_global WHERE Variable_Name = 'Com_frontend_stmt_execute'"


def _int(row: dict[str, Any], name: str) -> int:
    """A counter by its name; 0 when this ProxySQL's table has no such column."""
    try:
        return int(row.get(name) or 0)
    except (TypeError, ValueError):
        return 0


def _connect(target: Target, timeout_s: float, what: str) -> pymysql.connections.Connection:
    try:
        return mysql_client.connect(**pymysql_kwargs(target, timeout_s=timeout_s, with_database=False))
    except (pymysql.MySQLError, OSError) as exc:
        raise CaptureSourceError(f"cannot connect to {what} {target.describe()}: {one_line(exc)}") from None


class ProxySQLReader:
    """Reads one ProxySQL's digests (summed over hostgroups, users and
    clients: the twin runs the statements, wherever ProxySQL sent them) of
    the backend schema `backend` names, or of every schema without one."""

    engine = "mysql"
    sample_source = "none: ProxySQL's digests keep no values"
    order_source = "none: ProxySQL's digests keep no transaction's statements"
    whole_transactions = False

    def __init__(self, target: Target, backend: Target | None = None, timeout_s: float = 5.0) -> None:
        self.target = target.describe()
        self._conn = _connect(target, timeout_s, "ProxySQL's admin interface")
        self._backend = _connect(backend, timeout_s, "the backend") if backend is not None else None
        self.schema = (backend.database or "") if backend is not None else ""
        self._backend_name = backend.describe() if backend is not None else ""
        rows = self._rows(self._conn, "SELECT @@admin-version", None)
        self.version = f"ProxySQL {next(iter(rows[0].values()))}" if rows else "ProxySQL"
        self._columns = MySQLColumns(lambda sql, args: self._rows(self._backend, sql, args), self.schema)
        self._executes: list[int] = []
        self._calls: list[int] = []

    def _rows(self, conn: pymysql.connections.Connection | None, sql: str, args: Any) -> list[dict[str, Any]]:
        if conn is None:
            return []
        where = self.target if conn is self._conn else self._backend_name
        try:
            with conn.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except pymysql.MySQLError as exc:
            raise CaptureSourceError(f"{where}: {one_line(exc)}") from None

    def totals(self) -> dict[str, Totals]:
        executes = self._rows(self._conn, _EXECUTES, None)
        self._executes.append(_int(executes[0], "Variable_Value") if executes else 0)
        sums: dict[str, Totals] = {}
        for r in self._rows(self._conn, _DIGESTS, None):
            schema = str(r.get("schemaname") or "")
            if self.schema and schema != self.schema:
                continue
            key = f"{schema}/{r.get('digest')}"
            t = Totals(str(r.get("digest_text") or ""), _int(r, "count_star"), _int(r, "sum_time") / 1000.0,
                       _int(r, "sum_rows_sent"), _int(r, "sum_rows_affected"))
            was = sums.get(key)
            sums[key] = t if was is None else Totals(t.text, was.calls + t.calls, was.total_ms + t.total_ms,
                                                     was.rows_sent + t.rows_sent, was.rows_affected + t.rows_affected)
        self._calls.append(sum(t.calls for t in sums.values()))
        return sums

    def samples(self) -> list[tuple[str, list[str]]]:
        return []

    def in_transactions(self) -> list[Seen]:
        return []

    def literals(self) -> bool:
        """Whether the clients sent text rather than executing prepared
        statements: fewer executions than half the digested statements."""
        if len(self._executes) < 2 or len(self._calls) < 2:
            return True
        return (self._executes[-1] - self._executes[0]) * 2 < max(self._calls[-1] - self._calls[0], 1)

    def commits(self) -> int | None:
        rows = self._rows(self._conn, _COMMITS, None)
        return _int(rows[0], "Total_cnt") if rows else None

    def notes(self) -> list[str]:
        said = ["through ProxySQL: its digests keep no values, the time is ProxySQL's (the backend's and the "
                "proxy's own) and rows examined are not counted"]
        if self._backend is None:
            said.append("no backend named (--mysql): the placeholders' columns and ranges are unknown")
        return said

    def column(self, table: str, name: str) -> Column | None:
        return self._columns.column(table, name) if self._backend is not None else None

    def close(self) -> None:
        for conn in (self._conn, self._backend):
            if conn is None:
                continue
            try:
                conn.close()
            except pymysql.MySQLError:
                pass
