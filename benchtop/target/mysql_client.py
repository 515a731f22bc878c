"""PyMySQL connections (the MySQL monitor, the settings reader, ProxySQL's
admin, instrumentation) with TLS's "preferred" mode built once.

Without TLS options PyMySQL 2 tries TLS whenever the server offers it, and
builds for it, on every connection, a default context that loads the
system's CA store (20-60 ms of CPU) although that mode checks no
certificate.  A run opens several of these connections, and their CPU is
counted in the client CPU per transaction; here the mode's context is built
once per process, without the CA store it never reads.  Explicit TLS
options (a CA, a client certificate, a verifying mode) go through PyMySQL's
own path unchanged.
"""

from __future__ import annotations

import ssl
from functools import lru_cache
from typing import Any

import pymysql


@lru_cache(maxsize=1)
def _preferred_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # what PyMySQL's preferred mode sets
    return ctx


class Connection(pymysql.connections.Connection):
    def _create_ssl_ctx(self, sslp: Any) -> Any:
        if isinstance(sslp, dict) and not sslp:  # the preferred mode's empty options
            return _preferred_context()
        return super()._create_ssl_ctx(sslp)


def connect(**kwargs: Any) -> Any:
    """pymysql.connect(**kwargs)."""
    return Connection(**kwargs)
