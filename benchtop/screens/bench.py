"""The benchmark screen: header, dashboard (charts, histograms, timeline),
the load keys, and the worker that samples the run once per interval.

Every controller call happens in a thread worker started on the app (so the
app's single Worker.StateChanged router sees failures); workers only post
messages, and the handlers here update the widgets.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import TabbedContent, TabPane

from benchtop.engine.histogram import Histogram
from benchtop.panels.units import ms
from benchtop.record.controller import Controller
from benchtop.record.knee import KneeView
from benchtop.record.samples import IntervalStats, TimelineEvent
from benchtop.screens.help import HelpScreen
from benchtop.screens.messages import (
    EngineSampled,
    InstrumentationCycled,
    ResultsSaved,
    RunFinished,
    SettingsApplied,
    SourceLost,
    SourcePolled,
)
from benchtop.screens.modals import MarkModal, RateModal
from benchtop.screens.target_line import TargetTopLine
from benchtop.screens.widgets.chart import Series, TimeChart, legend_text, render_chart
from benchtop.screens.widgets.footer import KeysFooter
from benchtop.screens.widgets.fmt import middle, ms_tick, nice_rate, pane_id
from benchtop.screens.widgets.header import HeaderState, RunHeader
from benchtop.screens.widgets.histogram import axis_for, render_histogram
from benchtop.screens.widgets.hosts import HostRows
from benchtop.screens.widgets.knee_chart import render_knee
from benchtop.screens.widgets.panel import Panel
from benchtop.screens.widgets.per_op import show_per_op
from benchtop.screens.widgets.server import ServerSeries, ServerStrip, StripRow
from benchtop.screens.widgets.source_pane import SourcePane, tab_title
from benchtop.screens.widgets.timeline import markers, timeline_line, timeline_text
from benchtop.screens.widgets.verdict_line import show_verdict
from benchtop.sources.poller import Poller

MIN_RATE = 0.1
WINDOW = 1000  # newest intervals the charts get outside the whole-run view (they show what fits)
FINISHED_LINGER_S = 1.5  # "run finished" stays on screen this long before the app exits


TALL = 36  # rows of the dashboard from which qps gets its own chart and the service chart shows


def layout(tall: bool, rate_mode: bool, sources: bool) -> tuple[list[str], list[str]]:
    """Which chart bands show, and what the panels beside them show, in
    order; a content with no band left goes to the strip under the charts.
    Each band is one row of the screen: a chart and its panel always share
    their top and bottom lines.

    >>> layout(False, False, False)
    (['tps', 'latency'], ['last', 'whole', 'timeline'])
    >>> layout(True, True, False)
    (['tps', 'qps', 'latency', 'queue'], ['last', 'whole', 'service', 'timeline'])
    >>> layout(False, True, True)
    (['tps', 'latency', 'server'], ['last', 'whole', 'timeline'])
    """
    bands = ["tps"]
    if tall and not (sources and rate_mode):
        bands.append("qps")
    bands.append("latency")
    if rate_mode and (tall or not sources):
        bands.append("queue")
    if sources:
        bands.append("server")
    contents = ["last", "whole"] + (["service"] if rate_mode and tall else []) + ["timeline"]
    return bands, contents


def _waiting(title: str) -> Callable[[int, int], Text]:
    def draw(width: int, height: int) -> Text:
        return Text(f"{title}: waiting for the first interval", style="dim")

    return draw


class Dashboard(Vertical):
    """Bands of one chart and one panel each (histograms, the timeline, the
    service chart), laid out by the terminal's height (`layout`).

    `#lines` is the slot for one-line widgets over the charts (the target's
    top line, the per-transaction line, group keys) and `#below` under them
    (the verdict line): mount them there and the bands share the rows that
    are left."""

    BANDS = ("tps", "qps", "latency", "queue", "server")
    DEFAULT_CSS = """
    Dashboard { height: 1fr; }
    Dashboard #lines { height: auto; }
    Dashboard #below { height: auto; }
    Dashboard .band { height: 1fr; }
    Dashboard .band > .chart { width: 3fr; height: 1fr; }
    Dashboard .band > Panel { width: 2fr; min-width: 30; padding-left: 1; }
    Dashboard #band-server { height: 4; }
    Dashboard.tall #band-server { height: 1fr; }
    Dashboard #strip { height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Vertical(id="lines")
        charts = {
            "tps": TimeChart("tps", id="chart-tps", classes="chart"),
            "qps": TimeChart("qps", id="chart-qps", classes="chart"),
            "latency": TimeChart("latency", log=True, fmt=ms, tick_fmt=ms_tick, id="chart-latency", classes="chart"),
            "queue": TimeChart("queue/concurrency", id="chart-queue", classes="chart"),
            "server": ServerStrip(id="server", classes="chart"),
        }
        for name in self.BANDS:
            with Horizontal(id=f"band-{name}", classes="band"):
                yield charts[name]
                yield Panel(id=f"panel-{name}")
        yield Panel(id="strip")
        yield Vertical(id="below")

    _last: tuple[Any, ...] = ()
    _arranged: tuple[Any, ...] = ()
    _placed: dict[str, Panel] = {}

    def on_resize(self) -> None:
        self.set_class(self.size.height >= TALL, "tall")
        if self._last:
            self.show(*self._last)

    def place(self, rate_mode: bool, sources: bool) -> dict[str, Panel]:
        """Show the bands the size and mode call for; content -> its panel."""
        key = (self.has_class("tall"), rate_mode, sources)
        if key == self._arranged:
            return self._placed
        bands, contents = layout(*key)
        panels = []
        for name in self.BANDS:
            self.query_one(f"#band-{name}").display = name in bands
            if name in bands:
                panels.append(self.query_one(f"#panel-{name}", Panel))
        strip = self.query_one("#strip", Panel)
        strip.display = len(contents) > len(panels)
        self._placed = dict(zip(contents, panels + [strip]))
        self._arranged = key
        return self._placed

    def show(
        self,
        history: Sequence[IntervalStats],
        events: Sequence[TimelineEvent],
        run_hist: Histogram,
        rate_mode: bool,
        whole: bool = False,
        server: Sequence[StripRow] | None = None,
        knee: KneeView | None = None,
    ) -> None:
        """Draw everything; `whole` folds the whole run into the charts
        instead of showing the newest intervals that fit; `knee`: a knee
        search's probes and fit take the whole-run histogram's place."""
        self._last = (history, events, run_hist, rate_mode, whole, server, knee)
        placed = self.place(rate_mode, server is not None)
        if server is not None:
            self.query_one(ServerStrip).update_data(server, whole)
        ends = [iv.t for iv in history]
        marks = markers(events, ends)
        t_end = history[-1].t if history else None
        # the time axis spaces intervals evenly: their mean length, not the
        # last one's (a late or early tick would rescale every label)
        step = (t_end - history[0].t + history[0].dt) / len(history) if history and t_end is not None else 1.0

        def series(name: str, get: Callable[[IntervalStats], float], style: str) -> Series:
            return Series(name, tuple(get(iv) for iv in history), style)

        def folded(*ss: Series, peak: bool = False) -> tuple[Series, ...]:
            # latency folds by max so a spike survives the whole-run view
            return tuple(replace(x, peak=peak) for x in ss)

        def chart(cid: str, *ss: Series, peak: bool = False) -> None:
            self.query_one(cid, TimeChart).update_data(folded(*ss, peak=peak), marks, t_end, step, whole)

        def lat(key: str, style: str) -> Series:
            return series(key, lambda iv: iv.latency_ms.get(key, 0.0), style)

        def svc(key: str, style: str) -> Series:
            return series(f"svc {key}", lambda iv: iv.service_latency_ms.get(key, 0.0), style)

        chart("#chart-tps", series("tps", lambda iv: iv.tps, "green"))
        chart("#chart-qps", series("qps", lambda iv: iv.qps, "green"))
        lat_series = [lat("p50", "green"), lat("p95", "yellow"), lat("p99", "red"), lat("max", "magenta")]
        if rate_mode and "service" not in placed:
            # no room for the service chart: put its key line here
            lat_series.append(svc("p99", "cyan"))
        chart("#chart-latency", *lat_series, peak=True)
        if rate_mode:
            chart(
                "#chart-queue",
                series("queue", lambda iv: iv.queue, "yellow"),
                series("conc", lambda iv: iv.concurrency, "cyan"),
            )
        if "service" in placed:
            service = folded(svc("p50", "cyan"), svc("p99", "blue"), lat("p99", "red"), peak=True)

            def draw_service(w: int, h: int) -> Text:
                title = legend_text("service vs corrected", service, ms, w, 2 if h >= 6 else 1, whole)
                return render_chart(title, service, marks, w, h, log=True, fmt=ms, t_end=t_end, step=step,
                                    whole=whole, tick_fmt=ms_tick)

            placed["service"].show("service", draw_service)
        show_per_op(self.query_one("#lines"), history[-1] if history else None)
        axis = axis_for(run_hist)
        if history:
            last_iv = history[-1]
            placed["last"].show("last", lambda w, h: render_histogram(f"last {last_iv.dt:.0f}s", last_iv.latency,
                                                                     axis, w, h))
            placed["whole"].show("whole", lambda w, h: render_histogram("whole run", run_hist, axis, w, h))
        else:
            for key, title in (("last", "last interval"), ("whole", "whole run")):
                placed[key].show(key, _waiting(title))
        if knee is not None:
            placed["whole"].show("knee", lambda w, h: render_knee(knee, w, h))
        self.show_timeline(events)

    def show_timeline(self, events: Sequence[TimelineEvent]) -> None:
        placed = self._placed
        if "timeline" not in placed:
            return
        evs = tuple(events)
        panel = placed["timeline"]
        if panel.id == "strip":
            panel.show("timeline", lambda w, h: timeline_line(evs, w))
        else:
            panel.show("timeline", lambda w, h: timeline_text(evs, h, w))


