"""The type checker (test_floor_plan's test_type_checker_is_clean) starts in
the background as soon as the session's tests are collected, at the lowest
CPU priority: from a fresh clone (no mypy cache) it needs some ten seconds
of CPU, which it takes from the second core while the tests before it wait
on servers and sleeps, instead of on the critical path. The test then reads
its result (raising it back to normal priority if it is still running), or
starts it when the session did not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_NAME = "test_type_checker_is_clean"


@dataclass
class Checker:
    proc: subprocess.Popen[bytes]
    folder: Path

    def result(self, timeout: float) -> tuple[int, str, str]:
        """(return code, stdout, stderr) once it has finished."""
        if self.proc.poll() is None:
            try:  # the test waits for it now: it is on the critical path again
                os.setpriority(os.PRIO_PROCESS, self.proc.pid, 0)
            except OSError:  # raising a priority needs privileges
                pass
        code = self.proc.wait(timeout)
        return code, (self.folder / "out").read_text(), (self.folder / "err").read_text()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_type_checker() -> Checker:
    folder = Path(tempfile.mkdtemp(prefix="benchtop-mypy-"))
    nice = ["nice", "-n", "19"] if shutil.which("nice") else []
    with open(folder / "out", "wb") as out, open(folder / "err", "wb") as err:
        proc = subprocess.Popen([*nice, sys.executable, "-m", "mypy"], cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err)
    return Checker(proc, folder)


CHECKER = pytest.StashKey[Checker]()


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if any(item.name == TEST_NAME for item in session.items):
        session.config.stash[CHECKER] = start_type_checker()


def pytest_sessionfinish(session: pytest.Session) -> None:
    checker = session.config.stash.get(CHECKER, None)
    if checker is not None:
        checker.close()


@pytest.fixture
def type_checker(request: pytest.FixtureRequest) -> Checker:
    checker = request.config.stash.get(CHECKER, None)
    if checker is None:
        checker = request.config.stash[CHECKER] = start_type_checker()
    return checker
