"""Event-loop workers in C under AddressSanitizer + UBSan + LeakSanitizer
and under ThreadSanitizer (both told of every stack switch), against the
harness's PostgreSQL frozen with SIGSTOP: connections added and retired on
running loops, every connection of both loops ended by abort_io at once,
loops inside connect ended too, the engine freed once
(native/tests/test_loops.c)."""

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
from tests.native.test_stop_path import BASE_FLAGS, SANITIZERS, expect
from tests.realdb.test_stop_path import freeze

pytestmark = pytest.mark.realdb

NATIVE = Path(__file__).resolve().parents[2] / "native"


@pytest.fixture(scope="module", params=sorted(SANITIZERS))
def loops_binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc) on PATH")
    cflags, libs = client_flags()
    flags, env = SANITIZERS[request.param]
    out = tmp_path_factory.mktemp("loops") / f"test_loops_{request.param}"
    cmd = [cc, *BASE_FLAGS, *flags, *cflags, "-I.", "tests/test_loops.c", *CORE, *MYSQL, *PGSQL,
           *libs, "-lsqlite3", "-lm", "-o", str(out)]
    done = subprocess.run(cmd, cwd=NATIVE, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{shlex.join(cmd)}\n{done.stderr}"
    return out, env


def test_event_loops_are_clean_under_sanitizers(loops_binary: tuple[Path, dict], pg_server: Server) -> None:
    binary, san_env = loops_binary
    env = dict(os.environ, **san_env)
    proc = subprocess.Popen([str(binary), pg_server.host, str(pg_server.port), pg_server.user,
                             pg_server.password or "", pg_server.database],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None
    seen: list[str] = []
    try:
        expect(proc, "running", seen)
        freeze(pg_server, signal.SIGSTOP)
        proc.stdin.write("frozen\n")
        proc.stdin.flush()
        expect(proc, "done", seen)
        freeze(pg_server, signal.SIGCONT)
        proc.stdin.write("thawed\n")
        proc.stdin.flush()
        rest, stderr = proc.communicate(timeout=60)
    finally:
        freeze(pg_server, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    lines = seen + rest.splitlines()
    report = "\n".join(lines) + "\nstderr:\n" + stderr[-4000:]
    assert proc.returncode == 0, report
    assert not [ln for ln in lines if ln.startswith("FAIL")] and lines[-1] == "PASSED", report
    assert "Sanitizer" not in stderr and "runtime error" not in stderr, report
