"""Build sources from command-line specs such as `--mysql DSN`.

Names are the kind, then "-2", "-3"... for further sources of the same kind
("mysql", "mysql-2"), in the order given.  Source modules are imported only
when used, so one kind's missing driver never breaks the others.
"""

from __future__ import annotations

import importlib
from typing import Iterable

from benchtop.sources.base import Source
from benchtop.sources.os import OSSource
from benchtop.target import Target, TargetError, fill_defaults, parse_dsn

# flag kind -> (module, class)
_CLASSES = {
    "mysql": ("benchtop.sources.mysql", "MySQLSource"),
    "postgresql": ("benchtop.sources.postgres", "PostgresSource"),
    "pgbouncer": ("benchtop.sources.pgbouncer", "PgBouncerSource"),
    "proxysql": ("benchtop.sources.proxysql", "ProxySQLSource"),
    "os": ("benchtop.sources.os", "OSSource"),
}

# what a DSN with this scheme may be given to (a PgBouncer admin DSN is a postgresql:// URL)
_COMPATIBLE = {
    "mysql": {"mysql"},
    "proxysql": {"proxysql", "mysql"},
    "postgresql": {"postgresql"},
    "pgbouncer": {"pgbouncer", "postgresql"},
}

_SCHEME = {"mysql": "mysql", "postgresql": "postgresql", "pgbouncer": "pgbouncer", "proxysql": "proxysql"}


def parse_spec(kind: str, dsn: str) -> Target:
    """The target of `--KIND DSN`; a bare `host[:port]` gets the kind's scheme.

    >>> parse_spec("mysql", "u@127.0.0.1:3307").describe()
    'mysql://u@127.0.0.1:3307'
    >>> parse_spec("pgbouncer", "postgresql://u@h:6432/pgbouncer").kind
    'pgbouncer'
    >>> parse_spec("mysql", "postgresql://u@h/db")
    Traceback (most recent call last):
    ...
    benchtop.target.dsn.TargetError: --mysql needs a mysql:// DSN, got a postgresql one
    """
    if kind not in _COMPATIBLE:
        raise TargetError(f"unknown source kind {kind!r}: use one of {', '.join(sorted(_COMPATIBLE))}")
    text = dsn.strip()
    if not text:
        raise TargetError(f"--{kind} needs a DSN such as {_SCHEME[kind]}://user@host:port")
    if "://" not in text and "=" not in text:
        text = f"{_SCHEME[kind]}://{text}"
    target = parse_dsn(text, default_kind=kind)
    if target.kind != kind:
        if target.kind not in _COMPATIBLE[kind]:
            raise TargetError(f"--{kind} needs a {_SCHEME[kind]}:// DSN, got a {target.kind} one")
        target = Target(
            kind=kind,
            host=target.host,
            port=target.port,
            user=target.user,
            password=target.password,
            database=target.database,
            socket=target.socket,
            ssl=target.ssl,
            options=target.options,
        )
    return fill_defaults(target)


def source_class(kind: str) -> type[Source]:
    module_name, class_name = _CLASSES[kind]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"the {kind} source is not available: {exc}") from None
    return getattr(module, class_name)


def name_sources(kinds: Iterable[str]) -> list[str]:
    """
    >>> name_sources(["mysql", "pgbouncer", "mysql", "mysql"])
    ['mysql', 'pgbouncer', 'mysql-2', 'mysql-3']
    """
    seen: dict[str, int] = {}
    out = []
    for kind in kinds:
        seen[kind] = seen.get(kind, 0) + 1
        out.append(kind if seen[kind] == 1 else f"{kind}-{seen[kind]}")
    return out


def build_sources(specs: Iterable[tuple[str, str]], timeout_s: float = 5.0, with_os: bool = False,
                  per_process: bool = True) -> list[Source]:
    """Sources for (kind, dsn) pairs, plus this host's OS when asked."""
    specs = list(specs)
    targets = [parse_spec(kind, dsn) for kind, dsn in specs]
    kinds = [t.kind for t in targets]
    sources: list[Source] = []
    for name, target in zip(name_sources(kinds), targets, strict=True):
        sources.append(source_class(target.kind)(name, target, timeout_s, per_process=per_process))
    if with_os:
        sources.append(OSSource("os", None, timeout_s, per_process=per_process))
    return sources


def is_local(target: Target) -> bool:
    """Whether the target runs on this host (so the OS source describes it)."""
    return bool(target.socket) or target.host in ("127.0.0.1", "localhost", "::1", "")
