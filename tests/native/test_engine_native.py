"""The C engine on its own: warnings-clean with -Wall -Wextra -Werror, and its
C test program clean under AddressSanitizer, UBSan and LeakSanitizer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchtop.engine._sources import CORE

NATIVE = Path(__file__).resolve().parents[2] / "native"
BASE_FLAGS = ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-Werror"]
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")


def _uring() -> list[str]:
    """fileio's async mode is built and tested when liburing is installed."""
    pkg = shutil.which("pkg-config")
    res = subprocess.run([pkg, "--libs", "liburing"], capture_output=True, text=True) if pkg else None
    return ["-DBT_HAVE_URING", *res.stdout.split()] if res is not None and res.returncode == 0 else []


def _build(out: Path, extra: list[str]) -> None:
    cmd = [CC, *BASE_FLAGS, *extra, "-o", str(out), str(NATIVE / "tests" / "test_engine.c"),
           *[str(NATIVE / s) for s in CORE], "-lsqlite3", "-lpthread", "-lm", *_uring()]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def _run(binary: Path, tmp_path: Path, env_extra: dict[str, str]) -> str:
    env = dict(os.environ, **env_extra)
    res = subprocess.run([str(binary), str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_engine_builds_warning_free_and_passes(tmp_path: Path) -> None:
    binary = tmp_path / "test_engine"
    _build(binary, ["-O2"])
    out = _run(binary, tmp_path, {})
    assert out.strip().endswith("0 failed")


def test_engine_clean_under_asan_ubsan_lsan(tmp_path: Path) -> None:
    binary = tmp_path / "test_engine_asan"
    _build(binary, ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                    "-fno-sanitize-recover=undefined"])
    out = _run(binary, tmp_path, {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                                  "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"})
    assert " 0 failed" in out
