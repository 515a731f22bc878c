"""How a `Target` becomes connection arguments, for every client benchtop
uses: PyMySQL (MySQL monitor, ProxySQL admin, instrumentation), libpq
(the PostgreSQL monitor through benchtop/target/pq.py), psycopg (the
PgBouncer monitor, instrumentation) and the C engine's drivers (the load).

TLS is read here once, so the load and the connections that watch it accept
the same parameters and mean the same by them: the mode comes from
`Target.ssl` (a DSN's `?ssl=` or `?sslmode=`), and the CA, client
certificate and key from the DSN's options under either spelling,
MySQL's (`ssl-ca`, `ssl_ca`, `ssl-cert`, `ssl-key`) or libpq's
(`sslrootcert`, `sslcert`, `sslkey`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from benchtop.target import pq
from benchtop.target.dsn import DEFAULT_PORTS, Target, TargetError

if TYPE_CHECKING:
    import ssl

# Every spelling a user may give for a TLS mode -> libpq's name for it.
# MySQL's names ("on", "required", "verify_identity", ...) map to the libpq
# mode that does the same thing.
_MODES = {
    "off": "disable",
    "disable": "disable",
    "disabled": "disable",
    "0": "disable",
    "false": "disable",
    "allow": "allow",
    "prefer": "prefer",
    "preferred": "prefer",
    "require": "require",
    "required": "require",
    "on": "require",
    "1": "require",
    "true": "require",
    "verify-ca": "verify-ca",
    "verify_ca": "verify-ca",
    "verify-full": "verify-full",
    "verify_full": "verify-full",
    "verify-identity": "verify-full",
    "verify_identity": "verify-full",
    "verify": "verify-full",
    "2": "verify-full",
}

# DSN option names (lower case, '_' read as '-') that carry TLS settings.
_CA_KEYS = ("ssl-ca", "sslrootcert")
_CERT_KEYS = ("ssl-cert", "sslcert")
_KEY_KEYS = ("ssl-key", "sslkey")
_MODE_KEYS = ("ssl-mode", "sslmode")
_TLS_KEYS = frozenset(_CA_KEYS + _CERT_KEYS + _KEY_KEYS + _MODE_KEYS)

# libpq keywords besides TLS that the monitor connections pass on from a DSN;
# the rest of a DSN's options are meant for the load's driver only.
_LIBPQ_PASSTHROUGH = frozenset(
    {"sslcrl", "sslpassword", "sslcompression", "target_session_attrs", "gssencmode", "channel_binding",
     "service", "passfile"}
)  # fmt: skip


def _key(name: str) -> str:
    return name.lower().replace("_", "-")


@dataclass(frozen=True, slots=True)
class TLS:
    """A target's TLS request: `mode` is a libpq sslmode ("" leaves each
    client's default), the paths are "" when not given."""

    mode: str = ""
    ca: str = ""
    cert: str = ""
    key: str = ""

    @property
    def level(self) -> int:
        """The C engine's `ssl` field: 0 off, 1 required, 2 verified.
        Only the C MySQL driver reads it (libpq gets `mode` itself), and it
        has one verifying level, which checks the host name too.

        >>> [TLS(tls_mode(m)).level for m in ("", "off", "prefer", "on", "require", "verify-ca", "verify_identity")]
        [0, 0, 0, 1, 1, 2, 2]
        """
        if self.mode in ("", "disable", "allow", "prefer"):
            return 0
        return 2 if self.mode.startswith("verify") else 1


def tls_of(t: Target) -> TLS:
    """The TLS a target asks for.

    >>> tls_of(Target("mysql", ssl="on", options={"ssl_ca": "/ca.pem"}))
    TLS(mode='require', ca='/ca.pem', cert='', key='')
    >>> tls_of(Target("postgresql", options={"sslmode": "verify-full", "sslrootcert": "/ca.pem"})).mode
    'verify-full'
    """
    opts = {_key(k): v for k, v in t.options.items()}
    mode = tls_mode(t.ssl or _first(opts, _MODE_KEYS))
    return TLS(mode, _first(opts, _CA_KEYS), _first(opts, _CERT_KEYS), _first(opts, _KEY_KEYS))


