"""What a MySQL/MariaDB schema's own catalogue says of a column a
placeholder stands for: its type and declared length from
information_schema, and for a numeric column an index leads with its range
(MIN/MAX read two index entries).  Shared by the capture of a server's own
digests and of ProxySQL's, whose backend holds the tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchtop.capture.model import Column

Rows = Callable[[str, Any], list[dict[str, Any]]]

_NUMERIC = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "float", "double",
            "year", "bit"}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class MySQLColumns:
    """Columns of `schema`, read once each through `rows` (a query with
    %s arguments, returning dict rows)."""

    def __init__(self, rows: Rows, schema: str) -> None:
        self._rows = rows
        self.schema = schema
        self._known: dict[tuple[str, str], Column | None] = {}

    def column(self, table: str, name: str) -> Column | None:
        if not self.schema:
            return None
        if (table, name) not in self._known:
            self._known[(table, name)] = self._read(table, name)
        return self._known[(table, name)]

    def _one(self, sql: str, args: Any) -> dict[str, Any]:
        rows = self._rows(sql, args)
        return rows[0] if rows else {}

    def _read(self, table: str, name: str) -> Column | None:
        info = self._one(
            "SELECT COLUMN_NAME AS name, DATA_TYPE AS type, CHARACTER_MAXIMUM_LENGTH AS length "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND COLUMN_NAME = %s",
            (self.schema, table, name))
        if not info:
            return None
        numeric = str(info["type"]).lower() in _NUMERIC
        real = str(info["name"])
        if not numeric:
            return Column(table, real, False, length=int(info["length"] or 0))
        leading = self._one(
            "SELECT COUNT(*) AS n FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND COLUMN_NAME = %s AND SEQ_IN_INDEX = 1",
            (self.schema, table, real))
        if not leading.get("n"):
            # no index leads with it: its range would take a scan of the table
            return Column(table, real, True)
        q = _quote(real)
        r = self._one(f"SELECT MIN({q}) AS lo, MAX({q}) AS hi FROM {_quote(self.schema)}.{_quote(table)}", None)
        lo, hi = r.get("lo"), r.get("hi")
        return Column(table, real, True, float(lo) if lo is not None else None, float(hi) if hi is not None else None)
