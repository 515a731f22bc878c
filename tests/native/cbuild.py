"""Builds the C test programs of tests/native from native/'s sources: each
source compiled to an object on its own, all of them at once (one compiler
per core), and an object made once per session for the same source digest,
compiler and flags, so the programs that share the engine under the same
sanitizer (test_stop and test_loops) compile it once between them."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchtop.engine._sources import digest

NATIVE = Path(__file__).resolve().parents[2] / "native"


class BuildError(AssertionError):
    """A compile or link failed; the message has the command and its output."""


class ObjectCache:
    """Objects of native/ sources under `root`, keyed by the sources' digest,
    the compiler and the flags."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._building: dict[Path, threading.Lock] = {}

    def _folder(self, cc: str, flags: Sequence[str]) -> Path:
        key = hashlib.sha256("\0".join([digest(NATIVE), cc, *flags]).encode()).hexdigest()[:16]
        return self.root / key

    def objects(self, cc: str, flags: Sequence[str], sources: Sequence[str]) -> tuple[list[Path], str]:
        """The object of each source (paths relative to native/), compiling
        the missing ones in parallel; returns them and the compilers' stderr
        (warnings), or raises BuildError."""
        folder = self._folder(cc, flags)
        folder.mkdir(parents=True, exist_ok=True)
        outs = [folder / (src.replace("/", "__").removesuffix(".c") + ".o") for src in sources]

        def compile_one(src: str, out: Path) -> str:
            with self._lock:
                guard = self._building.setdefault(out, threading.Lock())
            with guard:  # two programs asking for one object wait for one compile
                if out.exists():
                    return ""
                cmd = [cc, *flags, "-c", src, "-o", str(out) + ".tmp"]
                done = subprocess.run(cmd, cwd=NATIVE, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise BuildError(f"{shlex.join(cmd)}\n{done.stderr}")
                os.replace(str(out) + ".tmp", out)
                return done.stderr

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            warnings = list(pool.map(compile_one, sources, outs))
        return outs, "".join(warnings)


_CACHES: dict[Path, ObjectCache] = {}


def session_objects(tmp_path_factory: pytest.TempPathFactory) -> ObjectCache:
    """The session's object cache (in its base temporary folder)."""
    root = tmp_path_factory.getbasetemp() / "native-objects"
    return _CACHES.setdefault(root, ObjectCache(root))


def build_program(cache: ObjectCache, cc: str, flags: Sequence[str], sources: Sequence[str],
                  link: Sequence[str], out: Path) -> str:
    """Compiles `sources` (relative to native/) with `flags` and links them
    with `link` into `out`; returns the compilers' and linker's stderr."""
    objects, warnings = cache.objects(cc, flags, sources)
    cmd = [cc, *flags, *map(str, objects), *link, "-o", str(out)]
    done = subprocess.run(cmd, cwd=NATIVE, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"{shlex.join(cmd)}\n{done.stderr}")
    return warnings + done.stderr
