"""The TUI tests need the native engine (Histogram bucket bounds)."""

import pytest
import textual.constants


@pytest.fixture(autouse=True)
def _no_animations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tab switch slides the tabs' underline for 0.3 s, and Pilot waits on every key
    until the app is idle, so each switch cost the tests that long; they check what
    is shown, not how it slides (the terminal tests, in tmux, keep the animations)."""
    monkeypatch.setattr(textual.constants, "TEXTUAL_ANIMATIONS", "none")


@pytest.fixture
def fake():
    from tests.tui.fakes import FakeRunController

    return FakeRunController()
