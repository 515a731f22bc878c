"""Test-suite wide configuration: the real-server fixtures are a plugin, and
runs without --out save under a throwaway folder, not the user's home."""

import os
import shutil
import tempfile

pytest_plugins = ["tests.fixtures.servers"]

_RESULTS = tempfile.mkdtemp(prefix="benchtop-test-results-")


def pytest_configure(config):
    # subprocesses (the e2e tests' `python -m benchtop`) inherit it
    os.environ.setdefault("BENCHTOP_RESULTS", _RESULTS)


def pytest_unconfigure(config):
    shutil.rmtree(_RESULTS, ignore_errors=True)
