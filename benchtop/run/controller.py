"""One benchmark run on one engine: its live knobs, the timeline of changes,
the intervals and the results folder.  RunController implements the
controller protocol (benchtop.record.controller); the headless loop and the TUI
drive it through that protocol and never touch the engine."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Protocol

from benchtop.engine import ConnSettings, Engine, EngineSettings, GroupSettings
from benchtop.engine.histogram import Histogram
from benchtop.engine.sample import ENDED, EngineSample
from benchtop.options.run_options import RunOptions, parse_ignore_errors
from benchtop.record.controller import Notice, Sample, interval_record
from benchtop.record.folder import CONFIG, HISTOGRAM, INTERVALS, LATENCY_HLOG, SETTINGS, SUMMARY, TIMELINE, ResultsWriter
from benchtop.record.formats import summary_text
from benchtop.record.knee import KneeView
from benchtop.record.samples import GroupStats, IntervalStats, RunSummary, TimelineEvent
from benchtop.record.workers import Workers
from benchtop.run import hdrlog
from benchtop.run.attach import InstrumentationCycler
from benchtop.run.costs import CostMeter, HostReading, type_service_s
from benchtop.run.guards import Guard
from benchtop.run.verdicts import VerdictMeter
from benchtop.sources.os import others_busy_cores
from benchtop.verdict import Verdict
from benchtop.target.locality import server_on_this_host
from benchtop.workload import Program
from benchtop.workload.groups import resolve_groups

# Intervals keep their histograms only while a reader may still want them
# (the TUI adds each new interval into its whole-run histogram).
KEEP_HISTOGRAMS = 8
STOP_GRACE_S = 1.0   # workers finish the transaction in hand
ABORT_WAIT_S = 2.0   # after their sockets are shut down
FINAL_SLIVER = 0.05  # of a report interval: a shorter last interval with nothing in it is not written


class LoadEngine(Protocol):
    """What a run drives: the native Engine, or the load hosts of a cluster
    run acting as one (benchtop.cluster.group.HostGroup)."""

    def start(self, cancel: threading.Event | None = None) -> float | None: ...
    def stop(self) -> None: ...
    def join(self, timeout: float | None = None, cancel: threading.Event | None = None) -> bool: ...
    def abort_io(self) -> int: ...
    def close(self) -> None: ...
    def set_threads(self, n: int) -> None: ...
    def set_rate(self, rate: float) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    def set_group_threads(self, index: int, n: int) -> None: ...
    def set_group_rate(self, index: int, rate: float) -> None: ...
    def snapshot(self) -> EngineSample: ...
    @property
    def state(self) -> str: ...
    def type_histogram(self, index: int) -> Histogram: ...


def engine_settings(cfg: RunOptions, program: Program, idle: bool | None = None) -> EngineSettings:
    """The native engine's settings for a run's options (and the workload's
    thread groups)."""
    ignore_all, codes = parse_ignore_errors(cfg.ignore_errors)
    if not cfg.ignore_errors and cfg.engine in ("mysql", "postgresql"):
        # sysbench's default --mysql-ignore-errors is 1213,1020,1205: those
        # are already retried as deadlocks/lock waits; 1020 is "record changed".
        codes = (1020,)
    return EngineSettings(
        threads=cfg.threads,
        rate=cfg.rate,
        arrival=cfg.arrival,
        max_events=cfg.events,
        rand=cfg.rand,
        reconnect_every=cfg.reconnect,
        ignore_all_errors=ignore_all,
        ignore_codes=codes,
        groups=tuple(GroupSettings(g.name, g.threads, g.rate, cfg.arrival if g.rate > 0 and g.arrival == "uniform"
                                   else g.arrival, g.weights)
                     for g in resolve_groups(program, cfg.preset, cfg.groups)),
        idle_workers=idle_workers(cfg) if idle is None else idle,
        loop_threads=cfg.loop_threads,
    )


BUSY_CORES = 0.5  # other processes' CPU at the start from which idle workers would wait behind them


def worker_priority(cfg: RunOptions, others_busy: Callable[[], float | None] = others_busy_cores) -> tuple[bool, str]:
    """--worker-priority: whether the workers run idle, and why `auto` did
    not when it would have.  `auto` yields the CPU to a server that shares
    this host (benchtop.target.locality), unless other processes keep the
    host busy: idle workers run only when nothing else wants a CPU, so
    beside a CPU hog (or a server already serving others) they would wait
    behind it and their latencies would be the neighbours'.  SQLite's
    workers are the server, and a cluster's load hosts are other machines."""
    if cfg.worker_priority != "auto":
        return cfg.worker_priority == "idle", ""
    if not (cfg.engine in ("mysql", "postgresql") and not cfg.cluster and server_on_this_host(cfg.target)):
        return False, ""
    busy = others_busy()
    if busy is not None and busy >= BUSY_CORES:
        return False, (f"workers at normal priority: other processes kept {busy:.2f} cores busy at the start, "
                       "and idle workers would wait behind them")
    return True, ""


