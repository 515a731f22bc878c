"""Small dialogs: type a rate, name a mark.  Each is a ModalScreen that
dismisses with the value, or None when cancelled with escape."""

from __future__ import annotations

import math

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

_SUFFIXES = {"k": 1e3, "m": 1e6}
MAX_RATE = 1e7


def parse_rate(text: str) -> float:
    """A rate typed by the user, in transactions per second; 0 = unlimited.

    >>> [parse_rate(t) for t in ("500", " 2.5k ", "1000/s", "0", "unlimited")]
    [500.0, 2500.0, 1000.0, 0.0, 0.0]
    >>> parse_rate("fast")
    Traceback (most recent call last):
    ...
    ValueError: not a rate: 'fast' (type a number of transactions per second, 0 = unlimited)
    >>> parse_rate("-5")
    Traceback (most recent call last):
    ...
    ValueError: a rate cannot be negative (0 = unlimited)
    """
    raw = text.strip().lower().removesuffix("/s").strip()
    if raw in ("unlimited", "inf", "none"):
        return 0.0
    if not raw:
        raise ValueError("type a rate in transactions per second (0 = unlimited)")
    factor = 1.0
    if raw[-1] in _SUFFIXES:
        factor = _SUFFIXES[raw[-1]]
        raw = raw[:-1]
    try:
        value = float(raw) * factor
    except ValueError:
        raise ValueError(
            f"not a rate: {text.strip()!r} (type a number of transactions per second, 0 = unlimited)"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"not a rate: {text.strip()!r} (type a number of transactions per second, 0 = unlimited)")
    if value < 0:
        raise ValueError("a rate cannot be negative (0 = unlimited)")
    if value > MAX_RATE:
        raise ValueError(f"at most {MAX_RATE:.0f} transactions per second")
    return value


class _Prompt(ModalScreen):
    DEFAULT_CSS = """
    _Prompt { align: center middle; }
    _Prompt > Vertical {
        width: 60; max-width: 90%; height: auto; padding: 1 2;
        border: round $accent; background: $surface;
    }
    _Prompt Label { width: 1fr; }
    _Prompt .error { color: $error; height: auto; }
    """
    BINDINGS = [("escape", "cancel", "cancel")]

    def __init__(self, question: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Label("", id="prompt-error", classes="error")
            yield Label("enter: apply   escape: cancel", classes="hint")

    def action_cancel(self) -> None:
        self.dismiss(None)


class RateModal(_Prompt):
    """Dismisses with the new rate (0 = unlimited) or None: escape, or
    enter on an empty field, cancels (unlimited is typed as 0)."""

    def __init__(self, current: float) -> None:
        super().__init__(
            "Rate in transactions per second (0 = unlimited, 2.5k = 2500; empty: no change):",
            value=f"{current:g}" if current > 0 else "",
            placeholder="0 = unlimited",
        )

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.dismiss(None)
            return
        try:
            rate = parse_rate(event.value)
        except ValueError as exc:
            self.query_one("#prompt-error", Label).update(Text(f"✗ {exc}"))
            return
        self.dismiss(rate)


class MarkModal(_Prompt):
    """Dismisses with the mark's text (the default when left empty) or None."""

    def __init__(self, default: str) -> None:
        super().__init__("Text for this mark on the timeline:", placeholder=default)
        self.default = default

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or self.default)


class FilterModal(_Prompt):
    """Dismisses with the filter text ("" clears it) or None."""

    def __init__(self, current: str) -> None:
        super().__init__("Show only rows containing (empty: all rows):", value=current, placeholder="text")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())
