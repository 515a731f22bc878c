"""Where to connect: one `Target` per server, from a DSN, sysbench-style flags,
option files (~/.my.cnf [client]) and libpq's environment / ~/.pgpass.

Passwords live only in `Target.password`; `Target.describe()` and `to_dict()`
never include them, so anything printed or saved goes through those.
"""

from __future__ import annotations

import configparser
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qsl, unquote

KINDS = ("mysql", "postgresql", "proxysql", "pgbouncer", "sqlite", "null")

_SCHEME_KIND = {
    "mysql": "mysql",
    "mariadb": "mysql",
    "postgres": "postgresql",
    "postgresql": "postgresql",
    "pgsql": "postgresql",
    "proxysql": "proxysql",
    "pgbouncer": "pgbouncer",
    "sqlite": "sqlite",
}

DEFAULT_PORTS = {"mysql": 3306, "postgresql": 5432, "proxysql": 6032, "pgbouncer": 6432}


class TargetError(ValueError):
    """A DSN or connection option that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    host: str = "127.0.0.1"
    port: int = 0
    user: str = ""
    password: str | None = field(default=None, repr=False)
    database: str = ""
    socket: str = ""
    ssl: str = ""  # "", "require", "verify-ca", "verify-full" (mysql: "on" == require)
    options: dict[str, str] = field(default_factory=dict)
    # libpq's hostaddr: the address connected to, `host` then only names it (TLS, ~/.pgpass)
    hostaddr: str = ""
    # libpq's further hosts (host, port; 0 = the default), tried in order after the first
    more_hosts: tuple[tuple[str, int], ...] = ()
    # the servers a DSN named when one of them was picked (pinned): the run measures the one that answered
    candidates: tuple[str, ...] = ()

    @property
    def effective_port(self) -> int:
        return self.port or DEFAULT_PORTS.get(self.kind, 0)

    def describe(self) -> str:
        """Human label without secrets: kind://user@host:port/db."""
        if self.kind in ("sqlite", "null", "fileio"):
            return f"{self.kind}:{self.database}" if self.database else self.kind
        where = ",".join(self.endpoints())
        who = f"{self.user}@" if self.user else ""
        db = f"/{self.database}" if self.database else ""
        return f"{self.kind}://{who}{where}{db}"

    def endpoints(self) -> list[str]:
        """Each server the client may reach, in the order it tries them: host:port,
        the address connected to when a hostaddr is given, or the socket file
        (a PostgreSQL socket is a directory and the port names the file in it).

        >>> Target("postgresql", socket="/run/pg", port=25432).endpoints()
        ['/run/pg/.s.PGSQL.25432']
        >>> Target("postgresql", host="db", hostaddr="10.0.0.5", more_hosts=(("db2", 0),)).endpoints()
        ['10.0.0.5:5432', 'db2:5432']
        """
        if self.socket:
            pg = self.kind in ("postgresql", "pgbouncer")
            return [f"{self.socket.rstrip('/')}/.s.PGSQL.{self.effective_port}" if pg else self.socket]
        first = self.hostaddr or self.host
        return [_host_port(first, self.effective_port)] + [
            _host_port(h, p or DEFAULT_PORTS.get(self.kind, 0)) for h, p in self.more_hosts
        ]

    def to_dict(self) -> dict[str, object]:
        """For results folders: everything but the password."""
        return {
            "kind": self.kind,
            "host": self.host,
            "port": self.effective_port,
            "user": self.user,
            "database": self.database,
            "socket": self.socket,
            "hostaddr": self.hostaddr,
            "servers": list(self.candidates) if self.candidates else self.endpoints(),
            **({"reached": self.endpoints()[0]} if self.candidates else {}),
            "ssl": self.ssl,
            "password_set": self.password is not None,
        }

    def pinned(self, host: str, port: int) -> "Target":
        """The one of several servers that answered, as the target from now
        on (the others kept as `candidates`): a run measures one server, and
        its header, summary and config.json name it.

        >>> t = Target("postgresql", host="h1", port=1, more_hosts=(("h2", 15432),)).pinned("h2", 15432)
        >>> t.describe(), t.to_dict()["servers"], t.to_dict()["reached"]
        ('postgresql://h2:15432', ['h1:1', 'h2:15432'], 'h2:15432')
        """
        hostaddr = self.hostaddr if host == self.host else ""
        return replace(self, host=host, port=port, hostaddr=hostaddr, more_hosts=(), candidates=tuple(self.endpoints()))

    def with_password(self, password: str | None) -> "Target":
        return replace(self, password=password)


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_dsn(dsn: str, default_kind: str | None = None) -> Target:
    """Parse a URI DSN the way its client library reads it: libpq's for
    `postgresql://` and `pgbouncer://` (several hosts `h1:p1,h2:p2`, a socket
    directory as a percent-encoded host, and every part also as a query
    parameter: `?host=/run/postgresql&port=5433&hostaddr=...&sslmode=...`,
    a parameter winning over the same part in the URI), MySQL's for
    `mysql://` (`?socket=/path`, or the socket as `(/path)` or a
    percent-encoded host), `proxysql://admin@127.0.0.1:6032`, or a libpq
    keyword string `host=... port=... dbname=...`.

    >>> parse_dsn("mysql://sb:pw@db1:3307/sbtest").describe()
    'mysql://sb@db1:3307/sbtest'
    >>> parse_dsn("host=h port=5433 dbname=x user=u", "postgresql").effective_port
    5433
    >>> parse_dsn("postgresql://sbtest@/sbtest?host=/run/pg&port=25432").describe()
    'postgresql://sbtest@/run/pg/.s.PGSQL.25432/sbtest'
    >>> parse_dsn("postgresql://u@h1:5433,h2/db").describe()
    'postgresql://u@h1:5433,h2:5432/db'
    >>> parse_dsn("postgresql://u@[::1:5432/db")
    Traceback (most recent call last):
    benchtop.target.dsn.TargetError: cannot read DSN 'postgresql://u@[::1:5432/db': an unclosed [ (an IPv6 host is written [::1])
    >>> parse_dsn("postgresql://u:secret@h:99999/db")
    Traceback (most recent call last):
    benchtop.target.dsn.TargetError: bad port '99999' in DSN 'postgresql://u:***@h:99999/db': a port is 1 to 65535
    """
    dsn = dsn.strip()
    if "://" not in dsn:
        if "=" in dsn and default_kind in ("postgresql", "pgbouncer"):
            return _parse_keywords(dsn, default_kind)
        raise TargetError(f"cannot read DSN {_redact(dsn)!r}: expected KIND://[user[:password]@]host[:port][/db]")
    scheme, rest = dsn.split("://", 1)
    kind = _SCHEME_KIND.get(scheme.lower())
    if kind is None:
        raise TargetError(
            f"unknown DSN scheme {scheme!r}: use one of mysql://, postgresql://, proxysql://, pgbouncer://"
        )
    rest, _, query_text = rest.partition("?")
    rest = rest.split("#", 1)[0]
    if kind == "sqlite":
        return Target(kind="sqlite", database=unquote(rest))
    netloc, path = _split_netloc(rest)
    userinfo, at, hostspec = netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    parts = _Parts(user=unquote(user), password=unquote(password) if colon else None,
                   database=unquote(path), hosts=_hosts(hostspec, kind, dsn))
    try:
        query = dict(parse_qsl(query_text, keep_blank_values=True, strict_parsing=bool(query_text)))
    except ValueError:
        raise TargetError(f"cannot read the parameters of DSN {_redact(dsn)!r}: "
                          "expected ?key=value&key=value") from None
    return _apply_query(kind, parts, query, dsn)


