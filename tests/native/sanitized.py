"""Building a native/tests line-protocol test (test_stop.c, test_loops.c)
under a sanitizer, and running it against a server it asks to have frozen
and thawed: what tests/native/test_stop_path.py and test_loop_path.py share."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from benchtop.engine._sources import CORE, MYSQL, PGSQL
from tests.fixtures.servers import Server
from tests.native.cbuild import build_program, session_objects
from tests.native.test_driver_build import client_flags

NATIVE = Path(__file__).resolve().parents[2] / "native"
BASE_FLAGS = ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-Werror", "-g",
              "-O1", "-fno-omit-frame-pointer", "-DBT_HAVE_MYSQL", "-DBT_HAVE_PGSQL"]
SANITIZERS = {
    "asan": (["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
             {"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}),
    "tsan": (["-fsanitize=thread"], {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"}),
}


def build(name: str, sanitizer: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """native/tests/`name`.c with the engine under `sanitizer` (a SANITIZERS
    key): the binary, and the environment its sanitizer wants."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc) on PATH")
    cflags, libs = client_flags()
    flags, env = SANITIZERS[sanitizer]
    out = tmp_path_factory.mktemp(name.removeprefix("test_")) / f"{name}_{sanitizer}"
    # the engine's objects under each sanitizer are compiled once for both tests (cbuild.py)
    build_program(session_objects(tmp_path_factory), cc, [*BASE_FLAGS, *flags, *cflags, "-I."],
                  [f"tests/{name}.c", *CORE, *MYSQL, *PGSQL], [*libs, "-lsqlite3", "-lm"], out)
    return out, env


def expect(proc: subprocess.Popen[str], word: str, seen: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line.rstrip("\n"))
        if line.strip() == word:
            return
    raise AssertionError(f"no {word!r}:\n" + "\n".join(seen))


def run_frozen(built: tuple[Path, dict], server: Server, freeze: Callable[[int], None], frozen_done: str) -> None:
    """Runs a built test against `server`: freezes the server (freeze(SIGSTOP))
    once the test prints "running", thaws it once it prints `frozen_done`,
    and asserts it passed every check with no sanitizer report."""
    binary, san_env = built
    env = dict(os.environ, **san_env)
    proc = subprocess.Popen([str(binary), server.host, str(server.port), server.user,
                             server.password or "", server.database],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None
    seen: list[str] = []
    try:
        expect(proc, "running", seen)
        freeze(signal.SIGSTOP)
        proc.stdin.write("frozen\n")
        proc.stdin.flush()
        expect(proc, frozen_done, seen)
        freeze(signal.SIGCONT)
        proc.stdin.write("thawed\n")
        proc.stdin.flush()
        rest, stderr = proc.communicate(timeout=60)
    finally:
        freeze(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    lines = seen + rest.splitlines()
    report = "\n".join(lines) + "\nstderr:\n" + stderr[-4000:]
    assert proc.returncode == 0, report
    assert not [ln for ln in lines if ln.startswith("FAIL")] and lines[-1] == "PASSED", report
    assert "Sanitizer" not in stderr and "runtime error" not in stderr, report
