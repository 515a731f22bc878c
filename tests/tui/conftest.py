"""The TUI tests need the native engine (Histogram bucket bounds)."""

import pytest



@pytest.fixture
def fake():
    from tests.tui.fakes import FakeRunController

    return FakeRunController()
