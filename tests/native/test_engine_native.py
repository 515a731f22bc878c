"""The C engine on its own: warnings-clean with -Wall -Wextra -Werror, and its
C test program clean under AddressSanitizer, UBSan and LeakSanitizer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchtop.engine._sources import CORE
from tests.native.cbuild import build_program, session_objects

BASE_FLAGS = ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-Werror"]
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")


def _uring() -> tuple[list[str], list[str]]:
    """fileio's async mode is built and tested when liburing is installed:
    (compile flags, link flags)."""
    pkg = shutil.which("pkg-config")
    res = subprocess.run([pkg, "--libs", "liburing"], capture_output=True, text=True) if pkg else None
    return (["-DBT_HAVE_URING"], res.stdout.split()) if res is not None and res.returncode == 0 else ([], [])


def _build(tmp_path_factory: pytest.TempPathFactory, out: Path, extra: list[str]) -> None:
    assert CC is not None
    defines, libs = _uring()
    build_program(session_objects(tmp_path_factory), CC, [*BASE_FLAGS, *extra, *defines], ["tests/test_engine.c", *CORE],
                  ["-lsqlite3", "-lpthread", "-lm", *libs], out)


def _run(binary: Path, tmp_path: Path, env_extra: dict[str, str]) -> str:
    env = dict(os.environ, **env_extra)
    res = subprocess.run([str(binary), str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_engine_builds_warning_free_and_passes(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    binary = tmp_path / "test_engine"
    _build(tmp_path_factory, binary, ["-O2"])
    out = _run(binary, tmp_path, {})
    assert out.strip().endswith("0 failed")


def test_engine_clean_under_asan_ubsan_lsan(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    binary = tmp_path / "test_engine_asan"
    _build(tmp_path_factory, binary, ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                                      "-fno-sanitize-recover=undefined"])
    out = _run(binary, tmp_path, {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                                  "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"})
    assert " 0 failed" in out
