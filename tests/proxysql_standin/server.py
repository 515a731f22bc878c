"""A small ProxySQL admin stand-in: the MySQL protocol (handshake v10,
mysql_native_password, COM_QUERY text result sets) in front of SQLite, which
is what ProxySQL's admin module is too.

Faithful where a monitoring client can tell: every value is sent as a string
(MYSQL_TYPE_VAR_STRING columns, as ProxySQL's SQLite3 result conversion
does), NULL stays NULL, empty result sets still carry their columns, SQL errors
come back as ERROR 1045 (28000) "ProxySQL Admin Error: <sqlite message>",
the `stats` user only sees the stats schema, and reading a `*_reset` table
returns the counters and zeroes them.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import socket
import socketserver
import sqlite3
import struct
import threading
from typing import Any, Sequence

from tests.proxysql_standin import schema, traffic

_CAPS = (
    0x00000001  # CLIENT_LONG_PASSWORD
    | 0x00000002  # CLIENT_FOUND_ROWS
    | 0x00000004  # CLIENT_LONG_FLAG
    | 0x00000008  # CLIENT_CONNECT_WITH_DB
    | 0x00000200  # CLIENT_PROTOCOL_41
    | 0x00002000  # CLIENT_TRANSACTIONS
    | 0x00008000  # CLIENT_SECURE_CONNECTION
    | 0x00020000  # CLIENT_MULTI_RESULTS
    | 0x00080000  # CLIENT_PLUGIN_AUTH
)
_CLIENT_CONNECT_WITH_DB = 0x08
_CLIENT_SECURE_CONNECTION = 0x8000
_CLIENT_PLUGIN_AUTH = 0x80000
_CLIENT_PLUGIN_AUTH_LENENC = 0x200000
_CLIENT_CONNECT_ATTRS = 0x100000
_STATUS_AUTOCOMMIT = 0x0002
_TYPE_VAR_STRING = 0xFD
_UTF8 = 33
_NATIVE = b"mysql_native_password"

COM_QUIT, COM_INIT_DB, COM_QUERY, COM_PING = 0x01, 0x02, 0x03, 0x0E

_RESET_RE = re.compile(r"\b(\w+_reset)\b", re.IGNORECASE)
_SPECIAL_SELECTS = {
    re.compile(r"select\s+@@admin-version", re.I): ("@@admin-version", schema.VERSION),
    re.compile(r"select\s+version\(\s*\)", re.I): ("version()", schema.VERSION),
    re.compile(r"select\s+@@version_comment(\s+limit\s+1)?", re.I): ("@@version_comment", "(ProxySQL Admin Module)"),
}
_SHOW_TABLES = re.compile(r"show\s+tables(?:\s+(?:from|in)\s+`?(\w+)`?)?", re.I)
_SHOW_CREATE = re.compile(r"show\s+create\s+table\s+(?:`?(\w+)`?\.)?`?(\w+)`?", re.I)
# ProxySQL rewrites SHOW CREATE TABLE into this query (ProxySQL_Admin.cpp).
_SHOW_CREATE_SQL = (
    "SELECT name AS 'table', REPLACE(REPLACE(sql, ' , ', X'2C0A20202020'), "
    "'CREATE TABLE ' || name || ' (', 'CREATE TABLE ' || name || ' (' || X'0A20202020') AS 'Create Table' "
    "FROM {schema}.sqlite_master WHERE type='table' AND name=?"
)


class AdminError(Exception):
    """An ERR packet to send: (code, sqlstate, message)."""

    def __init__(self, message: str, code: int = 1045, state: str = "28000") -> None:
        super().__init__(message)
        self.code, self.state = code, state


def _lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def _lenenc_str(b: bytes) -> bytes:
    return _lenenc_int(len(b)) + b


def _text(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    return str(value).encode()


def native_password_ok(scramble: bytes, password: str, response: bytes) -> bool:
    """mysql_native_password: response = SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))."""
    if not password:
        return response == b""
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(scramble + hashlib.sha1(h1).digest()).digest()
    return response == bytes(a ^ b for a, b in zip(h1, h2))


class Standin:
    """One running stand-in.  Tests use `execute()` to shape the tables,
    `simulate_traffic()` to bump counters, and `queries_seen` to check what a
    client sent."""

    admin_user = "admin"
    admin_password = "admin"
    stats_user = "stats"
    stats_password = "stats"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, hostgroup_pool: bool = False) -> None:
        uri = f"file:proxysql_standin_{os.getpid()}_{id(self)}?mode=memory&cache=shared"
        self._lock = threading.RLock()
        self._admin_db = sqlite3.connect(":memory:", uri=True, check_same_thread=False, isolation_level=None)
        self._admin_db.execute("ATTACH DATABASE ? AS stats", (uri,))
        # The stats user's session sees the stats schema only, as in ProxySQL.
        self._stats_db = sqlite3.connect(":memory:", uri=True, check_same_thread=False, isolation_level=None)
        self._stats_db.execute("ATTACH DATABASE ? AS stats", (uri,))
        with self._lock:
            schema.create_all(self._admin_db, hostgroup_pool)
            traffic.seed(self)
        self.queries_seen: list[str] = []
        self._users = {self.admin_user: (self.admin_password, False), self.stats_user: (self.stats_password, True)}
        self._hung = threading.Event()
        self._stopping = threading.Event()
        self._clients: set[socket.socket] = set()
        self._conn_ids = itertools.count(1)
        self._server = _TCPServer((host, port), _Handler)
        self._server.standin = self
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name=f"proxysql-standin:{self.port}", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------ test API
    def dsn(self, user: str | None = None, password: str | None = None) -> str:
        user = user or self.admin_user
        password = password if password is not None else self._users.get(user, ("", False))[0]
        return f"proxysql://{user}:{password}@{self.host}:{self.port}"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run SQL as the admin (stats tables are reachable unqualified)."""
        with self._lock:
            return self._admin_db.execute(sql, params).fetchall()

    def simulate_traffic(self, seconds: float = 1.0, qps: float = 1000.0) -> None:
        """Add `seconds` worth of traffic at `qps` to every counter, at once
        (deterministic: see traffic.py for the mix)."""
        with self._lock:
            traffic.bump(self, seconds, qps)

    def set_hung(self, hung: bool) -> None:
        """While hung, queries are read but never answered (a stuck proxy)."""
        if hung:
            self._hung.set()
        else:
            self._hung.clear()

    def stop(self) -> None:
        """Stop listening and drop every client (as a killed proxy would); idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        for sock in list(self._clients):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)
        with self._lock:
            self._admin_db.close()
            self._stats_db.close()

    def __enter__(self) -> "Standin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ queries
    def run_query(self, sql: str, stats_user: bool) -> tuple[list[str], list[tuple]] | int:
        """(columns, rows) for a result set, or the affected-row count."""
        self.queries_seen.append(sql)
        q = sql.strip().rstrip(";").strip()
        for pattern, (column, value) in _SPECIAL_SELECTS.items():
            if pattern.fullmatch(q):
                return [column], [(value,)]
        if re.match(r"set\s", q, re.I):
            return 0  # ProxySQL accepts client SET statements silently
        db = self._stats_db if stats_user else self._admin_db
        m = _SHOW_TABLES.fullmatch(q)
        if m:
            where = m.group(1) or "main"
            sql = f"SELECT name AS tables FROM {where}.sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            return self._sqlite(db, sql, ())
        m = _SHOW_CREATE.fullmatch(q)
        if m:
            return self._sqlite(db, _SHOW_CREATE_SQL.format(schema=m.group(1) or "main"), (m.group(2),))
        return self._sqlite(db, q, (), resets=_reset_tables(q))

    def _sqlite(self, db: sqlite3.Connection, sql: str, params: Sequence[Any], resets: Sequence[str] = ()):
        with self._lock:
            try:
                for table in resets:
                    base = table[: -len("_reset")]
                    db.execute(f"DELETE FROM stats.{table}")
                    db.execute(f"INSERT INTO stats.{table} SELECT * FROM stats.{base}")
                cur = db.execute(sql, params)
                result = ([d[0] for d in cur.description], cur.fetchall()) if cur.description else max(cur.rowcount, 0)
                for table in resets:
                    db.execute(schema.RESET_TABLES[table])
                return result
            except sqlite3.Error as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise AdminError(f"ProxySQL Admin Error: {exc}") from None


def _reset_tables(sql: str) -> list[str]:
    return sorted({m.lower() for m in _RESET_RE.findall(sql)} & schema.RESET_TABLES.keys())


# ---------------------------------------------------------------- protocol


class _TCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    standin: Standin


class _Closed(Exception):
    pass


class _Handler(socketserver.BaseRequestHandler):
    server: _TCPServer

    def setup(self) -> None:
        self.standin = self.server.standin
        self.sock: socket.socket = self.request
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.standin._clients.add(self.sock)
        self.seq = 0

    def finish(self) -> None:
        self.standin._clients.discard(self.sock)

    def handle(self) -> None:
        try:
            stats_user = self._handshake()
            if stats_user is None:
                return
            while not self.standin._stopping.is_set():
                packet = self._read()
                self.seq = 1
                command, body = packet[0], packet[1:]
                if command == COM_QUIT:
                    return
                if command in (COM_PING, COM_INIT_DB):
                    self._ok()
                elif command == COM_QUERY:
                    self._query(body.decode(errors="replace"), stats_user)
                else:
                    self._err(AdminError(f"ProxySQL Admin Error: command {command} not supported", 1047, "08S01"))
        except (_Closed, OSError):
            return

    # -- framing
    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise _Closed
            buf += chunk
        return buf

    def _read(self) -> bytes:
        header = self._recv_exact(4)
        length = header[0] | header[1] << 8 | header[2] << 16
        self.seq = (header[3] + 1) & 0xFF
        return self._recv_exact(length)

    def _send(self, *payloads: bytes) -> None:
        out = bytearray()
        for payload in payloads:
            out += struct.pack("<I", len(payload))[:3] + bytes([self.seq]) + payload
            self.seq = (self.seq + 1) & 0xFF
        self.sock.sendall(out)

    def _ok(self, affected: int = 0) -> None:
        self._send(b"\x00" + _lenenc_int(affected) + b"\x00" + struct.pack("<HH", _STATUS_AUTOCOMMIT, 0))

    def _err(self, exc: AdminError) -> None:
        self._send(b"\xff" + struct.pack("<H", exc.code) + b"#" + exc.state.encode() + str(exc).encode())

    def _eof(self) -> bytes:
        return b"\xfe" + struct.pack("<HH", 0, _STATUS_AUTOCOMMIT)

    # -- connection phase
    def _handshake(self) -> bool | None:
        scramble = os.urandom(20).translate(bytes(range(1, 256)) + b"\x01")  # no NUL bytes
        conn_id = next(self.standin._conn_ids)
        greeting = (
            b"\x0a" + b"5.5.30\x00" + struct.pack("<I", conn_id) + scramble[:8] + b"\x00"
            + struct.pack("<H", _CAPS & 0xFFFF) + bytes([_UTF8]) + struct.pack("<H", _STATUS_AUTOCOMMIT)
            + struct.pack("<H", _CAPS >> 16) + bytes([21]) + b"\x00" * 10 + scramble[8:] + b"\x00"
            + _NATIVE + b"\x00"
        )  # fmt: skip
        self.seq = 0
        self._send(greeting)
        resp = self._read()
        caps = struct.unpack_from("<I", resp, 0)[0]
        pos = 32
        end = resp.index(b"\x00", pos)
        user = resp[pos:end].decode(errors="replace")
        pos = end + 1
        if caps & _CLIENT_PLUGIN_AUTH_LENENC:
            n, pos = _read_lenenc(resp, pos)
            auth, pos = resp[pos : pos + n], pos + n
        elif caps & _CLIENT_SECURE_CONNECTION:
            n = resp[pos]
            auth, pos = resp[pos + 1 : pos + 1 + n], pos + 1 + n
        else:
            end = resp.index(b"\x00", pos)
            auth, pos = resp[pos:end], end + 1
        if caps & _CLIENT_CONNECT_WITH_DB and pos < len(resp):
            pos = resp.index(b"\x00", pos) + 1
        plugin = _NATIVE
        if caps & _CLIENT_PLUGIN_AUTH and pos < len(resp):
            end = resp.find(b"\x00", pos)
            plugin = resp[pos : end if end >= 0 else len(resp)]
        if plugin != _NATIVE:
            self._send(b"\xfe" + _NATIVE + b"\x00" + scramble + b"\x00")
            auth = self._read()
        password, is_stats = self.standin._users.get(user, (None, False))
        if password is None or not native_password_ok(scramble, password, auth):
            using = "YES" if auth else "NO"
            self._err(AdminError(f"ProxySQL Error: Access denied for user '{user}'@'127.0.0.1' (using password: {using})"))
            return None
        self._ok()
        return is_stats

    # -- command phase
    def _query(self, sql: str, stats_user: bool) -> None:
        if self.standin._hung.is_set():
            self.standin.queries_seen.append(sql)
            while self.standin._hung.is_set() and not self.standin._stopping.is_set():
                self.standin._stopping.wait(0.05)
            raise _Closed
        try:
            result = self.standin.run_query(sql, stats_user)
        except AdminError as exc:
            self._err(exc)
            return
        if isinstance(result, int):
            self._ok(result)
            return
        columns, rows = result
        packets = [_lenenc_int(len(columns))]
        for name in columns:
            packets.append(
                _lenenc_str(b"def") + _lenenc_str(b"") * 3 + _lenenc_str(name.encode()) + _lenenc_str(b"")
                + b"\x0c" + struct.pack("<HIBHB", _UTF8, 15, _TYPE_VAR_STRING, 1, 0x1F) + b"\x00\x00"
            )  # fmt: skip
        packets.append(self._eof())
        for row in rows:
            packets.append(b"".join(b"\xfb" if (v := _text(x)) is None else _lenenc_str(v) for x in row))
        packets.append(self._eof())
        self._send(*packets)


def _read_lenenc(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFC:
        return struct.unpack_from("<H", buf, pos + 1)[0], pos + 3
    if first == 0xFD:
        return int.from_bytes(buf[pos + 1 : pos + 4], "little"), pos + 4
    return struct.unpack_from("<Q", buf, pos + 1)[0], pos + 9


def start_standin(port: int = 0, host: str = "127.0.0.1", hostgroup_pool: bool = False) -> Standin:
    """Start a stand-in on `port` (0: any free port) and return it, listening."""
    return Standin(host=host, port=port, hostgroup_pool=hostgroup_pool)