def tls_mode(word: str) -> str:
    """The libpq sslmode for any spelling of a TLS mode ("" when none is given).

    >>> tls_mode("ON"), tls_mode("verify_identity"), tls_mode("allow"), tls_mode("")
    ('require', 'verify-full', 'allow', '')
    """
    word = word.strip().lower()
    if word and word not in _MODES:
        # a typo must not silently pick a mode, stricter or weaker than meant
        raise TargetError(f"unknown TLS mode {word!r}: use one of disable, prefer, require, verify-ca, verify-full")
    return _MODES.get(word, "") if word else ""


def _first(opts: Mapping[str, str], keys: Iterable[str]) -> str:
    return next((opts[k] for k in keys if opts.get(k)), "")


def _extra_options(t: Target) -> dict[str, str]:
    """The DSN options that are not TLS settings, as given."""
    return {k: v for k, v in t.options.items() if _key(k) not in _TLS_KEYS}


# ------------------------------------------------------------------ PyMySQL


def mysql_ssl_context(tls: TLS) -> ssl.SSLContext:
    """PyMySQL's TLS for a mode that wants TLS: a context makes PyMySQL insist
    on TLS (it refuses a server without it) rather than fall back to clear."""
    import ssl  # here: 4-6 ms of every run's start-up otherwise, for MySQL TLS alone

    ctx = ssl.create_default_context(cafile=tls.ca or None)
    # Server certificates MySQL generates itself fail the strict X.509 checks;
    # the C client (OpenSSL defaults) accepts them, so this side does too.
    ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
    if tls.mode == "verify-ca":
        ctx.check_hostname = False
    elif tls.mode != "verify-full":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert:
        ctx.load_cert_chain(tls.cert, tls.key or None)
    return ctx


def pymysql_kwargs(
    t: Target, *, timeout_s: float, program_name: str | None = None, with_database: bool = True
) -> dict[str, Any]:
    """`pymysql.connect(**...)` arguments: autocommit, utf8mb4, every
    network wait bounded by `timeout_s`.  Building the TLS context reads the
    CA and key files, so this raises OSError when one cannot be read."""
    kwargs: dict[str, Any] = {
        "host": t.host or "127.0.0.1",
        "port": t.effective_port,
        # ProxySQL's admin interface has no anonymous user; "admin" is its default.
        "user": t.user or ("admin" if t.kind == "proxysql" else None),
        "password": t.password or "",
        "unix_socket": t.socket or None,
        "connect_timeout": timeout_s,
        "read_timeout": timeout_s,
        "write_timeout": timeout_s,
        "autocommit": True,
        "charset": "utf8mb4",
    }
    if with_database:
        kwargs["database"] = t.database or None
    if program_name:
        kwargs["program_name"] = program_name
    tls = tls_of(t)
    if tls.mode == "disable":
        kwargs["ssl_disabled"] = True
    elif tls.level:
        kwargs["ssl"] = mysql_ssl_context(tls)
    # "", allow and prefer: PyMySQL's default already tries TLS and falls back.
    return kwargs


# ------------------------------------------------------------------ libpq


def _libpq_tls(tls: TLS) -> dict[str, str]:
    pairs = {"sslmode": tls.mode, "sslrootcert": tls.ca, "sslcert": tls.cert, "sslkey": tls.key}
    return {k: v for k, v in pairs.items() if v}


def libpq_params(
    t: Target, *, timeout_s: float, application_name: str | None = None, dbname: str | None = None
) -> dict[str, Any]:
    """libpq connection keywords (for `psycopg.connect(**...)`, which takes
    them as keyword arguments, or `libpq_conninfo`)."""
    params: dict[str, Any] = {
        **_libpq_where(t),
        "dbname": dbname or t.database or "postgres",
        "connect_timeout": max(1, int(round(timeout_s))),
    }
    if application_name:
        params["application_name"] = application_name
    if t.user:
        params["user"] = t.user
    if t.password is not None:
        params["password"] = t.password
    params.update(_libpq_tls(tls_of(t)))
    params.update({k: v for k, v in t.options.items() if k in _LIBPQ_PASSTHROUGH})
    return params