class BenchScreen(Screen):
    """The live benchmark; sources (if any) are tabs beside the dashboard."""

    BINDINGS = [
        Binding(
            "plus",
            "threads_by(1)",
            "threads",
            key_display="+/-",
            id="threads.more",
            tooltip="threads +1 (- for -1)",
        ),
        Binding("minus", "threads_by(-1)", "threads -1", show=False, id="threads.fewer"),
        Binding(
            "asterisk",
            "threads_times(2)",
            "x2",
            key_display="*,/",
            id="threads.double",
            tooltip="threads x2 (/ halves)",
        ),
        Binding("slash", "threads_times(0.5)", "threads half", show=False, id="threads.half"),
        Binding(
            "r",
            "type_rate",
            "rate",
            id="rate.type",
            tooltip="type a rate (0 = unlimited)",
        ),
        Binding(
            "right_square_bracket",
            "rate_times(2)",
            "x2",
            key_display="],[",
            id="rate.double",
            tooltip="rate x2 ([ halves)",
        ),
        Binding(
            "left_square_bracket",
            "rate_times(0.5)",
            "rate half",
            show=False,
            id="rate.half",
        ),
        Binding("g", "next_group", "group", show=False, id="group.next",
                tooltip="select the next thread group: the knobs then act on it (again: all)"),
        Binding("space", "pause", "pause", id="pause", tooltip="pause / resume the load"),
        Binding("m", "mark", "mark", id="mark", tooltip="mark this moment on the timeline"),
        Binding(
            "i",
            "instrumentation",
            "instr",
            id="instrumentation",
            tooltip="cycle instrumentation presets",
        ),
        Binding(
            "s",
            "save",
            "save",
            id="save",
            tooltip="save a screenshot and the results so far",
        ),
        Binding("w", "whole_run", "whole run", show=False, id="whole", tooltip="charts: whole run / newest"),
        # a source's tab takes tab, shift+tab and digits for its own views once shown;
        # > and < move between tabs from anywhere, as in the monitor (the help says so:
        # at 80 columns the footer has no room left before `? help` and `q quit`)
        Binding("greater_than_sign", "tab_by(1)", "next tab", show=False, id="source.next"),
        Binding("less_than_sign", "tab_by(-1)", "previous source", show=False, id="source.previous"),
        Binding("tab", "tab_by(1)", "next tab", show=False, id="tab.next"),
        Binding("shift+tab", "tab_by(-1)", "previous tab", show=False, id="tab.previous"),
        *(Binding(str(n), f"tab_number({n})", f"tab {n}", show=False, id=f"tab.{n}") for n in range(1, 10)),
        Binding("question_mark", "help", "help", id="help"),
        Binding(
            "q",
            "quit_run",
            "quit",
            id="quit",
            tooltip="stop the run and print the summary",
        ),
    ]

    def __init__(self, controller: Controller, pollers: Sequence[Poller] = (), save_dir: Path | None = None) -> None:
        super().__init__()
        self.controller = controller
        self.pollers = list(pollers)
        self.save_dir = save_dir or Path.cwd()
        # What the user asked for; workers apply the newest value, so quick
        # repeated keys compose instead of racing each other.
        self.wanted_threads = int(controller.threads)
        self.wanted_rate = float(controller.rate)
        self.wanted_paused = bool(controller.paused)
        # thread groups: the selected one (None: the knobs act on the whole
        # run) and what the user asked of each
        self.group: str | None = None
        self.wanted_groups = {name: [threads, rate] for name, threads, rate in controller.groups}
        # The only read of the controller's history: a UI opened on a run
        # under way starts from it; from then on each counted sample adds one.
        opened = list(controller.history)
        self.run_hist = Histogram.empty()
        for iv in opened:
            self.run_hist = self.run_hist + iv.latency
        # Every counted interval, for the whole-run view; only the newest keeps
        # its histograms (the last-interval chart draws it): the rest are a few
        # figures each, where a histogram is tens of KB.
        self.history: list[IntervalStats] = [iv.without_histograms() for iv in opened[:-1]] + opened[-1:]
        self.status = ""
        self._sampling = False
        self._control_lock = threading.Lock()
        self._stopping = False
        self._linger = False
        self._ticks: Timer | None = None
        self._deadline_set = False  # a reading the controller asked for is timed
        self.whole_run = False
        self.server = ServerSeries([p.name for p in self.pollers])
        self.server.hold(len(opened))  # no server values for the intervals before the UI opened

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield HostRows(id="hosts")  # shown by a cluster run's samples only
        if self.pollers:
            yield TargetTopLine([p.name for p in self.pollers], id="target-top")
            with TabbedContent(id="tabs"):
                with TabPane("bench", id="tab-bench"):
                    yield Dashboard(id="dashboard")
                for p in self.pollers:
                    title = tab_title(p, self.pollers)
                    with TabPane(title, id=f"tab-{pane_id(p.name)}"):
                        yield SourcePane(p, title)
        else:
            yield Dashboard(id="dashboard")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        self.refresh_all()
        self._ticks = self.set_interval(self.controller.report_interval, self.sample_engine)
        self._follow_deadline()

    def _follow_deadline(self) -> None:
        """Times the reading the controller asks for between ticks (a
        warm-up's end: the measured window starts there), as the headless
        loop does; the ticks then restart from it."""
        deadline = self.controller.deadline()
        if deadline is None or self._deadline_set:
            return
        self._deadline_set = True
        self.set_timer(max(0.0, deadline - time.monotonic()), self._read_at_deadline)

    def _read_at_deadline(self) -> None:
        self._deadline_set = False
        if self._ticks is not None:
            self._ticks.reset()
        self.sample_engine()

    # -- rendering -------------------------------------------------------------
    def header_state(self) -> HeaderState:
        c = self.controller
        return HeaderState(
            target=c.target,
            workload=c.workload,
            elapsed=c.elapsed,
            remaining=c.remaining,
            workers=c.workers.with_connections(self.wanted_threads),
            rate=self.wanted_rate,
            achieved_tps=self.history[-1].tps if self.history else 0.0,
            errors=c.errors_total,
            reconnects=c.reconnects_total,
            paused=self.wanted_paused,
            status=self.status,
            connected=self.history[-1].connected if self.history else -1,
            refused=sum(iv.connect_failures for iv in self.history),
        )

    def refresh_header(self) -> None:
        self.query_one(RunHeader).show(self.header_state())

    def refresh_all(self) -> None:
        self.refresh_header()
        rate_mode = self.wanted_rate > 0 or any(iv.rate_mode for iv in self.history[-120:])
        history = self.history if self.whole_run else self.history[-WINDOW:]
        events = list(self.controller.timeline)
        server = self.server.rows(history) if self.pollers else None
        # a knee search (benchtop knee) draws its probes against concurrency
        self.query_one(Dashboard).show(history, events, self.run_hist, rate_mode, self.whole_run, server,
                                       self.controller.knee)

    @on(SourcePolled)
    def _source_polled(self, event: SourcePolled) -> None:
        self.query_one(TargetTopLine).polled(event.snapshot)
        if self.server.polled(event.snapshot):
            self._note("outage", f"{event.source} back")

    @on(SourceLost)
    def _source_lost(self, event: SourceLost) -> None:
        if self.server.lost(event.source):
            self._note("outage", f"{event.source} lost: {event.error}")

    def _note(self, kind: str, text: str) -> None:
        self._apply(text, lambda c: c.note(kind, text))

    # -- sampling --------------------------------------------------------------
    def sample_engine(self) -> None:
        """Timer tick: read the engine in a thread, unless a read is still
        running (a slow server must not pile reads up)."""
        if self._sampling or self._stopping:
            return
        self._sampling = True
        controller = self.controller

        def read() -> None:
            try:
                sample = controller.sample()
            finally:
                self._sampling = False
            self.post_message(EngineSampled(sample))

        self.app.run_worker(
            read,
            thread=True,
            exclusive=True,
            group="engine",
            exit_on_error=False,
            description="reading the engine",
        )

    @on(EngineSampled)
    def _engine_sampled(self, event: EngineSampled) -> None:
        sample = event.sample
        if sample.counted:  # warm-up intervals stay out of the charts and the run's histogram
            iv = sample.interval
            if self.history:
                # only the newest interval's histogram is drawn: the charts keep figures
                self.history[-1] = self.history[-1].without_histograms()
            self.history.append(iv)
            self.run_hist = self.run_hist + iv.latency
            self.server.hold(1)
        if sample.hosts:
            self.query_one(HostRows).show(sample.hosts, sample.interval)
        show_verdict(self.query_one("#dashboard #below"), sample.verdict)
        self.refresh_all()
        if not sample.finished:
            self._follow_deadline()
        if sample.finished:
            error = sample.failed
            if error:
                self.notify(escape(f"the run failed: {error}"), severity="error", timeout=10)
            self.stop_run(sample.reason or "time", linger=True, failed=error is not None)

    # -- knobs -----------------------------------------------------------------
    def _apply(self, what: str, call: Callable[[Controller], object]) -> None:
        controller = self.controller

        def work() -> None:
            with self._control_lock:
                call(controller)
            self.post_message(SettingsApplied(what))

        self.app.run_worker(work, thread=True, group="control", exit_on_error=False, description=what)

    def action_next_group(self) -> None:
        names = list(self.wanted_groups)
        if not names:
            self.notify("this workload has no thread groups", timeout=2)
            return
        i = names.index(self.group) + 1 if self.group in names else 0
        self.group = names[i] if i < len(names) else None
        if self.group is None:
            self.notify("knobs act on the whole run", timeout=3)
        else:
            threads, rate = self.wanted_groups[self.group]
            self.notify(f"group {self.group}: {threads:g} thread(s), "
                        + (f"rate {rate:g}/s" if rate > 0 else "closed loop")
                        + " (+ - * / r [ ] act on it; g: next)", timeout=4)

    def _set_group(self, threads: int | None, rate: float | None) -> None:
        name = self.group
        assert name is not None
        wanted = self.wanted_groups[name]
        if threads is not None:
            wanted[0] = max(0, min(self.controller.workers.limit, threads))
            self.wanted_threads = int(sum(v[0] for v in self.wanted_groups.values()))
            self.refresh_header()
            self._apply(f"{name} threads {wanted[0]}", lambda c: c.set_group_threads(name, int(wanted[0])))
        if rate is not None:
            wanted[1] = rate
            self._apply(f"{name} rate {rate:g}/s" if rate > 0 else f"{name} rate unlimited",
                        lambda c: c.set_group_rate(name, float(wanted[1])))

    def _whole_run_refused(self) -> bool:
        """A run of thread groups has no whole-run threads or rate to change."""
        if self.group is None and self.wanted_groups:
            self.notify("this run has thread groups: press g to select one", timeout=3)
            return True
        return False

    def _set_threads(self, n: int) -> None:
        if self.group is not None:
            self._set_group(n, None)
            return
        if self._whole_run_refused():
            return
        workers = self.controller.workers
        n = max(1, min(workers.limit, n))
        if n == self.wanted_threads:
            self.notify(f"{workers.word} stay at {n} (1..{workers.limit})", timeout=2)
            return
        self.wanted_threads = n
        self.refresh_header()
        self._apply(f"threads {n}", lambda c: c.set_threads(self.wanted_threads))

    def _threads_now(self) -> int:
        return int(self.wanted_groups[self.group][0]) if self.group is not None else self.wanted_threads

    def _rate_now(self) -> float:
        return float(self.wanted_groups[self.group][1]) if self.group is not None else self.wanted_rate

    def action_threads_by(self, delta: int) -> None:
        self._set_threads(self._threads_now() + delta)

    def action_threads_times(self, factor: float) -> None:
        self._set_threads(max(1, round(self._threads_now() * factor)))

    def _set_rate(self, rate: float) -> None:
        if self.group is not None:
            self._set_group(None, rate)
            return
        if self._whole_run_refused():
            return
        if rate == self.wanted_rate:  # nothing changes: no timeline event either
            self.notify("rate unchanged" if rate > 0 else "rate stays unlimited", timeout=2)
            return
        self.wanted_rate = rate
        self.refresh_header()
        self._apply(
            "rate unlimited" if rate <= 0 else f"rate {rate:g}/s",
            lambda c: c.set_rate(self.wanted_rate),
        )

    def action_rate_times(self, factor: float) -> None:
        if self._rate_now() <= 0:
            # Closed loop: start rate limiting near what the server (or the group) does now.
            last = self.history[-1] if self.history else None
            achieved = last.tps if last else 0.0
            if self.group is not None and last is not None:
                achieved = next((g.tps for g in last.groups if g.name == self.group), 0.0)
            self._set_rate(nice_rate(achieved * min(factor, 1)))
        else:
            self._set_rate(max(MIN_RATE, round(self._rate_now() * factor, 3)))

    def action_type_rate(self) -> None:
        def chosen(rate: float | None) -> None:
            if rate is not None:
                self._set_rate(max(rate, MIN_RATE) if rate > 0 else 0.0)

        self.app.push_screen(RateModal(self._rate_now()), chosen)

    def action_pause(self) -> None:
        self.wanted_paused = not self.wanted_paused
        self.refresh_header()
        self._apply(
            "paused" if self.wanted_paused else "resumed",
            lambda c: c.set_paused(self.wanted_paused),
        )

    def action_mark(self) -> None:
        n = sum(1 for ev in self.controller.timeline if ev.kind == "mark") + 1

        def chosen(text: str | None) -> None:
            if text is not None:
                self._apply(f"mark {text}", lambda c: c.mark(text))

        self.app.push_screen(MarkModal(f"mark {n}"), chosen)

    def action_instrumentation(self) -> None:
        controller = self.controller

        def work() -> None:
            with self._control_lock:
                preset = controller.cycle_instrumentation()
            self.post_message(InstrumentationCycled(preset))

        self.app.run_worker(
            work,
            thread=True,
            group="control",
            exit_on_error=False,
            description="instrumentation",
        )

    @on(SettingsApplied)
    def _settings_applied(self, event: SettingsApplied) -> None:
        self.refresh_header()
        self.query_one(Dashboard).show_timeline(list(self.controller.timeline))

    @on(InstrumentationCycled)
    def _instrumentation_cycled(self, event: InstrumentationCycled) -> None:
        if event.preset is None:
            self.notify("no instrumentation for this target", timeout=3)
        else:
            self.notify(f"instrumentation: {event.preset}", timeout=3)
        self.query_one(Dashboard).show_timeline(list(self.controller.timeline))

    # -- save, help, quit ------------------------------------------------------
    def action_save(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        svg = self.app.save_screenshot(filename=f"benchtop-{stamp}.svg", path=str(self.save_dir))
        controller = self.controller
        prefix = self.save_dir / f"benchtop-{stamp}"

        def work() -> None:
            paths = controller.save(prefix)
            self.post_message(ResultsSaved([svg, *map(str, paths)]))

        self.app.run_worker(
            work,
            thread=True,
            group="save",
            exit_on_error=False,
            description="saving results",
        )

    @on(ResultsSaved)
    def _results_saved(self, event: ResultsSaved) -> None:
        names = [Path(p).name for p in event.paths]
        stem = names[0].split(".")[0] if names else ""
        kinds = ", ".join(n[len(stem):] if n.startswith(stem) else n for n in names)
        self.notify(f"saved {stem} ({kinds}) in {middle(str(self.save_dir), 60)}", timeout=6)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # without sources there are no tabs: tab moves the focus as usual
        if action in ("tab_by", "tab_number") and not self.pollers:
            return False
        return True

    def _tab_ids(self) -> list[str]:
        return ["tab-bench", *(f"tab-{pane_id(p.name)}" for p in self.pollers)]

    def action_tab_by(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = self._tab_ids()
        tabs.active = ids[((ids.index(tabs.active) if tabs.active in ids else 0) + step) % len(ids)]

    def action_tab_number(self, n: int) -> None:
        """The tab numbered so from the left (1 bench); a digit past the last: nothing."""
        ids = self._tab_ids()
        if n <= len(ids):
            self.query_one(TabbedContent).active = ids[n - 1]

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A source's tab gives the keys to its view (tab, digits: its views);
        the bench tab gives them back to this screen (tab, digits: the tabs)."""
        for pane in self.query(SourcePane):
            if f"tab-{pane_id(pane.poller.name)}" == event.pane.id:
                pane.focus_table()
                return
        self.set_focus(None)

    def action_whole_run(self) -> None:
        self.whole_run = not self.whole_run
        self.refresh_all()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(bench=True))

    def action_quit_run(self) -> None:
        self.stop_run("quit", linger=False)

    def stop_run(self, reason: str, linger: bool, failed: bool = False) -> None:
        """Stop the engine in a thread (it joins the workers) and exit with
        the summary; the finished state stays visible for a moment first.
        Asked again while stopping, it stops waiting for the workers."""
        if self._stopping:
            self.controller.hurry()
            return
        self._stopping = True
        self._linger = linger
        self.status = ("run failed" if failed else "run finished") if linger else "stopping…"
        self.refresh_header()
        controller = self.controller

        def work() -> None:
            summary = controller.stop(reason)
            self.post_message(RunFinished(summary, reason))

        self.app.run_worker(
            work,
            thread=True,
            group="stop",
            exit_on_error=False,
            description="stopping the run",
        )

    @on(RunFinished)
    def _run_finished(self, event: RunFinished) -> None:
        if self.status != "run failed":
            self.status = "run finished"
        self.refresh_header()
        if self._linger:
            self.set_timer(FINISHED_LINGER_S, lambda: self.app.exit(event.summary))
        else:
            self.app.exit(event.summary)