def idle_workers(cfg: RunOptions, others_busy: Callable[[], float | None] = others_busy_cores) -> bool:
    return worker_priority(cfg, others_busy)[0]


class RunController:
    """One run: starts and stops the load, reads it every interval (the
    warm-up, stop-if guards, outages, per-type latencies and costs), writes
    the results folder and turns the knobs.  A run of another shape (the
    cluster's) extends it through the methods under "extension points"
    rather than by writing its state."""

    def __init__(
        self,
        options: RunOptions,
        program: Program,
        conn: ConnSettings,
        writer: ResultsWriter | None = None,
        instrumentation: InstrumentationCycler | None = None,
        guard: Guard | None = None,
        meter: CostMeter | None = None,
        engine: LoadEngine | None = None,
    ) -> None:
        """`engine`: what runs the load (default: a native Engine made here
        from the options)."""
        cfg = self.options = options
        self.program = program
        self.writer = writer
        self.instrumentation = instrumentation
        self.workload = program.name
        self.target = cfg.target.describe()
        self.label = f"{self.target} {self.workload}"
        self.duration_s = cfg.time_s
        self.report_interval = cfg.report_interval or 1.0
        self.history: list[IntervalStats] = []
        self.timeline: list[TimelineEvent] = []
        self._lock = threading.RLock()
        self._summary: RunSummary | None = None
        self._final: Sample | None = None  # the last interval, read by stop()
        self._prev: EngineSample | None = None
        self._base: EngineSample | None = None
        self._last: EngineSample | None = None
        self.percentiles = (cfg.percentile,) if cfg.percentile > 0 else ()
        self.on_event: Callable[[TimelineEvent], None] | None = None
        groups = resolve_groups(program, cfg.preset, cfg.groups)
        # live knobs per group: name -> [threads, rate]
        self._groups: dict[str, list[float]] = {g.name: [g.threads, g.rate] for g in groups}
        idle, self._priority_note = worker_priority(cfg) if engine is None else (False, "")
        self.engine: LoadEngine = engine or Engine(conn, engine_settings(cfg, program, idle), program)
        self._fields: dict[str, Any] = {}  # added to the newest interval's JSON object
        self._verdict: Verdict | None = None  # what limited the newest interval
        self._t0: float | None = None
        self._ramp_s = 0.0  # the start's connections, before _t0
        self._hurry = threading.Event()
        self.started_at: float | None = None  # wall time of t = 0 (after the warm-up)
        self._in_outage = False
        self.guard = guard  # --stop-if conditions, checked on every sample
        self.stop_reason = ""  # set when a guard trips; the run then counts as finished
        self._type_base: list[Histogram] = []
        self._type_prev: list[Histogram] = []  # per-type histograms at the previous reading
        self._hlog_started = False
        self._threads = cfg.threads
        self._loop_threads = cfg.loop_threads
        self._rate = cfg.rate
        self._paused = False
        self.meter = meter  # per-operation costs, sizes and totals (None: not measured)
        self._reading: HostReading | None = None
        self.verdicts: VerdictMeter | None = None  # what limits each interval (set by the session)

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> None:
        # read before the workers start: all zeros at t = 0, so even a run
        # shorter than one snapshot (a few --events) is counted whole
        first = self.engine.snapshot()
        if self.meter is not None:
            self._reading = self.meter.begin() if self.options.warmup_s <= 0 else self.meter.read()
            if self.writer:
                self._save_settings()
        if self.verdicts is not None:
            self.verdicts.prepare()
        asked = time.monotonic()
        started = self.engine.start(cancel=self._hurry)
        # the clock is the engine's, started once every connection of the start has tried
        self._t0 = started if started is not None else time.monotonic()
        self._ramp_s = max(0.0, self._t0 - asked)
        if self._priority_note:
            self._event("note", self._priority_note)
        self.started_at = time.time() + self.options.warmup_s
        self._prev = first
        self._base = first if self.options.warmup_s <= 0 else None
        self._type_base = self._type_hists() if self._base is not None else []
        self._type_prev = self._type_hists()
        self._last = first
        if self._base is not None:
            self.warmup_over()
        if self.writer:
            self.writer.write_json(CONFIG, self.options.to_dict())

    @property
    def t_offset(self) -> float:
        """Seconds of warm-up that report lines subtract (as sysbench does)."""
        return self.options.warmup_s if self.options.warmup_s > 0 else 0.0

    def sample(self) -> Sample:
        iv = self._read()
        counted = bool(self.history) and self.history[-1] is iv
        finished = self.finished
        return Sample(iv, counted, t=iv.t - self.t_offset, finished=finished,
                      reason=self._end_reason() if finished else "", fields=self._fields, verdict=self._verdict)

    def _end_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        failed = self.failed_error
        if failed:
            return f"error: {failed}"
        if self.remaining == 0.0:
            return "time"
        return "events" if self.options.events else "time"

    def notices(self) -> list[Notice]:
        return []

    def ends_at(self) -> float | None:
        if self._t0 is None or self.duration_s <= 0:
            return None
        return self._t0 + self.duration_s + self.options.warmup_s

    def deadline(self) -> float | None:
        """The warm-up's end, until a reading there starts the count: the
        measured window then starts exactly there (and the report ticks
        restart from it), not at the next tick after it, which would cut
        up to a report interval off --time."""
        if self._t0 is None or self._base is not None:
            return None
        return self._t0 + self.options.warmup_s

    def load_ended(self) -> bool:
        return self._t0 is not None and self.engine.state in ENDED

    def _read(self, final: EngineSample | None = None, held: HostReading | None = None) -> IntervalStats:
        """The interval since the previous reading, up to a new snapshot, or
        up to `final`, the stopped engine's (stop(): the run's last interval,
        with `held`, the host reading taken as the stop began)."""
        with self._lock:
            cur = final or self.engine.snapshot()
            assert self._prev is not None, "start() first"
            iv = IntervalStats.between(self._prev, cur, self.percentiles)
            type_busy = type_service_s(self._prev, cur, len(self.program.txn_types))
            if final is not None:
                # the stopped engine runs none: the workers of the reading before (or, when
                # that was the one before the start, those asked for)
                # and, connected, as many as held a connection at that reading (the stopped engine's
                # have hung up; none known when the load had already ended by itself)
                running = self._prev.t > 0 and self._prev.state not in ENDED
                iv = replace(iv, threads=self._prev.threads_running if self._prev.t > 0 else cur.threads_target,
                             connected=self._prev.connected if running else -1)
            self._prev = cur
            self._last = cur
            if self._type_prev:
                iv = replace(iv, txn_latency_ms=self._interval_types())
            if self.meter is not None and self._reading is not None:
                reading = held or self.meter.read(memory=False)
                iv = replace(iv, costs=self.meter.interval(self._reading, reading, iv.transactions, iv.threads))
                self._reading = reading
            # the load's clock or ours: the reading asked for at the warm-up's end
            # (deadline(), our clock) starts the count even where the load's lags
            if self._base is None and max(cur.t, self.elapsed) >= self.options.warmup_s:
                self._base = cur
                self._type_base = self._type_hists()
                self._event("note", "warm-up over")
                self.warmup_over()
                if self.meter is not None:
                    self._reading = self.meter.begin()
                    if self.writer:
                        self._save_settings()
            self._track_outage(iv)
            if self.guard is not None and self._base is not None and not self.stop_reason and final is None:
                why = self.guard.check(iv)
                if why:
                    self.stop_reason = f"stop-if: {why}"
                    self._event("note", self.stop_reason)
            counted = self._base is not None and self._base is not cur
            self._fields = self.record_interval(iv, counted)
            self._verdict = self.verdicts.judge(iv) if self.verdicts is not None else None
            if self.verdicts is not None and self._verdict is not None and counted:
                self.verdicts.count(self._verdict)
            if counted:
                if self.meter is not None and iv.costs is not None:
                    self.meter.count(iv.costs.work, iv.txn_by_type, type_busy, self.program.writing_types)
                self.history.append(iv)
                old = len(self.history) - 1 - KEEP_HISTOGRAMS
                if old >= 0:
                    self.history[old] = self.history[old].without_histograms()
                if self.writer:
                    self.writer.append(INTERVALS,
                                       interval_record(iv, iv.t - self.t_offset, self._fields, self._verdict))
                    self._hlog(iv)
            return iv

    # -- extension points (a cluster run: benchtop.cluster.controller) ------------
    def warmup_over(self) -> None:
        """Called once the counted part begins: at start without a warm-up,
        else at the reading taken at its end (the base of the summary's counts)."""

    def record_interval(self, iv: IntervalStats, counted: bool) -> dict[str, Any]:
        """Records what a new interval brings besides the totals, under the
        run's lock (a cluster run: its hosts' intervals, to the results
        folder and as notices; a lost host's share off the knobs); returns
        what the interval's JSON object adds."""
        return {}

    def finish_summary(self, summary: RunSummary) -> RunSummary:
        """The run's summary as saved and returned by stop() (a cluster run adds its hosts)."""
        return summary

    def knobs_moved(self, threads: int, rate: float) -> None:
        """The load's threads and rate changed without a knob being turned
        here (a cluster's lost host took its share with it)."""
        with self._lock:
            self._threads, self._rate = threads, rate

    def _save_settings(self) -> None:
        """settings.json: the server's settings that differ from its defaults
        and the host's, as they were when the measured run began."""
        assert self.meter is not None and self.writer is not None
        self.writer.write_json(SETTINGS, {
            "engine": self.options.engine,
            "server": self.meter.server_settings,
            "host": self.meter.host_settings,
        })

    def _hlog(self, iv: IntervalStats) -> None:
        lines = []
        if not self._hlog_started:
            self._hlog_started = True
            lines += hdrlog.header_lines(self.started_at or time.time())
        start = iv.t - iv.dt - self.t_offset
        lines.append(hdrlog.interval_line(max(0.0, start), iv.dt, iv.latency))
        lines += [hdrlog.interval_line(max(0.0, start), iv.dt, g.latency, tag=g.name) for g in iv.groups]
        assert self.writer is not None
        self.writer.append_lines(LATENCY_HLOG, lines)

    def _type_hists(self) -> list[Histogram]:
        n = len(self.program.txn_types)
        return [self.engine.type_histogram(i) for i in range(n)] if n > 1 else []

    def _interval_types(self) -> dict[str, dict[str, float]]:
        """p50/p95/p99 per transaction type over the interval since the last
        reading (LinkBench's per-operation latency every interval)."""
        now = self._type_hists()
        out = {}
        for name, cur, prev in zip(self.program.txn_names, now, self._type_prev):
            h = cur - prev
            if h.total:
                p = h.percentiles_ms([50.0, 95.0, 99.0])
                out[name] = {"p50": round(p[50.0], 3), "p95": round(p[95.0], 3), "p99": round(p[99.0], 3)}
        self._type_prev = now
        return out

    def _type_latencies(self) -> dict[str, dict[str, float]]:
        """Percentiles per transaction type since the warm-up (LinkBench's
        per-operation p99, TPC-C's per-transaction response times)."""
        if not self._type_base:
            return {}
        out = {}
        for i, (name, now) in enumerate(zip(self.program.txn_names, self._type_hists())):
            h = now - self._type_base[i]
            if not h.total:
                continue
            p = h.percentiles_ms([50.0, 95.0, 99.0])
            out[name] = {"count": h.total, "p50": round(p[50.0], 3), "p95": round(p[95.0], 3),
                         "p99": round(p[99.0], 3), "max": round(h.max_ns() / 1e6, 3)}
        return out

    def _with_interval_rates(self, groups: tuple[GroupStats, ...]) -> tuple[GroupStats, ...]:
        """Each group's tps over the counted intervals (average, 5th and 95th
        percentile), as the insert benchmark reports inserts/s and queries/s."""
        out = []
        for g in groups:
            rates = sorted(x.tps for iv in self.history for x in iv.groups if x.name == g.name)
            if rates:
                def pct(p: float) -> float:
                    return rates[min(len(rates) - 1, int(p / 100 * len(rates)))]
                g = replace(g, tps_intervals={"avg": sum(rates) / len(rates), "p5": pct(5), "p95": pct(95)})
            out.append(g)
        return tuple(out)

    def _track_outage(self, iv: IntervalStats) -> None:
        """Lost connections mark an outage on the timeline; the first interval
        that commits again without losing any marks the recovery."""
        lost = iv.errors.get("lost_connection", 0)
        if not self._in_outage and lost:
            self._in_outage = True
            self._event("outage", f"{lost} connection(s) lost")
        elif self._in_outage and iv.transactions > 0 and not lost:
            self._in_outage = False
            self._event("outage", "connections restored")

    def _event(self, kind: str, text: str) -> TimelineEvent:
        t = self.elapsed
        ev = TimelineEvent(t=t, kind=kind, text=text)
        with self._lock:
            self.timeline.append(ev)
        if self.writer:
            self.writer.append(TIMELINE, ev.to_dict())
        if self.on_event:
            self.on_event(ev)
        return ev

    # -- knobs ------------------------------------------------------------------
    def _no_groups(self, what: str) -> None:
        if self._groups:
            raise ValueError(f"this run has thread groups ({', '.join(self._groups)}): set each group's {what}")

    def set_threads(self, n: int) -> None:
        self._no_groups("threads")
        n = max(0, int(n))
        if n == self._threads:  # no change: no timeline event (it would split a steady segment)
            return
        self.engine.set_threads(n)
        self._threads = n
        self._event("threads", f"threads {n}")

    def set_rate(self, rate: float) -> None:
        self._no_groups("rate")
        rate = max(0.0, float(rate))
        if rate == self._rate:  # the same rate typed again: no duplicate event
            return
        self.engine.set_rate(rate)
        self._rate = rate
        self._event("rate", f"rate {rate:g}/s" if rate > 0 else "rate unlimited")

    @property
    def groups(self) -> list[tuple[str, int, float]]:
        """(name, threads, rate) of each thread group; empty without groups."""
        return [(name, int(v[0]), v[1]) for name, v in self._groups.items()]

    def set_group_threads(self, name: str, n: int) -> None:
        n = max(0, int(n))
        self.engine.set_group_threads(self._group_index(name), n)
        self._groups[name][0] = n
        self._event("threads", f"{name} threads {n}")

    def set_group_rate(self, name: str, rate: float) -> None:
        rate = max(0.0, float(rate))
        self.engine.set_group_rate(self._group_index(name), rate)
        self._groups[name][1] = rate
        self._event("rate", f"{name} rate {rate:g}/s" if rate > 0 else f"{name} rate unlimited")

    def _group_index(self, name: str) -> int:
        names = list(self._groups)
        if name not in names:
            raise ValueError(f"no thread group {name!r} (groups: {', '.join(names) or 'none'})")
        return names.index(name)

    def set_paused(self, paused: bool) -> None:
        if paused == self._paused:
            return
        self.engine.set_paused(paused)
        self._paused = paused
        self._event("pause" if paused else "resume", "paused" if paused else "resumed")

    def mark(self, text: str) -> None:
        self._event("mark", text)

    def note(self, kind: str, text: str) -> None:
        self._event(kind, text)

    def cycle_instrumentation(self) -> str | None:
        if self.instrumentation is None:
            return None
        name = self.instrumentation.cycle()
        self._event("instrumentation", f"instrumentation {name}")
        return name

    # -- state ------------------------------------------------------------------
    @property
    def workers(self) -> Workers:
        return Workers(self.threads, self._loop_threads)

    @property
    def threads(self) -> int:
        if self._groups:
            return sum(int(v[0]) for v in self._groups.values())
        return self._threads

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._t0 if self._t0 is not None else 0.0

    @property
    def remaining(self) -> float | None:
        if self.duration_s <= 0:
            return None
        return max(0.0, self.duration_s + self.options.warmup_s - self.elapsed)

    @property
    def finished(self) -> bool:
        last = self._last
        if last is None:
            return False
        if self.stop_reason or last.state in ENDED:
            return True
        return self.duration_s > 0 and self.elapsed >= self.duration_s + self.options.warmup_s

    @property
    def last_reading(self) -> EngineSample:
        """The snapshot the newest interval ends with (after stop(): the
        stopped engine's, the summary's)."""
        assert self._last is not None, "start() first"
        return self._last

    @property
    def failed_error(self) -> str | None:
        last = self._last
        return last.error if last is not None and last.state == "failed" else None

    @property
    def knee(self) -> KneeView | None:
        return None  # a run is no search

    @property
    def errors_total(self) -> int:
        return self._last.error_count if self._last else 0

    @property
    def reconnects_total(self) -> int:
        return self._last.reconnects if self._last else 0

    @property
    def last_summary(self) -> RunSummary | None:
        """The summary stop() made (None while the run goes on)."""
        return self._summary

    def current_summary(self, stopped_by: str = "") -> RunSummary:
        with self._lock:
            last = self.engine.snapshot()
            base = self._base or last
            return RunSummary.between(base, last, self.percentiles, self.program.txn_names, stopped_by)

    def stop(self, reason: str = "") -> RunSummary:
        with self._lock:
            if self._summary is not None:
                return self._summary
            if self.stop_reason:
                reason = self.stop_reason
            # the last interval's host reading is taken while the load still runs: once stopped, the workers'
            # threads and the server's backends are gone with their run-queue waits, and 256 backends ending
            # at once are a burst of CPU their parent reaps
            held = (self.meter.read(memory=False)
                    if self.meter is not None and self._reading is not None and self._base is not None else None)
            self.engine.stop()
            # the measured time ends here (the engine's clock stops at the
            # request); transactions in hand may finish and are counted
            joined = self.engine.join(timeout=STOP_GRACE_S, cancel=self._hurry)
            # the server let every worker finish and nobody is hurrying: it can be asked for the run's end figures
            answering = joined and not self._hurry.is_set()
            if not joined:
                self.engine.abort_io()  # blocked reads return; their transactions are unfinished
                joined = self.engine.join(timeout=ABORT_WAIT_S, cancel=self._hurry)
            after = self.engine.snapshot()
            self._last = after
            if after.state == "failed":
                reason = f"error: {after.error}"
            elif not joined:
                reason = (reason + "; " if reason else "") + "workers still blocked on the server were abandoned"
            if self._base is not None and self._prev is not None and self._ends_an_interval(self._prev, after):
                # the last interval ends with the summary's snapshot, however
                # short: the intervals then add up to the summary exactly
                iv = self._read(after, held)
                self._final = Sample(iv, True, t=iv.t - self.t_offset, finished=True, reason=reason,
                                     fields=self._fields, verdict=self._verdict)
            base = self._base or after
            summary = RunSummary.between(base, after, self.percentiles, self.program.txn_names, reason)
            costs = (self.meter.finish(summary.transactions, summary.threads, summary.time_s, self.program.txn_names,
                                       server_ok=answering and not reason.startswith("error"))
                     if self.meter is not None else None)
            self._summary = replace(summary, txn_latency_ms=self._type_latencies(), costs=costs,
                                    initial_connection_ms=self._ramp_s * 1000,
                                    groups=self._with_interval_rates(summary.groups),
                                    connected_max=max((iv.connected for iv in self.history), default=-1),
                                    connected_min=min((iv.connected for iv in self.history if iv.connected >= 0),
                                                      default=-1))
            self._summary = self.finish_summary(self._summary)
            if self.writer:
                self.save_summary(self._summary)
            if self.instrumentation is not None:
                self.instrumentation.restore()
            return self._summary

    def _ends_an_interval(self, prev: EngineSample, after: EngineSample) -> bool:
        """Whether the stopped engine's snapshot adds an interval: anything
        counted since the last reading, or a stretch of time worth a line
        (a sliver with nothing in it would only be noise)."""
        if (after.transactions, after.queries, after.error_count, after.reconnects, after.unfinished) != \
                (prev.transactions, prev.queries, prev.error_count, prev.reconnects, prev.unfinished):
            return True
        return after.t - prev.t >= FINAL_SLIVER * self.report_interval

    def final_sample(self) -> Sample | None:
        return self._final

    def hurry(self) -> None:
        self._hurry.set()

    def save_summary(self, summary: RunSummary, steps: list[dict[str, Any]] | None = None) -> None:
        if not self.writer:
            return
        d = summary.to_dict()
        d["workload"] = self.workload
        d["target"] = self.target
        d["started_at"] = self.started_at
        d["steps"] = steps if steps is not None else [self._step_dict(summary)]
        self.writer.write_json(SUMMARY, d)
        self.writer.write_json(
            HISTOGRAM,
            {"unit": "ns", "layout": "benchtop-loglinear-128", "latency": summary.latency.to_sparse(),
             "service": summary.service.to_sparse()},
        )

    def _step_dict(self, s: RunSummary) -> dict[str, Any]:
        return {
            **s.workers.to_dict(),
            "rate": s.rate,
            "tps": round(s.tps, 2),
            "qps": round(s.qps, 2),
            "latency_ms": {k: round(v, 3) for k, v in s.latency_ms.items()},
            "errors": s.error_count,
            "time_s": round(s.time_s, 3),
            **({"groups": {g.name: g.to_dict() for g in s.groups}} if s.groups else {}),
        }

    def save(self, prefix: Path) -> list[Path]:
        """Results so far into `prefix`-named files (the TUI's `s` key)."""
        import json

        prefix.parent.mkdir(parents=True, exist_ok=True)
        summary = self.current_summary("saved while running")
        p1 = prefix.with_suffix(f".{SUMMARY}")
        p1.write_text(json.dumps(summary.to_dict(), indent=2))
        p2 = prefix.with_suffix(f".{INTERVALS}")
        p2.write_text("".join(json.dumps(iv.to_dict()) + "\n" for iv in list(self.history)))
        return [p1, p2]

    def summary_text(self, histogram: bool | None = None) -> str:
        s = self._summary or self.current_summary()
        return summary_text(s, self.options.percentile, self.options.histogram if histogram is None else histogram)

    def close(self) -> None:
        self.engine.close()
        if self.meter is not None:
            self.meter.close()
        if self.verdicts is not None:
            self.verdicts.close()
        if self.writer:
            self.writer.close()