@dataclass(slots=True)
class _Parts:
    user: str
    password: str | None
    database: str
    hosts: list[tuple[str, str]]  # (host or socket, port text) as written


def _split_netloc(rest: str) -> tuple[str, str]:
    """(user@hosts, database): the first '/' outside [] and () ends the hosts."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0 and "@" not in rest[i + 1 :].split("/", 1)[0]:
            return rest[:i], rest[i + 1 :]
    return rest, ""


def _hosts(hostspec: str, kind: str, dsn: str) -> list[tuple[str, str]]:
    """`h1:p1,[::1]:p2,%2Frun%2Fpg,(/tmp/mysql.sock)` -> [(host, port text)]."""
    out: list[tuple[str, str]] = []
    for item in hostspec.split(",") if hostspec else []:
        if item.startswith("("):
            host, close, tail = item[1:].partition(")")
        elif item.startswith("["):
            host, close, tail = item[1:].partition("]")
            if not close:
                raise TargetError(f"cannot read DSN {_redact(dsn)!r}: an unclosed [ (an IPv6 host is written [::1])")
        else:
            host, close, tail = item.rpartition(":") if ":" in item else (item, "", "")
            tail = ":" + tail if close else ""
        if tail and not tail.startswith(":"):
            raise TargetError(f"cannot read host {item!r} in DSN {_redact(dsn)!r}")
        out.append((unquote(host), tail[1:]))
    return out


def _port(text: str, dsn: str) -> int:
    """A port as written: "" for the default (0), else 1..65535."""
    if not text:
        return 0
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise TargetError(f"bad port {text!r} in DSN {_redact(dsn)!r}: a port is 1 to 65535")
    return int(text)


# query parameters that name a part of the URI, per client library
_PG_PARTS = {"host", "port", "hostaddr", "user", "password", "dbname", "sslmode", "ssl"}
_MY_PARTS = {"host", "port", "socket", "unix_socket", "user", "password", "database", "schema", "ssl", "ssl-mode",
             "ssl_mode", "sslmode"}


def _apply_query(kind: str, parts: _Parts, query: dict[str, str], dsn: str) -> Target:
    pg = kind in ("postgresql", "pgbouncer")
    mine = _PG_PARTS if pg else _MY_PARTS
    given = {k: query.pop(k) for k in list(query) if k in mine}
    if "host" in given or "port" in given:
        hosts = given["host"].split(",") if "host" in given else [h for h, _ in parts.hosts] or [""]
        ports = given["port"].split(",") if "port" in given else [p for _, p in parts.hosts] or [""]
        if len(ports) == 1:
            ports = ports * len(hosts)
        if len(ports) != len(hosts):
            raise TargetError(f"DSN {_redact(dsn)!r} names {len(hosts)} hosts but {len(ports)} ports")
        parts.hosts = list(zip(hosts, ports))
    pairs = [(h, _port(p, dsn)) for h, p in parts.hosts] or [("", 0)]
    if len(pairs) > 1 and not pg:
        raise TargetError(f"DSN {_redact(dsn)!r} names {len(pairs)} hosts: a {kind} target is one server")
    host, port = pairs[0]
    socket = given.pop("socket", "") or given.pop("unix_socket", "")
    if host.startswith("/") and not socket:
        # a path as the host: libpq's socket directory, MySQL's socket file
        host, socket = "", host
    password = given.get("password", parts.password)
    return Target(
        kind=kind,
        host=host or "127.0.0.1",
        port=port,
        user=given.get("user", parts.user),
        password=password,
        database=given.get("dbname", given.get("database", given.get("schema", parts.database))),
        socket=socket,
        ssl=given.get("sslmode", "") or given.get("ssl", "") or given.get("ssl-mode", "") or given.get("ssl_mode", ""),
        hostaddr=given.get("hostaddr", ""),
        more_hosts=tuple(pairs[1:]),
        options=query,
    )


def _parse_keywords(dsn: str, kind: str) -> Target:
    kv: dict[str, str] = {}
    for item in dsn.split():
        if "=" not in item:
            raise TargetError(f"cannot read connection string item {item!r}: expected key=value")
        k, v = item.split("=", 1)
        kv[k] = v.strip("'")
    return _apply_query(kind, _Parts(user="", password=None, database="", hosts=[]), kv, dsn)


def _redact(dsn: str) -> str:
    """Hide the password of a DSN, however it is written (URI, URI without a
    scheme, query parameter, keyword string).

    >>> _redact("mysql://u:secret@h/db")
    'mysql://u:***@h/db'
    >>> _redact("u:secret@127.0.0.1"), _redact("host=h password=pw"), _redact("pgsql://h/db?password=pw&x=1")
    ('u:***@127.0.0.1', 'host=h password=***', 'pgsql://h/db?password=***&x=1')
    """
    scheme, sep, rest = dsn.partition("://") if "://" in dsn else ("", "", dsn)
    rest = re.sub(r"(password=)('[^']*'|[^\s&#]*)", r"\1***", rest)
    if "@" in rest and (sep or "=" not in rest):
        cred, host = rest.rsplit("@", 1)
        if ":" in cred:
            cred = cred.split(":", 1)[0] + ":***"
        rest = f"{cred}@{host}"
    return f"{scheme}{sep}{rest}"


redact_dsn = _redact


# ---------------------------------------------------------------- option files


def read_my_cnf(path: Path | None = None, group: str = "client") -> dict[str, str]:
    """Options from ~/.my.cnf's [client] section (as the mysql client reads it)."""
    path = path or Path(os.environ.get("MYSQL_HOME_CNF", Path.home() / ".my.cnf"))
    if not path.is_file():
        return {}
    cp = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None)
    try:
        cp.read_string("[__top__]\n" + path.read_text(errors="replace"))
    except configparser.Error as exc:
        raise TargetError(f"{path}: cannot read option file: {str(exc).splitlines()[0]}") from None
    out: dict[str, str] = {}
    for section in (group, "mysql" if group == "client" else group):
        if cp.has_section(section):
            for k, v in cp.items(section):
                out[k.replace("-", "_")] = (v or "").strip().strip("'\"")
    return out


