"""A panel beside a chart: it draws whatever the dashboard gives it (a
histogram, the timeline, another chart) at its own size, so the dashboard
can pair panels with charts row by row whatever the terminal's shape."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from benchtop.screens.widgets.fmt import crop

Draw = Callable[[int, int], Text]  # (width, height) -> the panel's text


class Panel(Widget):
    DEFAULT_CSS = """
    Panel { height: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._draw: Draw | None = None
        self.content = ""  # what it shows, e.g. "last", "whole", "timeline"

    def show(self, content: str, draw: Draw) -> None:
        self.content = content
        self._draw = draw
        self.refresh()

    def render(self) -> Text:
        if self._draw is None:
            return Text("")
        return crop(self._draw(self.size.width, self.size.height), self.size.width)
