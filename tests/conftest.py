"""Test-suite wide configuration: the real-server fixtures are a plugin, and
runs without --out save under a throwaway folder, not the user's home, and
a test that runs a headless run in-process gives SIGINT/SIGTERM back to
pytest afterwards."""

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from benchtop.errors import caller_signal_handlers

pytest_plugins = ["tests.fixtures.servers"]

_RESULTS = tempfile.mkdtemp(prefix="benchtop-test-results-")


def pytest_configure(config):
    # subprocesses (the e2e tests' `python -m benchtop`) inherit it
    os.environ.setdefault("BENCHTOP_RESULTS", _RESULTS)


def pytest_unconfigure(config):
    shutil.rmtree(_RESULTS, ignore_errors=True)


@pytest.fixture(autouse=True)
def _signal_handlers_restored() -> Iterator[None]:
    # a subcommand's main called directly (not through benchtop.commands.main,
    # which does this itself) installs its run's SIGINT/SIGTERM handlers; left
    # in place, they swallow a Ctrl-C (or CI's SIGTERM) meant for pytest
    with caller_signal_handlers():
        yield
