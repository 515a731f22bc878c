"""A run on many load hosts (`--cluster ADDRESS --load-hosts N`):
`ClusterController` is a RunController over a HostGroup, so everything a
run has (warm-up, stop-if, instrumentation, results folder) works
unchanged, through the run controller's extension points.  It adds
per-host rows to each sample, per-host intervals and tagged latency logs
to the results folder, a `hosts` list to the summary, and survives a lost
host: its last reading stays in the totals, the loss goes on the timeline,
the others go on."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from benchtop.cluster.group import HostGroup, HostState
from benchtop.cluster.merge import Stacked
from benchtop.engine import ConnSettings
from benchtop.errors import UsageError
from benchtop.options.run_options import RunOptions
from benchtop.record.controller import Notice, Sample
from benchtop.record.folder import HOSTS, HOSTS_HLOG, ResultsWriter
from benchtop.record.formats import lat_ms
from benchtop.record.samples import HostInterval, HostSummary, IntervalStats, RunSummary, pct_key
from benchtop.run import hdrlog
from benchtop.run.attach import InstrumentationCycler
from benchtop.run.controller import RunController, engine_settings
from benchtop.run.guards import Guard
from benchtop.workload import Program


class ClusterController(RunController):
    """A run on a HostGroup: the controller protocol, plus per-host rows,
    results and summary."""

    def __init__(self, options: RunOptions, program: Program, conn: ConnSettings,
                 writer: ResultsWriter | None = None, instrumentation: InstrumentationCycler | None = None,
                 guard: Guard | None = None) -> None:
        assert options.cluster is not None
        settings = engine_settings(options, program)
        if settings.groups:
            raise UsageError(f"thread groups ({', '.join(g.name for g in settings.groups)}) do not run on --cluster "
                             "yet: run the workload without --preset/--group, or on one machine")
        group = HostGroup(options.cluster, options.load_hosts, conn, settings, program,
                          options.report_interval or 1.0,
                          ray_log=os.path.join(options.out, "ray.log") if options.out else os.devnull)
        self.group = group
        super().__init__(options, program, conn, writer, instrumentation, guard, engine=group)
        n = len(group.hosts)
        self.label = f"{self.target} {self.workload} on {n} load host{'s' if n != 1 else ''}"
        self._rows: tuple[HostInterval, ...] = ()
        self._pending_notices: list[Notice] = []
        self._host_hlog_started = False
        for h in group.hosts:
            self.note("host", f"load host {h.name} on {h.node} ({h.extra.get('hostname', '?')}): "
                              f"{h.threads} thread(s)" + (f", rate {h.rate:g}/s" if h.rate > 0 else ""))

    # -- readings --------------------------------------------------------------
    def start(self) -> None:
        super().start()
        self.group.host_intervals()  # the first reading is every host's starting point

    def warmup_over(self) -> None:
        for h in self.group.hosts:
            h.base = self.group.full_sample(h)

    def sample(self) -> Sample:
        s = super().sample()
        return replace(s, hosts=self._rows)

    def record_interval(self, iv: IntervalStats, counted: bool) -> dict[str, Any]:
        """Under the run's lock: a lost host's share comes off the knobs,
        each host's interval is read, and a counted one is written to the
        results folder and queued as a line; returns the hosts' part of the
        interval's JSON object."""
        self._take_host_losses()
        rows, delta = self.group.host_intervals(self.percentiles)
        if counted:
            self._write_host_intervals(iv, rows, delta)
        self._rows = tuple(rows)
        if counted and self.report_interval > 0 and not self.options.json:
            for row in rows:
                self._pending_notices.append(Notice(host_line(row, self.options.percentile), row.to_dict()))
        return self._host_fields(rows)

    def _take_host_losses(self) -> None:
        """The hosts lost since the last reading: the knobs' totals become
        the live hosts', and each loss goes on the timeline and to the log."""
        group = self.group
        if group.events:
            self.knobs_moved(sum(h.threads for h in group.live()), sum(h.rate for h in group.live()))
        for text in group.events:
            self.note("host", text)
            self._pending_notices.append(Notice(f"benchtop: {text}",
                                                {"type": "event", "kind": "host", "text": text}))
        group.events.clear()

    def _write_host_intervals(self, iv: IntervalStats, rows: list[HostInterval], delta: Stacked) -> None:
        """hosts.jsonl's rows and latency-hosts.hlog's tagged lines for a counted interval."""
        if self.writer is None:
            return
        start = max(0.0, iv.t - iv.dt - self.t_offset)
        hlog: list[str] = []
        for k, row in enumerate(rows):
            self.writer.append(HOSTS, {"type": "host_interval", "t": round(iv.t - self.t_offset, 3),
                                               **row.to_dict()})
            if row.transactions:
                hlog.append(f"Tag={row.host},{hdrlog.interval_line(start, iv.dt, delta.histogram(k))}")
        if hlog:
            if not self._host_hlog_started:
                self._host_hlog_started = True
                hlog = hdrlog.header_lines(self.started_at or time.time()) + hlog
            self.writer.append_lines(HOSTS_HLOG, hlog)

    def _host_fields(self, rows: list[HostInterval]) -> dict[str, Any]:
        reporting = sum(1 for h in self.group.hosts if h.live and h.reported)
        return {"hosts_reporting": reporting,
                "hosts": [{"host": r.host, "state": r.state, "threads": r.threads, "tps": round(r.tps, 2),
                           "p99_ms": round(r.latency_ms["p99"], 3), "errors_per_s": round(r.errors_per_s, 2),
                           "cpu_pct": round(r.cpu_pct, 1)} for r in rows]}

    def notices(self) -> list[Notice]:
        out, self._pending_notices = self._pending_notices, []
        return out

    # -- per-host knobs --------------------------------------------------------
    def set_host_threads(self, host: str, n: int) -> None:
        h = self._host(host)
        self.group.set_host_threads([h], [max(0, int(n))])
        total = sum(x.threads for x in self.group.live())
        self.knobs_moved(total, self.rate)
        self.note("threads", f"threads {n} on {h.name} ({total} in all)")

    def _host(self, name: str) -> HostState:
        for h in self.group.live():
            if h.name == name:
                return h
        raise UsageError(f"no live load host {name!r}: {', '.join(h.name for h in self.group.live())}")

    # -- the end ---------------------------------------------------------------
    def finish_summary(self, summary: RunSummary) -> RunSummary:
        return replace(summary, hosts=tuple(self._host_summary(h) for h in self.group.hosts))

    def _host_summary(self, h: HostState) -> HostSummary:
        # the reading the merged summary counts (RunController reads it before the workers are joined)
        last = self.group.final.get(h.index) or self.group.full_sample(h)
        if last is None:
            return HostSummary(h.name, h.node, h.threads, 0, 0.0, {}, 0, h.lost_at, h.lost_reason)
        s = RunSummary.between(h.base or last, last, self.percentiles)
        lat = {k: v for k, v in s.latency_ms.items() if k in ("p50", "p95", "p99", "max", "avg")}
        return HostSummary(h.name, h.node, h.threads, s.transactions, s.tps, lat, s.error_count,
                           h.lost_at, h.lost_reason)


