"""Monitor-only mode: a tab per source (widgets/source_pane.py), no load
engine; refresh, pause and source keys, and c in a statements view: a capture
of that server (capture_key.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static, TabbedContent, TabPane

from benchtop.screens.capture_key import CAPTURE_S, STATEMENTS_VIEW, capture_folder, capture_to
from benchtop.screens.help import HelpScreen
from benchtop.screens.messages import SourcePolled
from benchtop.screens.widgets.footer import KeysFooter
from benchtop.screens.widgets.fmt import pane_id
from benchtop.screens.widgets.source_pane import SourcePane, tab_title
from benchtop.screens.widgets.verdict_line import VerdictLine
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.poller import Poller, SourcePoller
from benchtop.verdict.snapshots import SERVERS, monitor_verdict, verdict_sources


REFRESH_STEPS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
def next_interval(current: float, step: int) -> float:
    """The refresh interval one step slower (+1) or faster (-1).

    >>> next_interval(2.0, 1), next_interval(2.0, -1), next_interval(0.5, -1), next_interval(3.0, 1)
    (5.0, 1.0, 0.5, 5.0)
    """
    if step > 0:
        return next((s for s in REFRESH_STEPS if s > current + 1e-9), REFRESH_STEPS[-1])
    return next((s for s in reversed(REFRESH_STEPS) if s < current - 1e-9), REFRESH_STEPS[0])


class MonitorScreen(Screen):
    """Monitor-only mode: a tab per source, no load."""

    BINDINGS = [
        Binding("plus,equals_sign", "refresh_by(1)", "slower", id="slower"),
        Binding("minus", "refresh_by(-1)", "faster", id="faster"),
        Binding("p,space", "pause", "pause", id="pause"),
        # the dashboard's ] and [ turn the rate: sources have keys of their own in both screens
        Binding("greater_than_sign", "source_by(1)", "next source", key_display=">,<", id="next_source"),
        Binding("less_than_sign", "source_by(-1)", "previous source", show=False, id="previous_source"),
        Binding("ctrl+s", "save", "screenshot", show=False, id="save"),
        Binding("c", "capture", "capture", show=False, id="capture"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit_monitor", "quit", id="quit"),
    ]

    def __init__(self, pollers: Sequence[Poller], save_dir: Path | None = None) -> None:
        super().__init__()
        self.pollers = list(pollers)
        self.paused = False
        self.save_dir = save_dir  # --out: screenshots go with the recording
        self._latest: dict[str, SourceSnapshot] = {}  # each source's newest snapshot, for the verdict line
        self._capturing: dict[str, Path] = {}  # the sources being captured, and where to

    def compose(self) -> ComposeResult:
        names = ", ".join(p.name for p in self.pollers)
        yield Static(f"[b]benchtop monitor[/b]  {names}  (read-only polls)", id="monitor-header")
        yield VerdictLine(id="verdict")
        with TabbedContent(id="tabs"):
            for p in self.pollers:
                title = tab_title(p, self.pollers)
                with TabPane(title, id=f"tab-{pane_id(p.name)}"):
                    yield SourcePane(p, title)
        yield KeysFooter(compact=True)

    def _active_pane(self) -> SourcePane | None:
        tabs = self.query_one(TabbedContent)
        active = tabs.active
        for pane in self.query(SourcePane):
            if f"tab-{pane_id(pane.poller.name)}" == active:
                return pane
        return None

    def on_mount(self) -> None:
        # The first tab shows first: its first table takes the keys once it exists.
        for pane in self.query(SourcePane).results():
            pane.want_focus = True
            break

    @on(SourcePolled)
    def _source_polled(self, event: SourcePolled) -> None:
        """What limits the server now, from every source's newest poll (docs/verdict.md)."""
        self._latest[event.source] = event.snapshot
        self._show_verdict()

    def _show_verdict(self) -> None:
        pane = self._active_pane()
        about, snaps = verdict_sources(list(self._latest.values()), pane.poller.name if pane is not None else None)
        servers = sum(1 for s in self._latest.values() if s.kind in SERVERS)
        shown = next((p for p in self.query(SourcePane) if p.poller.name == about), None)
        # the server named when there is more than one to mean
        label = (shown.title if shown is not None else about or "") if servers > 1 else ""
        self.query_one(VerdictLine).show(monitor_verdict(snaps, os.cpu_count() or 1), label)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self._active_pane()
        if pane is not None:
            pane.focus_table()
        self._show_verdict()

    def action_refresh_by(self, step: int) -> None:
        panes = list(self.query(SourcePane))
        if not panes:
            return
        seconds = next_interval(panes[0].interval, step)
        for pane in panes:
            pane.set_poll_interval(seconds)
        self.notify(f"refresh every {seconds:g}s", timeout=2)

    def action_pause(self) -> None:
        self.paused = not self.paused
        for pane in self.query(SourcePane):
            pane.paused = self.paused
            pane.refresh_view()
        self.notify("paused: the screens keep the last poll" if self.paused else "resumed", timeout=2)

    def action_source_by(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = [f"tab-{pane_id(p.name)}" for p in self.pollers]
        if tabs.active in ids:
            tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]

    def action_save(self) -> None:
        path = self.app.save_screenshot(path=str(self.save_dir) if self.save_dir else None)
        self.notify(f"saved {path}", timeout=4)

    def action_capture(self) -> None:
        """A capture of the server on show, from its statements view; the
        capture runs on a worker thread and says where it wrote when done."""
        pane = self._active_pane()
        poller = pane.poller if pane is not None else None
        if pane is None or not isinstance(poller, SourcePoller) or poller.source.kind not in STATEMENTS_VIEW:
            self.notify("c captures a MySQL/MariaDB, PostgreSQL or ProxySQL source", timeout=4)
            return
        view = STATEMENTS_VIEW[poller.source.kind]
        if pane.view is None or pane.view.key != view:
            self.notify(f"c captures from the {view} view", timeout=4)
            return
        name = poller.name
        if name in self._capturing:
            self.notify(f"a capture of {name} is running, into {self._capturing[name]}", timeout=4)
            return
        folder = capture_folder(self.save_dir or Path.cwd(), name, time.time())
        self._capturing[name] = folder
        kind, target = poller.source.kind, poller.source.target

        def work() -> None:
            said = f"the capture of {name} stopped"
            try:
                said = capture_to(kind, target, folder)
            finally:
                self.app.call_from_thread(self._captured, name, said)

        self.app.run_worker(work, thread=True, group=f"capture:{name}", exit_on_error=False,
                            description=f"capturing {name}")
        self.notify(f"capturing {name} for {CAPTURE_S:g} s (read-only) into {folder}", timeout=6)

    def _captured(self, name: str, said: str) -> None:
        self._capturing.pop(name, None)
        self.notify(said, timeout=15)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(bench=False))

    def action_quit_monitor(self) -> None:
        self.app.exit(None)
