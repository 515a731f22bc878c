"""SQL text kept in files, one per query and version range.

A file named `<query>_post_<6-digit version>.sql` under `<backend>/` applies
to servers whose version number is at least that version; `get()` picks the
newest file that does not exceed the server's version (pg_activity's layout).
Versions are PostgreSQL's `server_version_num` style: 150004 for 15.4,
100611 for MariaDB 10.6.11, 80030 for MySQL 8.0.30.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

_HERE = Path(__file__).parent
_NAME = re.compile(r"^(?P<query>[a-z0-9_]+)_post_(?P<version>\d{6})\.sql$")


# Every monitor statement carries this comment, so the lists (processlist,
# pg_stat_activity, pg_stat_statements) can leave the monitor's own work out.
TAG = "/* benchtop-monitor */"


class SQLNotFound(LookupError):
    """No file of that query applies to that server version."""


@functools.cache
def _index(backend: str) -> dict[str, list[tuple[int, Path]]]:
    out: dict[str, list[tuple[int, Path]]] = {}
    for path in sorted((_HERE / backend).glob("*.sql")):
        m = _NAME.match(path.name)
        if m:
            out.setdefault(m["query"], []).append((int(m["version"]), path))
    for versions in out.values():
        versions.sort()
    return out


@functools.cache
def get(backend: str, query: str, version: int) -> str:
    """The SQL of `query` for a `backend` server at `version`.

    >>> "pg_stat_checkpointer" in get("postgresql", "checkpoints", 170002)
    True
    >>> "pg_stat_bgwriter" in get("postgresql", "checkpoints", 150020)
    True
    """
    chosen: Path | None = None
    for since, path in _index(backend).get(query, []):
        if since <= version:
            chosen = path
    if chosen is None:
        raise SQLNotFound(f"no {backend} query {query!r} for server version {version}")
    # The comments are for readers of the files, not for the server's logs.
    lines = [line for line in chosen.read_text().splitlines() if not line.lstrip().startswith("--")]
    return tagged("\n".join(lines).strip().rstrip(";"))


def tagged(statement: str) -> str:
    """The statement with TAG after its first word: servers keep a comment
    inside a statement in their lists (pg_stat_statements drops one before
    or after it), and the statement still starts with its verb.

    >>> tagged("SHOW GLOBAL STATUS")
    'SHOW /* benchtop-monitor */ GLOBAL STATUS'
    """
    verb, sep, rest = statement.partition(" ")
    if not sep:
        verb, sep, rest = statement.partition("\n")
    return f"{verb} {TAG}{sep}{rest}"


def available(backend: str, query: str, version: int) -> bool:
    try:
        get(backend, query, version)
    except SQLNotFound:
        return False
    return True


@functools.cache
def prefixes(backend: str) -> tuple[str, ...]:
    """How each of the monitor's own statements begins, blanks folded, up to
    its first literal: a statistics view that keeps the first text it saw of
    a statement (pg_stat_statements) may hold it from before it was tagged.

    >>> any(p.startswith("SELECT name, setting, unit FROM pg_settings") for p in prefixes("postgresql"))
    True
    """
    out = []
    for versions in _index(backend).values():
        for _, path in versions:
            body = " ".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))
            folded = " ".join(body.split())
            cut = re.search(r"['$%\d]", folded)
            out.append(folded[: cut.start() if cut else len(folded)][:80].rstrip())
    return tuple(sorted(set(p for p in out if len(p) >= 20)))
