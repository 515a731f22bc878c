"""The MySQL and PostgreSQL drivers, compiled on their own and run against real servers.

native/tests/test_drivers.c exercises connect, prepared and text execution,
result capture, error classification (syntax, duplicate key, lock timeout,
deadlock, killed connection, read timeout), MySQL's fallback to the text
protocol at max_prepared_stmt_count, PostgreSQL pipeline mode and the
PgBouncer named-statement fallback, without the engine.  It is built warnings-as-errors, and once more under
AddressSanitizer + UBSan.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from benchtop.engine._sources import DRIVER_SUPPORT, MYSQL, PGSQL
from tests.fixtures.servers import Server, in_ci, mysql_admin_exec
from tests.native.cbuild import build_program, session_objects

pytestmark = pytest.mark.realdb

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
SOURCES = ["tests/test_drivers.c", *MYSQL, *PGSQL, *DRIVER_SUPPORT]
# the engine build's feature macros (benchtop/engine/_build.py): the drivers are compiled as it compiles them
BASE_FLAGS = ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-Werror", "-g"]
SANITIZE = ["-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=undefined"]
APT = "apt-get install -y libmariadb-dev libpq-dev"
GENERAL_CHECKS = ["connect_errors", "statements_prepared", "statements_text", "lock_timeout",
                  "deadlock", "lost_connection_prepared", "lost_connection_text"]
FALLBACK_LINE = "benchtop: PgBouncer in transaction pooling: using unnamed prepared statements"


def _config_output(*cmd: str) -> list[str] | None:
    if not shutil.which(cmd[0]):
        return None
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return shlex.split(done.stdout) if done.returncode == 0 else None


def client_flags() -> tuple[list[str], list[str]]:
    """(cflags, libs) for libmariadb/libmysqlclient and libpq, as the engine build finds them."""
    my = (_config_output("mariadb_config", "--cflags", "--libs")
          or _config_output("pkg-config", "--cflags", "--libs", "libmariadb")
          or _config_output("mysql_config", "--cflags", "--libs"))
    pg_inc = _config_output("pg_config", "--includedir")
    pg_lib = _config_output("pg_config", "--libdir")
    if my is None or pg_inc is None or pg_lib is None:
        message = f"MySQL/PostgreSQL client headers not found: {APT}"
        if in_ci(os.environ):
            pytest.fail(message)
        pytest.skip(message)
    cflags = [f for f in my if f.startswith(("-I", "-D"))] + [f"-I{pg_inc[0]}"]
    libs = [f for f in my if not f.startswith(("-I", "-D"))] + [f"-L{pg_lib[0]}", "-lpq", "-lpthread"]
    return cflags, libs


@pytest.fixture(scope="module", params=["plain", "sanitized"])
def driver_test_binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("no C compiler (cc) on PATH")
    cflags, libs = client_flags()
    out = tmp_path_factory.mktemp("drivers") / f"test_drivers_{request.param}"
    flags = BASE_FLAGS + (SANITIZE if request.param == "sanitized" else ["-O2"])
    stderr = build_program(session_objects(tmp_path_factory), cc, [*flags, "-DBT_HAVE_MYSQL", "-DBT_HAVE_PGSQL", *cflags, "-I."],
                           SOURCES, libs, out)
    assert stderr == "", f"compiler warnings:\n{stderr}"
    return out


def run_driver_test(binary: Path, kind: str, server: Server) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BT_TEST_")}
    env.update(ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    args = [str(binary), kind, server.host, str(server.port), server.user,
            server.password or "", server.database]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, check=False)


def assert_passed(done: subprocess.CompletedProcess[str], checks: list[str]) -> None:
    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    lines = done.stdout.splitlines()
    for check in checks:
        assert f"ok {check}" in lines, report
    assert not [line for line in lines if line.startswith("FAIL")], report
    assert lines[-1] == "PASSED", report
    assert "Sanitizer" not in done.stderr and "runtime error" not in done.stderr, report


def test_mysql_driver_against_mariadb(driver_test_binary: Path, mysql_server: Server) -> None:
    done = run_driver_test(driver_test_binary, "mysql", mysql_server)
    assert_passed(done, [*GENERAL_CHECKS, "read_timeout"])
    assert "# lost: [HY000] 2013" in done.stdout or "# lost: [70100] 1927" in done.stdout, done.stdout


def test_mysql_driver_runs_text_when_the_server_refuses_more_prepared_statements(
        driver_test_binary: Path, mysql_server: Server) -> None:
    (_, old), = mysql_admin_exec(mysql_server, "SHOW GLOBAL VARIABLES LIKE 'max_prepared_stmt_count'")
    mysql_admin_exec(mysql_server, "SET GLOBAL max_prepared_stmt_count = 0")
    try:
        done = run_driver_test(driver_test_binary, "mysql-maxps", mysql_server)
    finally:
        mysql_admin_exec(mysql_server, f"SET GLOBAL max_prepared_stmt_count = {int(old)}")
    assert_passed(done, ["max_prepared_fallback"])
    warnings = [line for line in done.stderr.splitlines() if "max_prepared_stmt_count" in line]
    assert len(warnings) == 1, done.stderr


def test_pg_driver_against_postgres(driver_test_binary: Path, pg_server: Server) -> None:
    done = run_driver_test(driver_test_binary, "pgsql", pg_server)
    assert_passed(done, [*GENERAL_CHECKS, "pipeline"])
    assert "# syntax error: [42601]" in done.stdout, done.stdout
    assert FALLBACK_LINE not in done.stderr, "named statements work on PostgreSQL itself"


def test_pg_driver_falls_back_to_unnamed_statements_through_pgbouncer(
        driver_test_binary: Path, pgbouncer_server: Server) -> None:
    done = run_driver_test(driver_test_binary, "pgbouncer", pgbouncer_server)
    assert_passed(done, ["pgbouncer_fallback"])
    assert done.stderr.splitlines().count(FALLBACK_LINE) == 1, done.stderr
