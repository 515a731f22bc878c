"""Test-suite wide configuration: the real-server fixtures are a plugin, and
runs without --out save under a throwaway folder, not the user's home, and
a test that runs a headless run in-process gives SIGINT/SIGTERM back to
pytest afterwards.  Each test has its own state folder (the records of the
settings benchtop changes on a server), never the user's.  benchtop's
modules are compiled once, before the tests start the command.  Under
pytest-xdist (pyproject's `-n 2`) the workers share the host as
tests/fixtures/sharing.py says."""

import compileall
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchtop.errors import caller_signal_handlers
from tests.fixtures.sharing import FilesAndFolders, host_turn, shared_servers_named

pytest_plugins = ["tests.fixtures.servers"]

_RESULTS = tempfile.mkdtemp(prefix="benchtop-test-results-")
_STATE = tempfile.mkdtemp(prefix="benchtop-test-state-")
_TESTS = itertools.count()
# the folder of the locks by which xdist's workers take turns on the host (made by the controller)
_TURNS = "BENCHTOP_TEST_TURNS"


def _compile_benchtop() -> None:
    # Under PYTHONDONTWRITEBYTECODE (set on the CI host) nothing writes them,
    # and each of the suite's hundreds of `python -m benchtop` compiled the
    # modules it imports from source again (~0.2-0.5 s of CPU apiece); pip
    # compiles an installed benchtop, an editable checkout is not.  Only
    # stale or missing files are written, into the gitignored __pycache__.
    if sys.dont_write_bytecode:
        compileall.compile_dir(Path(__file__).resolve().parents[1] / "benchtop", quiet=1)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    # before xdist reads it: servers named by the environment are one set for all workers
    if shared_servers_named(os.environ) and not config.option.collectonly:
        config.option.numprocesses = 0


def pytest_xdist_make_scheduler(config, log):
    return FilesAndFolders(config, log)


def _controller(config) -> bool:
    return not hasattr(config, "workerinput") and bool(config.getoption("numprocesses", 0))


def pytest_configure(config):
    _compile_benchtop()
    if _controller(config):
        os.environ[_TURNS] = tempfile.mkdtemp(prefix="benchtop-test-turns-")
    # subprocesses (the e2e tests' `python -m benchtop`) inherit it
    os.environ.setdefault("BENCHTOP_RESULTS", _RESULTS)
    os.environ["BENCHTOP_STATE_DIR"] = _STATE


def pytest_unconfigure(config):
    shutil.rmtree(_RESULTS, ignore_errors=True)
    shutil.rmtree(_STATE, ignore_errors=True)
    if _controller(config):
        shutil.rmtree(os.environ.pop(_TURNS), ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # around setup too: a worker's first test starts its servers, CPU an `alone` test is not to share
    with host_turn(os.environ.get(_TURNS) if hasattr(item.config, "workerinput") else None,
                   item.get_closest_marker("alone") is not None):
        yield


@pytest.fixture(autouse=True)
def _own_state_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    # a record one test leaves (a killed run's) is not another test's to find; created on first write
    monkeypatch.setenv("BENCHTOP_STATE_DIR", os.path.join(_STATE, str(next(_TESTS))))


@pytest.fixture(autouse=True)
def _signal_handlers_restored() -> Iterator[None]:
    # a subcommand's main called directly (not through benchtop.commands.main,
    # which does this itself) installs its run's SIGINT/SIGTERM handlers; left
    # in place, they swallow a Ctrl-C (or CI's SIGTERM) meant for pytest
    with caller_signal_handlers():
        yield