def pgpass_lookup(host: str, port: int, database: str, user: str, path: Path | None = None) -> str | None:
    """The password ~/.pgpass (or $PGPASSFILE) gives for this connection."""
    path = path or Path(os.environ.get("PGPASSFILE", Path.home() / ".pgpass"))
    if not path.is_file():
        return None
    for raw in path.read_text(errors="replace").splitlines():
        if not raw or raw.startswith("#"):
            continue
        fields = _split_pgpass(raw)
        if len(fields) != 5:
            continue
        want = (host, str(port), database, user)
        if all(f == "*" or f == w for f, w in zip(fields[:4], want)):
            return fields[4]
    return None


def _split_pgpass(line: str) -> list[str]:
    fields, cur, esc = [], [], False
    for ch in line:
        if esc:
            cur.append(ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == ":":
            fields.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    fields.append("".join(cur))
    return fields


def fill_defaults(t: Target) -> Target:
    """Complete a target from option files and the environment, the way the
    native clients would: ~/.my.cnf for MySQL-protocol kinds, PG* variables and
    ~/.pgpass for PostgreSQL-protocol kinds."""
    if t.kind in ("mysql", "proxysql"):
        cnf = read_my_cnf()
        user = t.user or cnf.get("user", "") or ("admin" if t.kind == "proxysql" else "root")
        password = t.password
        if password is None:
            password = os.environ.get("MYSQL_PWD") or cnf.get("password")
        host = t.host or cnf.get("host", "127.0.0.1")
        port = t.port or int(cnf.get("port", "0") or 0)
        socket = t.socket or (cnf.get("socket", "") if not t.port else "")
        return replace(t, user=user, password=password, host=host, port=port, socket=socket)
    if t.kind in ("postgresql", "pgbouncer"):
        env = os.environ
        user = t.user or env.get("PGUSER", "") or _os_user()
        host = t.host or env.get("PGHOST", "127.0.0.1")
        port = t.port or int(env.get("PGPORT", "0") or 0) or DEFAULT_PORTS[t.kind]
        database = t.database or env.get("PGDATABASE", "") or ("pgbouncer" if t.kind == "pgbouncer" else user)
        password = t.password
        if password is None:
            # as libpq: a socket connection matches ~/.pgpass lines for localhost
            password = env.get("PGPASSWORD") or pgpass_lookup("localhost" if t.socket else host, port, database, user)
        return replace(t, user=user, host=host, port=port, database=database, password=password)
    return t


def _os_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER", "postgres")