def _libpq_where(t: Target) -> dict[str, Any]:
    """host, port and hostaddr as libpq reads them: a socket directory as the
    host (the port names the socket file in it), several hosts and ports as
    comma lists it tries in order.

    >>> _libpq_where(Target("postgresql", host="h1", port=5433, more_hosts=(("h2", 0),)))
    {'host': 'h1,h2', 'port': '5433,5432'}
    >>> _libpq_where(Target("postgresql", socket="/run/pg", port=25432, hostaddr=""))
    {'host': '/run/pg', 'port': 25432}
    """
    where: dict[str, Any] = {"host": t.socket or t.host or "127.0.0.1", "port": t.effective_port}
    if t.more_hosts:
        default = DEFAULT_PORTS.get(t.kind, 5432)
        where["host"] = ",".join([where["host"], *(h for h, _ in t.more_hosts)])
        where["port"] = ",".join([str(t.effective_port), *(str(p or default) for _, p in t.more_hosts)])
    if t.hostaddr:
        where["hostaddr"] = t.hostaddr
    return where


def reached(t: Target, timeout_s: float = 5.0) -> tuple[str, int] | None:
    """The host and port libpq reaches of a DSN naming several servers (its
    first that answers, in order), or None when none answers now (the run's
    own check then says why)."""
    try:
        conn = pq.Connection(libpq_conninfo(libpq_params(t, timeout_s=timeout_s, application_name="benchtop")))
    except pq.PqError:
        return None
    try:
        return (conn.host, conn.port) if conn.host else None
    finally:
        conn.close()


def libpq_conninfo(params: Mapping[str, Any]) -> str:
    """A conninfo string, values quoted where libpq needs it.

    >>> libpq_conninfo({"sslmode": "verify-ca", "sslrootcert": "/my certs/ca.pem", "x": ""})
    "sslmode=verify-ca sslrootcert='/my certs/ca.pem' x=''"
    """
    return " ".join(f"{k}={_conninfo_value(str(v))}" for k, v in params.items())


def _conninfo_value(value: str) -> str:
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# ------------------------------------------------------------------ C drivers


def native_conn(t: Target, driver: str) -> dict[str, Any]:
    """The fields the C drivers read from bt_conn_config (native/driver_mysql.c,
    driver_pg.c), named as the engine's ConnSettings names them: host, port,
    user, password, database, socket, options (libpq conninfo for
    postgresql, `key=value;...` for mysql) and ssl (the level only the MySQL
    driver reads).  `driver` is the engine's name for the driver.

    >>> c = native_conn(Target("postgresql", port=5433, ssl="verify-full", options={"ssl-ca": "/ca.pem"}), "postgresql")
    >>> c["options"], c["ssl"]
    ('sslmode=verify-full sslrootcert=/ca.pem', 0)
    >>> c = native_conn(Target("mysql", ssl="verify-ca", options={"sslrootcert": "/ca.pem", "compress": "1"}), "mysql")
    >>> c["options"], c["ssl"]
    ('compress=1;ssl-ca=/ca.pem', 2)
    """
    tls = tls_of(t)
    extra = _extra_options(t)
    where: dict[str, Any] = {"host": t.host, "port": t.effective_port, "socket": ""}
    if driver == "postgresql":
        # libpq keywords as given, sslmode among them, so every mode
        # (disable, allow, prefer, require, verify-ca, verify-full) means what libpq says;
        # several hosts (and their ports), and hostaddr, reach libpq as conninfo keywords too
        libpq = _libpq_where(t)
        more = {k: v for k, v in libpq.items() if k == "hostaddr" or (t.more_hosts and k == "port")}
        options = libpq_conninfo({**extra, **_libpq_tls(tls), **more})
        level = 0
        # a socket is a directory to libpq, and the port names the file in it
        where = {"host": libpq["host"] if t.more_hosts else t.host, "port": 0 if t.more_hosts else t.effective_port,
                 "socket": t.socket}
        if t.socket:
            where["host"] = ""
    elif driver == "mysql":
        paths = {"ssl-ca": tls.ca, "ssl-cert": tls.cert, "ssl-key": tls.key}
        extra.update({k: v for k, v in paths.items() if v})
        options = ";".join(f"{k}={v}" for k, v in extra.items())
        level = tls.level
    else:
        options = ";".join(f"{k}={v}" for k, v in t.options.items())
        level = 0
    if t.socket and driver != "postgresql":
        # the MySQL client takes a host over a socket: with a socket, it gets neither host nor port
        where = {"host": "", "port": 0, "socket": t.socket}
    return {**where, "user": t.user, "password": t.password, "database": t.database, "options": options, "ssl": level}
