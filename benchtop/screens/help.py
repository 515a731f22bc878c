"""The `?` screen: every key, what it does."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

BENCH_KEYS = (
    ("+ / -", "threads +1 / -1"),
    ("* / /", "threads x2 / half"),
    ("r", "type a rate in transactions/s (0 = unlimited)"),
    ("] / [", "rate x2 / half (from unlimited: start near the achieved tps)"),
    ("g", "thread groups: select the next one, the keys above then act on it (again: all)"),
    ("space", "pause / resume the load"),
    ("m", "mark this moment on the timeline (with a text)"),
    ("i", "cycle instrumentation presets (when the target has them)"),
    ("s", "save a screenshot (SVG) and the results so far into the run's results folder"),
    ("w", "charts: the whole run folded to fit / the newest intervals"),
    ("> / <", "next / previous tab: the bench and each server source (or click its tab)"),
    ("tab / shift+tab", "on the bench tab: next / previous tab; on a source's tab: its next / previous view"),
    ("1 .. 9", "on the bench tab: the tab numbered so (1 bench, 2 the first source); on a source's tab: its views"),
    ("q", "quit: stop the run, print the summary and where the results folder is"),
    ("?", "this help (escape closes it)"),
)
MONITOR_KEYS = (
    ("1 .. 9", "the view of this source numbered so in the view bar (1 top, 2 statements, ...)"),
    ("tab / shift+tab", "next / previous view of this source (top, statements, waits, ...)"),
    ("> / <", "next / previous source (or click its tab); ] and [ are the dashboard's rate keys"),
    ("s", "sort on the next column (or click a column header; again to reverse)"),
    ("r", "reverse the sort"),
    ("l or /", "filter: show only rows containing a text (empty clears it)"),
    ("i", "show / hide idle sessions (hidden by default)"),
    ("enter", "details of the row: full statement, every figure, latency buckets"),
    ("+ / -", "poll less / more often (0.5 s .. 60 s)"),
    ("p or space", "pause / resume polling (the screens keep the last poll)"),
    ("ctrl+s", "save a screenshot (SVG)"),
    ("c", "in a statements (ProxySQL: digests) view: capture that server for 60 s (read-only) into a folder, "
          "for benchtop workload from-capture"),
    ("q", "quit"),
    ("?", "this help (escape closes it)"),
)
TIMELINE = "Timeline symbols on the charts' time axis: T threads, R rate, ‖ pause, ▶ resume, M mark, I instrumentation, ! outage, N note."


def keys_table(keys: tuple[tuple[str, str], ...]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, what in keys:
        table.add_row(key, what)
    return table


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 80; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [("escape,question_mark,q", "close", "close")]

    def __init__(self, bench: bool = True) -> None:
        super().__init__()
        self.bench = bench

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("[b]benchtop keys[/b]")
            yield Static(keys_table(BENCH_KEYS if self.bench else MONITOR_KEYS))
            if self.bench:
                yield Static(TIMELINE)
            yield Static("[dim]escape closes this screen[/dim]")

    def action_close(self) -> None:
        self.dismiss(None)
