"""The key footer, built again only when the keys it shows change."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

Shown = tuple[tuple[Binding, bool, str], ...]


def shown_bindings(screen: Screen) -> Shown:
    """What a Footer on `screen` is drawn from: each active binding, whether
    it is enabled, and its tooltip, in order."""
    return tuple((b, enabled, tip) for (_, b, enabled, tip) in screen.active_bindings.values())


class KeysFooter(Footer):
    """Textual's Footer remounts every key whenever the focus moves (twice on a
    tab switch), which cost about half of a tab switch's time; this one
    skips that when the keys it would show are the same as it shows."""

    _composed: Shown | None = None

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._composed = shown_bindings(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if self._composed is not None and screen is self.screen and shown_bindings(screen) == self._composed:
            return
        super().bindings_changed(screen)
