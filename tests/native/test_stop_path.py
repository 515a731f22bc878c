"""The engine's stop path in C, under AddressSanitizer + UBSan + LeakSanitizer
and under ThreadSanitizer, against the harness's MariaDB frozen with SIGSTOP:
blocked reads are unblocked by abort_io, the engine is freed exactly once,
and workers stuck in connect are detached and free it themselves
(native/tests/test_stop.c)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from benchtop.engine._sources import CORE, MYSQL, PGSQL
from tests.fixtures.servers import Server
from tests.native.test_driver_build import client_flags

pytestmark = pytest.mark.realdb

NATIVE = Path(__file__).resolve().parents[2] / "native"
BASE_FLAGS = ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-Werror", "-g",
              "-O1", "-fno-omit-frame-pointer", "-DBT_HAVE_MYSQL", "-DBT_HAVE_PGSQL"]
SANITIZERS = {
    "asan": (["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
             {"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}),
    "tsan": (["-fsanitize=thread"], {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"}),
}


@pytest.fixture(scope="module", params=sorted(SANITIZERS))
def stop_binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc) on PATH")
    cflags, libs = client_flags()
    flags, env = SANITIZERS[request.param]
    out = tmp_path_factory.mktemp("stop") / f"test_stop_{request.param}"
    cmd = [cc, *BASE_FLAGS, *flags, *cflags, "-I.", "tests/test_stop.c", *CORE, *MYSQL, *PGSQL,
           *libs, "-lsqlite3", "-lm", "-o", str(out)]
    done = subprocess.run(cmd, cwd=NATIVE, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{shlex.join(cmd)}\n{done.stderr}"
    return out, env


def expect(proc: subprocess.Popen[str], word: str, seen: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line.rstrip("\n"))
        if line.strip() == word:
            return
    raise AssertionError(f"no {word!r}:\n" + "\n".join(seen))


def test_stop_path_is_clean_under_sanitizers(stop_binary: tuple[Path, dict], mysql_server: Server) -> None:
    binary, san_env = stop_binary
    env = dict(os.environ, **san_env)
    proc = subprocess.Popen([str(binary), mysql_server.host, str(mysql_server.port), mysql_server.user,
                             mysql_server.password or "", mysql_server.database],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None
    seen: list[str] = []
    try:
        expect(proc, "running", seen)
        mysql_server.kill(signal.SIGSTOP)
        proc.stdin.write("frozen\n")
        proc.stdin.flush()
        expect(proc, "detached", seen)
        mysql_server.kill(signal.SIGCONT)
        proc.stdin.write("thawed\n")
        proc.stdin.flush()
        rest, stderr = proc.communicate(timeout=60)
    finally:
        mysql_server.kill(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    lines = seen + rest.splitlines()
    report = "\n".join(lines) + "\nstderr:\n" + stderr[-4000:]
    assert proc.returncode == 0, report
    assert not [ln for ln in lines if ln.startswith("FAIL")] and lines[-1] == "PASSED", report
    assert "Sanitizer" not in stderr and "runtime error" not in stderr, report
