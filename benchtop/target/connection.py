"""How a target becomes each client library's connection arguments."""

from __future__ import annotations

from typing import Any

from benchtop.target.dsn import Target


def ssl_level(ssl: str) -> int:
    s = (ssl or "").lower()
    if s in ("", "off", "disable", "disabled", "prefer", "preferred", "allow", "0", "false"):
        return 0
    if s in ("verify-ca", "verify-full", "verify_identity", "verify", "2"):
        return 2
    return 1


def native_fields(t: Target, engine: str) -> dict[str, Any]:
    """The C drivers' connection fields (benchtop.engine.ConnSettings)."""
    if engine == "postgresql":
        # libpq keywords as given, sslmode among them, so every mode
        # (disable, allow, prefer, require, verify-ca, verify-full) means what libpq says
        pg_opts = dict(t.options)
        if t.ssl:
            pg_opts["sslmode"] = t.ssl
        opts = " ".join(f"{k}={v}" for k, v in pg_opts.items())
    else:
        opts = ";".join(f"{k}={v}" for k, v in t.options.items())
    return dict(
        host="" if t.socket else t.host,
        port=t.effective_port if not t.socket else 0,
        user=t.user,
        password=t.password,
        database=t.database,
        socket=t.socket,
        options=opts,
        ssl=ssl_level(t.ssl) if engine == "mysql" else 0,
    )
