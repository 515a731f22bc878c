"""The TUI tests need the native engine (Histogram bucket bounds)."""

import pytest

import benchtop.engine  # noqa: F401 - imported first: snapshots needs the engine package initialised


@pytest.fixture
def fake():
    from tests.tui.fakes import FakeRunController

    return FakeRunController()
