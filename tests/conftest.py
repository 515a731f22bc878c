"""Test-suite wide configuration: the real-server fixtures are a plugin, and
runs without --out save under a throwaway folder, not the user's home, and
a test that runs a headless run in-process gives SIGINT/SIGTERM back to
pytest afterwards."""

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.fixtures.servers"]

_RESULTS = tempfile.mkdtemp(prefix="benchtop-test-results-")


def pytest_configure(config):
    # subprocesses (the e2e tests' `python -m benchtop`) inherit it
    os.environ.setdefault("BENCHTOP_RESULTS", _RESULTS)


def pytest_unconfigure(config):
    shutil.rmtree(_RESULTS, ignore_errors=True)


@pytest.fixture(autouse=True)
def _signal_handlers_restored() -> Iterator[None]:
    # run_headless installs its own SIGINT/SIGTERM handlers for the run; left
    # in place, they swallow a Ctrl-C (or CI's SIGTERM) meant for pytest
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)
