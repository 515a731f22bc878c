"""cffi API-mode build of the native engine, and of the libpq binding the
PostgreSQL monitor source uses (used by setup.py only; never imported at run
time).

The MySQL and PostgreSQL drivers are compiled in when their client libraries
are found (mariadb_config / mysql_config, pg_config or pkg-config); the engine
reports which drivers it has through bt_driver_available().  liburing (found
by pkg-config) gives the fileio driver its async mode.
"""

from __future__ import annotations

import os
import re
import runpy
import shlex
import shutil
import subprocess
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
# setuptools refuses absolute source paths: name them from the project root,
# which is the working directory of both setup.py and a direct run.
os.chdir(ROOT)
NATIVE = Path("native")

# the lists of C files, shared with tests/native (see _sources.py)
SOURCES = runpy.run_path(str(ROOT / "benchtop" / "engine" / "_sources.py"))


def _cdef_text() -> str:
    """benchtop_api.h without preprocessor lines: cdef() takes plain C."""
    text = (NATIVE / "benchtop_api.h").read_text()
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(lines)


def _run(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _mysql_flags() -> tuple[list[str], list[str]] | None:
    for tool in ("mariadb_config", "mysql_config"):
        cflags = _run([tool, "--cflags"])
        libs = _run([tool, "--libs"])
        if cflags is not None and libs is not None:
            return shlex.split(cflags), shlex.split(libs)
    for pkg in ("libmariadb", "mariadb", "mysqlclient"):
        cflags = _run(["pkg-config", "--cflags", pkg])
        libs = _run(["pkg-config", "--libs", pkg])
        if cflags is not None and libs is not None:
            return shlex.split(cflags), shlex.split(libs)
    return None


def _pg_flags() -> tuple[list[str], list[str]] | None:
    if os.environ.get("BENCHTOP_WITHOUT_PGSQL") is not None:
        return None
    inc = _run(["pg_config", "--includedir"])
    libdir = _run(["pg_config", "--libdir"])
    if inc is not None and libdir is not None:
        return [f"-I{inc}"], [f"-L{libdir}", "-lpq"]
    cflags = _run(["pkg-config", "--cflags", "libpq"])
    libs = _run(["pkg-config", "--libs", "libpq"])
    if cflags is not None and libs is not None:
        return shlex.split(cflags), shlex.split(libs)
    return None


def _split_libs(flags: list[str]) -> tuple[list[str], list[str], list[str]]:
    libs, dirs, other = [], [], []
    for f in flags:
        if f.startswith("-l"):
            libs.append(f[2:])
        elif f.startswith("-L"):
            dirs.append(f[2:])
        else:
            other.append(f)
    return libs, dirs, other


def _present(names: list[str]) -> bool:
    return all((NATIVE / n).exists() for n in names)


def build_options() -> dict[str, list[str]]:
    sources = [str(NATIVE / s) for s in SOURCES["CORE"]]
    # hidden: calls between the engine's files are direct, not through the PLT (the module's entry point is
    # exported by cffi itself)
    cflags = ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-O2",
              "-fvisibility=hidden"]
    libraries = ["sqlite3", "pthread", "m"]
    library_dirs: list[str] = []
    link_args: list[str] = []
    macros: list[str] = []
    extra = os.environ.get("BENCHTOP_CFLAGS")
    if extra:
        cflags += shlex.split(extra)
        link_args += [f for f in shlex.split(extra) if f.startswith("-fsanitize")]

    want_mysql = os.environ.get("BENCHTOP_WITHOUT_MYSQL") is None
    mysql = _mysql_flags() if want_mysql and _present(SOURCES["MYSQL"]) else None
    if mysql:
        sources += [str(NATIVE / s) for s in SOURCES["MYSQL"]]
        cflags += [f for f in mysql[0] if not re.match(r"-O\d|-g$", f)]
        libs, dirs, other = _split_libs(mysql[1])
        libraries += libs
        library_dirs += dirs
        link_args += other
        macros.append("BT_HAVE_MYSQL")

    pg = _pg_flags() if _present(SOURCES["PGSQL"]) else None
    if pg:
        sources += [str(NATIVE / s) for s in SOURCES["PGSQL"]]
        cflags += pg[0]
        libs, dirs, other = _split_libs(pg[1])
        libraries += libs
        library_dirs += dirs
        link_args += other
        macros.append("BT_HAVE_PGSQL")

    # io_uring for fileio's --file-io-mode async; without liburing that mode
    # is refused in one line and everything else builds as before
    want_uring = os.environ.get("BENCHTOP_WITHOUT_URING") is None
    uring = _run(["pkg-config", "--libs", "liburing"]) if want_uring else None
    if uring is not None:
        libs, dirs, other = _split_libs(shlex.split(uring))
        libraries += libs
        library_dirs += dirs
        link_args += other
        cflags += shlex.split(_run(["pkg-config", "--cflags", "liburing"]) or "")
        macros.append("BT_HAVE_URING")

    cflags += [f"-D{m}" for m in macros]
    return {
        "sources": sources,
        "extra_compile_args": cflags,
        "libraries": libraries,
        "library_dirs": library_dirs,
        "extra_link_args": link_args,
        "include_dirs": [str(ROOT / "native")],
    }


