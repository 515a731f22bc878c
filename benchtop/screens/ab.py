"""`benchtop ab` in the TUI: both sides' TPS round by round, the interval
of B/A so far with its verdict line, and the round in progress.  The
comparison runs in a thread worker and hands the screen a new view
(benchtop.record.ab) whenever something changed; q ends it early, keeping
the rounds that finished."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from benchtop.record.ab import AbView, Comparison
from benchtop.screens.widgets.ab_chart import interval_line, live_text, render_chart

FINISHED_LINGER_S = 3.0  # the finished comparison stays on screen this long before the app exits


class AbViewed(Message):
    """The comparison has a new view (a round, an interval, its end)."""

    def __init__(self, view: AbView) -> None:
        super().__init__()
        self.view = view


class ComparisonEnded(Message):
    """The comparison's worker returned: every round it will run has run,
    or `error` ended it (the app exits at once and its caller reports it)."""

    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.error = error


class RoundsChart(Widget):
    """Both sides' TPS per round (benchtop.screens.widgets.ab_chart)."""

    DEFAULT_CSS = "RoundsChart { height: 1fr; min-height: 5; }"

    def __init__(self, view: AbView, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view

    def show(self, view: AbView) -> None:
        self.view = view
        self.refresh()

    def render(self) -> Text:
        return render_chart(self.view, self.size.width, self.size.height)


class AbScreen(Screen[None]):
    BINDINGS = [
        Binding("q", "stop", "stop", id="ab-stop"),
        Binding("ctrl+c", "stop", "stop", show=False, priority=True, id="ab-leave"),
    ]
    DEFAULT_CSS = """
    AbScreen #ab-title { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    AbScreen #ab-note { height: 1; padding: 0 1; }
    AbScreen #ab-live { height: 1; padding: 0 1; }
    AbScreen RoundsChart { padding: 0 1; }
    AbScreen #ab-interval { height: 1; padding: 0 1; }
    AbScreen #ab-verdict { height: auto; max-height: 2; padding: 0 1; }
    AbScreen #ab-keys { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, comparison: Comparison, first: AbView) -> None:
        super().__init__()
        self.comparison = comparison
        self.view = first
        self.stopping = False

    def compose(self) -> ComposeResult:
        yield Static(id="ab-title")
        yield Static(id="ab-note")
        yield Static(id="ab-live")
        yield RoundsChart(self.view)
        yield Static(id="ab-interval")
        yield Static(id="ab-verdict")
        yield Static(id="ab-keys")

    def on_mount(self) -> None:
        self._show(self.view)
        comparison = self.comparison

        def publish(view: AbView) -> None:
            self.post_message(AbViewed(view))

        def work() -> None:
            try:
                comparison.run(publish)
            except Exception as exc:  # noqa: BLE001 - handed to the app's caller, which reports it
                self.post_message(ComparisonEnded(exc))
            else:
                self.post_message(ComparisonEnded())

        self.app.run_worker(work, thread=True, group="ab", exit_on_error=False, description="the comparison")

    def on_resize(self) -> None:
        self._show(self.view)  # the interval's bar is as wide as the screen

    def _show(self, view: AbView) -> None:
        self.view = view
        width = max(self.size.width - 2, 20)
        self.query_one("#ab-title", Static).update(Text(f"benchtop ab {view.title}"))
        note = self.query_one("#ab-note", Static)
        note.update(Text(view.note, no_wrap=True, overflow="ellipsis"))
        note.display = bool(view.note)
        self.query_one("#ab-live", Static).update(live_text(view))
        self.query_one(RoundsChart).show(view)
        self.query_one("#ab-interval", Static).update(interval_line(view, width))
        self.query_one("#ab-verdict", Static).update(Text(view.verdict))
        keys = ("stopping… (q again: without waiting for the workers)" if self.stopping and not view.ended else
                "finished" if view.ended else "q stop (the finished rounds are kept)")
        self.query_one("#ab-keys", Static).update(keys)

    @on(AbViewed)
    def _viewed(self, event: AbViewed) -> None:
        self._show(event.view)

    @on(ComparisonEnded)
    def _ended(self, event: ComparisonEnded) -> None:
        if event.error is not None or self.stopping:
            self.app.exit(event.error)
        else:
            self.set_timer(FINISHED_LINGER_S, self.app.exit)

    def action_stop(self) -> None:
        """First: stop the run in progress (its round does not count) and
        with it the comparison; again: without waiting for its workers."""
        self.comparison.stop("quit")
        self.stopping = True
        self._show(self.view)


class AbApp(App[Exception | None]):
    """The comparison's screen alone; returns when the comparison has
    ended, with the error that ended it, if one did (for the caller to report)."""

    TITLE = "benchtop ab"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, comparison: Comparison, first: AbView) -> None:
        super().__init__()
        self.comparison = comparison
        self.first = first

    def get_default_screen(self) -> Screen:
        return AbScreen(self.comparison, self.first)
