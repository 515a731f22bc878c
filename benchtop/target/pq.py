"""A plain libpq session for reading a PostgreSQL server: text results
turned into Python values by column type, errors as one exception carrying
the SQLSTATE.  The monitor's PostgreSQL source reads through it; importing
it costs a few milliseconds where a full driver cost a run ~150 ms of CPU.

Calls block in libpq with the GIL released (cffi releases it around every
C call); another thread frees a blocked call with interrupt(), which shuts
the socket down.
"""

from __future__ import annotations

import re
import threading
from decimal import Decimal
from typing import Any, Callable, Mapping

from benchtop.target._libpq import ffi, lib

_INT_OIDS = frozenset({20, 21, 23, 26, 28})  # int8 int2 int4 oid xid
_FLOAT_OIDS = frozenset({700, 701})
_INT_ARRAY_OIDS = frozenset({1005, 1007, 1016, 1028})  # int2[] int4[] int8[] oid[]
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


class PqError(Exception):
    """A failed connect or query: `sqlstate` is the server's code ("" when
    it sent none), `lost` says the connection is gone."""

    def __init__(self, message: str, sqlstate: str = "", lost: bool = False) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.lost = lost


def available() -> bool:
    """Whether this install was built against libpq."""
    return hasattr(lib, "PQconnectdb")


def _int_array(text: str) -> list[int | None]:
    """An integer array's text form as a list (NULL elements as None).

    >>> _int_array("{1,NULL,3}"), _int_array("{}")
    ([1, None, 3], [])
    """
    inner = text.strip("{}")
    return [None if x == "NULL" else int(x) for x in inner.split(",")] if inner else []


def _converter(oid: int) -> Callable[[str], Any]:
    """The Python value of a column's text, as psycopg gives it.

    >>> _converter(16)("t"), _converter(20)("42"), _converter(701)("0.5"), _converter(1700)("1.50")
    (True, 42, 0.5, Decimal('1.50'))
    >>> _converter(25)("text")
    'text'
    """
    if oid == 16:
        return lambda v: v == "t"
    if oid in _INT_OIDS:
        return int
    if oid in _FLOAT_OIDS:
        return float
    if oid == 1700:
        return Decimal
    if oid in _INT_ARRAY_OIDS:
        return _int_array
    return str


def _literal(value: Any) -> str:
    """A parameter as text; a list (of ids) becomes an array literal.

    >>> _literal([3, 1]), _literal(7)
    ('{3,1}', '7')
    """
    if isinstance(value, (list, tuple)):
        return "{" + ",".join(str(int(v)) for v in value) + "}"
    return str(value)


def numbered(sql: str, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """psycopg's %(name)s placeholders as $n, and the values in order.

    >>> numbered("SELECT %(a)s, %(b)s, %(a)s, 5 %% 2", {"a": 1, "b": 2})
    ('SELECT $1, $2, $1, 5 % 2', [1, 2])
    """
    order: list[str] = []

    def number(m: re.Match[str]) -> str:
        name = m.group(1)
        if name is None:
            return "%"
        if name not in order:
            order.append(name)
        return f"${order.index(name) + 1}"

    text = _PLACEHOLDER.sub(number, sql)
    return text, [params[name] for name in order]


class Connection:
    """One libpq connection (autocommit: libpq has no other mode)."""

    def __init__(self, conninfo: str) -> None:
        if not available():
            raise PqError("this benchtop was built without libpq (install libpq-dev and reinstall)", lost=True)
        conn = lib.PQconnectdb(conninfo.encode())
        if conn == ffi.NULL:
            raise PqError("out of memory", lost=True)
        if lib.PQstatus(conn) != lib.CONNECTION_OK:
            message = _text(lib.PQerrorMessage(conn))
            lib.PQfinish(conn)
            raise PqError(message or "cannot connect", lost=True)
        lib.bt_pq_quiet(conn)
        self._conn = conn
        # interrupt() and close() come from different threads: the socket is
        # never shut after libpq closed it (its number may be another's by then)
        self._lock = threading.Lock()
        self.server_version: int = lib.PQserverVersion(conn)
        self.backend_pid: int = lib.PQbackendPID(conn)
        # the host and port libpq reached: the first that answered of several
        self.host: str = _text(lib.PQhost(conn))
        port = _text(lib.PQport(conn))
        self.port: int = int(port) if port.isdigit() else 0

    def interrupt(self, shut_down: Callable[[int], None]) -> None:
        """Frees a call blocked in another thread: `shut_down` gets the socket
        (it must leave the descriptor open for libpq to close)."""
        with self._lock:
            fd = lib.PQsocket(self._conn) if self._conn is not None else -1
            if fd >= 0:
                shut_down(fd)

    @property
    def in_transaction(self) -> bool:
        conn = self._conn
        return conn is not None and lib.PQtransactionStatus(conn) in (lib.PQTRANS_INTRANS, lib.PQTRANS_INERROR)

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one statement (or of the last of several, without
        params), each a dict by column name."""
        conn = self._conn
        if conn is None:
            raise PqError("the connection is closed", lost=True)
        if params:
            text, values = numbered(sql, params)
            keep = [ffi.NULL if v is None else ffi.new("char[]", _literal(v).encode()) for v in values]
            res = lib.PQexecParams(conn, text.encode(), len(keep), ffi.NULL, ffi.new("char *[]", keep), ffi.NULL,
                                   ffi.NULL, 0)
        else:
            res = lib.PQexec(conn, sql.encode())
        if res == ffi.NULL:
            raise PqError(_text(lib.PQerrorMessage(conn)) or "out of memory", lost=self._lost())
        try:
            status = lib.PQresultStatus(res)
            if status == lib.PGRES_COMMAND_OK or status == lib.PGRES_EMPTY_QUERY:
                return []
            if status != lib.PGRES_TUPLES_OK:
                state = _text(lib.PQresultErrorField(res, lib.PG_DIAG_SQLSTATE))
                message = (_text(lib.PQresultErrorField(res, lib.PG_DIAG_MESSAGE_PRIMARY))
                           or _text(lib.PQerrorMessage(conn)))
                raise PqError(message or "query failed", state, self._lost() or state.startswith("08"))
            return _rows(res)
        finally:
            lib.PQclear(res)

    def _lost(self) -> bool:
        return self._conn is None or lib.PQstatus(self._conn) != lib.CONNECTION_OK

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                lib.PQfinish(conn)

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _text(p: Any) -> str:
    return ffi.string(p).decode(errors="replace").strip() if p != ffi.NULL else ""


def _rows(res: Any) -> list[dict[str, Any]]:
    nrows, ncols = lib.PQntuples(res), lib.PQnfields(res)
    if ncols == 0:
        return [{} for _ in range(nrows)]  # SELECT FROM t: rows without columns
    fields = [(ffi.string(lib.PQfname(res, c)).decode(), _converter(lib.PQftype(res, c))) for c in range(ncols)]
    size, cells = lib.bt_pq_pack(res, ffi.NULL, ffi.NULL), nrows * ncols
    buf, nulls = ffi.new("char[]", size), ffi.new("char[]", cells)
    lib.bt_pq_pack(res, buf, nulls)
    values = ffi.unpack(buf, size).decode(errors="replace").split("\0")
    null = ffi.unpack(nulls, cells)
    if not any(null):
        return [{name: convert(v) for (name, convert), v in zip(fields, values[i:i + ncols])}
                for i in range(0, cells, ncols)]
    return [{name: None if z else convert(v) for (name, convert), v, z in
             zip(fields, values[i:i + ncols], null[i:i + ncols])} for i in range(0, cells, ncols)]