# libpq's functions for a plain SQL session (benchtop/target/pq.py): the
# monitor's PostgreSQL source reads the server through them, so a run needs
# no second client library of its own.  Without libpq the module is built
# empty and that source reports it.
LIBPQ_CDEF = """
typedef unsigned int Oid;
typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef enum { CONNECTION_OK, CONNECTION_BAD, ... } ConnStatusType;
typedef enum { PGRES_EMPTY_QUERY, PGRES_COMMAND_OK, PGRES_TUPLES_OK, ... } ExecStatusType;
typedef enum { PQTRANS_IDLE, PQTRANS_ACTIVE, PQTRANS_INTRANS, PQTRANS_INERROR, PQTRANS_UNKNOWN } PGTransactionStatusType;
#define PG_DIAG_SQLSTATE ...
#define PG_DIAG_MESSAGE_PRIMARY ...
PGconn *PQconnectdb(const char *conninfo);
ConnStatusType PQstatus(const PGconn *conn);
char *PQerrorMessage(const PGconn *conn);
int PQserverVersion(const PGconn *conn);
int PQbackendPID(const PGconn *conn);
char *PQhost(const PGconn *conn);
char *PQport(const PGconn *conn);
int PQsocket(const PGconn *conn);
PGTransactionStatusType PQtransactionStatus(const PGconn *conn);
void PQfinish(PGconn *conn);
PGresult *PQexec(PGconn *conn, const char *query);
PGresult *PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                       const char *const *paramValues, const int *paramLengths, const int *paramFormats,
                       int resultFormat);
ExecStatusType PQresultStatus(const PGresult *res);
char *PQresultErrorField(const PGresult *res, int fieldcode);
int PQntuples(const PGresult *res);
int PQnfields(const PGresult *res);
char *PQfname(const PGresult *res, int field_num);
Oid PQftype(const PGresult *res, int field_num);
char *PQgetvalue(const PGresult *res, int tup_num, int field_num);
int PQgetisnull(const PGresult *res, int tup_num, int field_num);
void PQclear(PGresult *res);
void bt_pq_quiet(PGconn *conn);
size_t bt_pq_pack(const PGresult *res, char *out, char *nulls);
"""
# libpq prints a server's notices on stderr, under the TUI; the monitor
# reads nothing from them
LIBPQ_SOURCE = """
#include <string.h>

#include <libpq-fe.h>

static void bt_pq_no_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static void bt_pq_quiet(PGconn *conn)
{
    PQsetNoticeProcessor(conn, bt_pq_no_notice, NULL);
}

/* A result's values in one buffer, row after row, each value's text and a
 * NUL after it (PostgreSQL's text never holds one), and whether each is
 * NULL in `nulls` (its text then empty): pq.py's rows in one call, where
 * three a value (cffi's cost, not libpq's) took 1.5 us of each value of a
 * 5,000-row pg_stat_statements.  With `out` NULL only the size needed. */
static size_t bt_pq_pack(const PGresult *res, char *out, char *nulls)
{
    int rows = PQntuples(res), cols = PQnfields(res);
    size_t n = 0;
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            int null = PQgetisnull(res, r, c);
            size_t len = null ? 0 : (size_t)PQgetlength(res, r, c);
            if (out) {
                memcpy(out + n, PQgetvalue(res, r, c), len);
                out[n + len] = '\\0';
                nulls[(size_t)r * (size_t)cols + (size_t)c] = (char)null;
            }
            n += len + 1;
        }
    }
    return n;
}
"""


def libpq_builder() -> FFI:
    builder = FFI()
    pg = _pg_flags()
    if pg is None:
        builder.cdef("")
        builder.set_source("benchtop.target._libpq", "")
        return builder
    libs, dirs, other = _split_libs(pg[1])
    builder.cdef(LIBPQ_CDEF)
    builder.set_source("benchtop.target._libpq", LIBPQ_SOURCE, libraries=libs, library_dirs=dirs,
                       extra_compile_args=["-std=c11", "-Wall", "-Wextra", *pg[0]], extra_link_args=other)
    return builder


pq_ffibuilder = libpq_builder()

ffibuilder = FFI()
# which sources this engine was built from (benchtop/engine/__init__.py
# refuses a build older than the source tree it sits in)
ffibuilder.cdef(_cdef_text() + "\nconst char *bt_build_digest(void);\n")
_opts = build_options()
ffibuilder.set_source(
    "benchtop.engine._native",
    '#include "benchtop_api.h"\n'
    f'static const char *bt_build_digest(void) {{ return "{SOURCES["digest"](NATIVE)}"; }}\n',
    sources=_opts["sources"],
    include_dirs=_opts["include_dirs"],
    extra_compile_args=_opts["extra_compile_args"],
    libraries=_opts["libraries"],
    library_dirs=_opts["library_dirs"],
    extra_link_args=_opts["extra_link_args"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
