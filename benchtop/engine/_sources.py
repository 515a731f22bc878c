"""The engine's C sources in native/, by part: the build (_build.py) compiles
them and tests/native builds its C test programs from the same lists, so a
file added here is in both.

No imports from benchtop: _build.py reads it by path, since the package
itself (whose __init__ loads the built engine) cannot be imported before the
engine is built.
"""

import hashlib
from pathlib import Path

# every driver links these (error helpers, text interpolation, buffers, the
# table of prepared statements, the waits that let an event loop run many
# connections)
DRIVER_SUPPORT = ["driver_common.c", "textbuf.c", "stmt_slots.c", "evloop.c"]

# the engine, and the drivers that need no client library
CORE = ["engine.c", "group.c", "worker.c", "scheduler.c", "histogram.c", "workload.c", "rand.c", "load.c",
        "driver_null.c", "driver_sqlite.c", "driver_fileio.c", *DRIVER_SUPPORT]

# compiled in with -DBT_HAVE_MYSQL when libmariadb or libmysqlclient is found
MYSQL = ["driver_mysql.c", "driver_mysql_wire.c"]

# compiled in with -DBT_HAVE_PGSQL when libpq is found
PGSQL = ["driver_pg.c", "driver_pg_pipeline.c", "driver_pg_wire.c"]


def digest(native: Path) -> str:
    """A fingerprint of every C file in `native`: the build compiles it into
    the engine, and in a source tree the engine is refused when native/ has
    changed since (a stale build fails on a missing name, or worse, runs)."""
    h = hashlib.sha256()
    for path in sorted(native.glob("*.[ch]")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]
