"""Where to connect: one `Target` per server, from a DSN, sysbench-style flags,
option files (~/.my.cnf [client]) and libpq's environment / ~/.pgpass.

Passwords live only in `Target.password`; `Target.describe()` and `to_dict()`
never include them, so anything printed or saved goes through those.
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

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

    @property
    def effective_port(self) -> int:
        return self.port or DEFAULT_PORTS.get(self.kind, 0)

    def describe(self) -> str:
        """Human label without secrets: kind://user@host:port/db."""
        if self.kind in ("sqlite", "null", "fileio"):
            return f"{self.kind}:{self.database}" if self.database else self.kind
        where = self.socket or f"{self.host}:{self.effective_port}"
        who = f"{self.user}@" if self.user else ""
        db = f"/{self.database}" if self.database else ""
        return f"{self.kind}://{who}{where}{db}"

    def to_dict(self) -> dict[str, object]:
        """For results folders: everything but the password."""
        return {
            "kind": self.kind,
            "host": self.host,
            "port": self.effective_port,
            "user": self.user,
            "database": self.database,
            "socket": self.socket,
            "ssl": self.ssl,
            "password_set": self.password is not None,
        }

    def with_password(self, password: str | None) -> "Target":
        return replace(self, password=password)


def parse_dsn(dsn: str, default_kind: str | None = None) -> Target:
    """Parse `mysql://user:pw@host:port/db?ssl=on`, `postgresql://...`,
    `proxysql://admin@127.0.0.1:6032`, `pgbouncer://user@host:6432/pgbouncer`,
    or a libpq keyword string `host=... port=... dbname=...`.

    >>> parse_dsn("mysql://sb:pw@db1:3307/sbtest").describe()
    'mysql://sb@db1:3307/sbtest'
    >>> parse_dsn("host=h port=5433 dbname=x user=u", "postgresql").effective_port
    5433
    >>> parse_dsn("postgresql://u@[::1:5432/db")
    Traceback (most recent call last):
    benchtop.target.dsn.TargetError: cannot read DSN 'postgresql://u@[::1:5432/db': Invalid IPv6 URL (an IPv6 host is written [::1])
    """
    dsn = dsn.strip()
    if "://" not in dsn:
        if "=" in dsn and default_kind in ("postgresql", "pgbouncer"):
            return _parse_keywords(dsn, default_kind)
        raise TargetError(f"cannot read DSN {_redact(dsn)!r}: expected KIND://[user[:password]@]host[:port][/db]")
    try:
        parts = urlsplit(dsn)
    except ValueError as exc:  # "Invalid IPv6 URL": an unclosed [
        raise TargetError(f"cannot read DSN {_redact(dsn)!r}: {exc} (an IPv6 host is written [::1])") from None
    kind = _SCHEME_KIND.get(parts.scheme.lower())
    if kind is None:
        raise TargetError(
            f"unknown DSN scheme {parts.scheme!r}: use one of mysql://, postgresql://, proxysql://, pgbouncer://"
        )
    try:
        port = parts.port or 0
    except ValueError:
        raise TargetError(f"bad port in DSN {_redact(dsn)!r}") from None
    query = dict(parse_qsl(parts.query))
    socket = query.pop("socket", "") or query.pop("unix_socket", "")
    ssl = query.pop("ssl", "") or query.pop("sslmode", "")
    if kind == "sqlite":
        return Target(kind="sqlite", database=unquote(parts.netloc + parts.path))
    return Target(
        kind=kind,
        host=unquote(parts.hostname or "") or "127.0.0.1",
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password) if parts.password is not None else None,
        database=unquote(parts.path.lstrip("/")),
        socket=socket,
        ssl=ssl,
        options=query,
    )


def _parse_keywords(dsn: str, kind: str) -> Target:
    kv: dict[str, str] = {}
    for item in dsn.split():
        if "=" not in item:
            raise TargetError(f"cannot read connection string item {item!r}: expected key=value")
        k, v = item.split("=", 1)
        kv[k] = v.strip("'")
    port = kv.pop("port", "0")
    if not port.isdigit():
        raise TargetError(f"bad port {port!r} in connection string")
    return Target(
        kind=kind,
        host=kv.pop("host", "127.0.0.1"),
        port=int(port),
        user=kv.pop("user", ""),
        password=kv.pop("password", None),
        database=kv.pop("dbname", ""),
        ssl=kv.pop("sslmode", ""),
        options=kv,
    )


def _redact(dsn: str) -> str:
    """Hide the password part of a URL-style DSN.

    >>> _redact("mysql://u:secret@h/db")
    'mysql://u:***@h/db'
    """
    if "://" not in dsn:
        return " ".join("password=***" if w.startswith("password=") else w for w in dsn.split())
    scheme, rest = dsn.split("://", 1)
    if "@" in rest:
        cred, host = rest.rsplit("@", 1)
        if ":" in cred:
            cred = cred.split(":", 1)[0] + ":***"
        rest = f"{cred}@{host}"
    return f"{scheme}://{rest}"


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
            password = env.get("PGPASSWORD") or pgpass_lookup(host, port, database, user)
        return replace(t, user=user, host=host, port=port, database=database, password=password)
    return t


def _os_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER", "postgres")