def host_line(row: HostInterval, percentile: float = 99.0) -> str:
    """A per-host line under a sysbench-style interval line: the merged
    line's percentile, printed as it prints it; a host given no threads
    says it is idle rather than showing a latency of 0.

    >>> row = HostInterval("h1", "10.0.0.1", "ok", 4, 900, 900.0, 0.0, {"p95": 0.0432, "p99": 1.5}, 4, 37.0)
    >>> host_line(row, 95)
    '    h1 10.0.0.1: thds: 4 tps: 900.00 lat (ms,95%): 0.0432 err/s: 0.00 cpu: 37%'
    >>> host_line(HostInterval("h2", "10.0.0.2", "ok", 0, 0, 0.0, 0.0, {"p95": 0.0}, 0, 1.0), 95)
    '    h2 10.0.0.2: thds: 0 idle (no threads given to this host) cpu: 1%'
    """
    state = "" if row.state == "ok" else f" [{row.state}]"
    if row.threads == 0 and row.transactions == 0 and row.state == "ok":
        return f"    {row.host} {row.node}: thds: 0 idle (no threads given to this host) cpu: {row.cpu_pct:.0f}%"
    key = pct_key(percentile) if pct_key(percentile) in row.latency_ms else "p99"
    label = f"{percentile:g}" if key == pct_key(percentile) else "99"
    return (f"    {row.host} {row.node}: thds: {row.threads} tps: {row.tps:4.2f} "
            f"lat (ms,{label}%): {lat_ms(row.latency_ms.get(key, 0.0)):>4} err/s: {row.errors_per_s:4.2f} "
            f"cpu: {row.cpu_pct:.0f}%{state}")

