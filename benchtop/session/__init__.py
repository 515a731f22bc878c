"""One run session: everything a run attaches, opened in order and closed in
reverse whatever happens in between.  Every entry point (the run command
headless or in the TUI, scenarios, the pytest plugin) assembles its run
here:

    with RunSession(options) as session:
        ctl = session.controller()
        summary = run_headless(ctl, LinePrinter(...))

It holds the temporary embedded database (SQLite without --db), the results
folder, the compiled workloads checked ready on the target, the monitor
sources and their recorder, the instrumentation control, the --stop-if
guard, and the controllers it made.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Sequence, TextIO

from benchtop.errors import Interrupted, UsageError
from benchtop.target.connection import reached
from benchtop.target.leftovers import leftover_warning
from benchtop.options.run_options import RunOptions
from benchtop.record.folder import ResultsWriter, expected_bytes
from benchtop.run.attach import (
    InstrumentationCycler,
    MonitorRecorder,
    build_pollers,
    make_instrumentation,
)
from benchtop.run.controller import RunController
from benchtop.run.costs import CostMeter
from benchtop.run.guards import Guard
from benchtop.run.verdicts import VerdictMeter
from benchtop.sources.poller import Poller
from benchtop.sources.proc_table import LatestPass
from benchtop.target.instrumentation import InstrumentationError
from benchtop.workload import Program, load_program
from benchtop.workload.fileio import check_files, fileio_program
from benchtop.workload.pgbench_script import parse_defines, parse_script_arg, pgbench_program
from benchtop.workload.prepare import PrepareError, check_free_space, check_ready, prepare

PREPARE_THREADS = 2  # the embedded default's database is small: two loaders are plenty


class RunSession:
    """`monitor`: poll the target and the options' extra sources.
    `instrumentation`: make the control behind `--instrumentation` and key
    `i` (None: whenever the target has presets).  `stop_if`: the conditions
    to check against the sources (default: the options').  `prepare_missing`:
    create and load the tables when they are not there.  `progress`: where
    prepare reports (None: nowhere)."""

    def __init__(self, options: RunOptions, *, monitor: bool = True, instrumentation: bool | None = None,
                 stop_if: Sequence[str] | None = None, prepare_missing: bool = False,
                 progress: TextIO | None = sys.stderr) -> None:
        self.options = options
        self._monitor = monitor
        self._want_instrumentation = instrumentation
        self._stop_if = list(options.stop_if if stop_if is None else stop_if)
        self._prepare_missing = prepare_missing
        self._progress = progress
        self._stack = ExitStack()
        self._programs: dict[tuple[str, str, str], Program] = {}
        self._counted: frozenset[tuple[str, str, str]] = frozenset()
        # each interval's pass over /proc, made by the run's cost meter and read by a headless run's host monitor too
        self._passes = LatestPass()
        self.writer: ResultsWriter | None = None
        self.recorder = MonitorRecorder([])
        self.instrumentation: InstrumentationCycler | None = None
        self.guard: Guard | None = None

    # -- opening and closing ----------------------------------------------------
    def __enter__(self) -> RunSession:
        try:
            self._open()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # the recorder writes through the results folder: it stops before anything closes
        try:
            self.recorder.stop()
        finally:
            self._stack.close()

    def _open(self) -> None:
        opts = self.options
        # refused before the results folder is made: a workload that does not compile, an embedded database
        # larger than the free space where it would be prepared
        program = self.program(opts)
        if opts.engine == "sqlite" and not opts.target.database and program.schema is not None:
            check_free_space(program, Path(tempfile.gettempdir()), list(range(1, program.schema.tables + 1)))
        if opts.out:  # first: an unwritable folder is refused before anything is prepared
            self.writer = ResultsWriter(Path(opts.out))
            self._stack.callback(self.writer.close)
            # a full disk refuses the run before anything is prepared, not its results after
            sources = len(opts.monitor.extra) + 2  # the target's and the host's, at most
            self.writer.check_room(expected_bytes(opts.time_s + opts.warmup_s, opts.report_interval,
                                                  sources if self._monitor else 0, opts.monitor.interval_s))
        if opts.engine == "sqlite" and not opts.target.database:
            # the embedded default: a freshly prepared database that goes away afterwards
            tmpdir = tempfile.mkdtemp(prefix="benchtop-")
            self._stack.callback(shutil.rmtree, tmpdir, ignore_errors=True)
            opts = self.options = replace(opts, target=replace(opts.target, database=str(Path(tmpdir) / "benchtop.db")),
                                          temp_db=True)
            try:
                prepare(self.program(opts), opts.conn_settings(), PREPARE_THREADS,
                        out=self._progress or sys.stderr, quiet=self._progress is None or opts.json)
            except Interrupted as exc:  # what it left goes with the folder
                raise Interrupted(exc.signum) from None
        if opts.target.more_hosts and opts.engine == "postgresql":
            # several servers named: the run measures the first that answers, and says which
            where = reached(opts.target)
            if where is not None:
                opts = self.options = replace(opts, target=opts.target.pinned(*where))
        self.ready(opts)
        # settings a killed run left changed on this server: said at the start, not found out from the figures
        left = leftover_warning(opts.target, opts.monitor.admin_dsn)
        if left is not None:
            print(left, file=sys.stderr, flush=True)
        pollers = (build_pollers(opts.target, opts.monitor.extra, opts.monitor.interval_s, with_target=opts.monitor.target,
                                 per_process=not opts.headless, shared=self._passes)
                   if self._monitor else [])
        self.recorder = MonitorRecorder(pollers, self.writer)
        if self._stop_if:
            try:
                kinds = [p.source.kind for p in pollers] if self._monitor else None
                self.guard = Guard.parse(self._stop_if, sources=kinds)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            self.recorder.listeners.append(self.guard.observe)
        want = self._want_instrumentation
        if want or (want is None and (opts.instrumentation or opts.engine in ("mysql", "postgresql"))):
            self.instrumentation = make_instrumentation(opts.target, opts.monitor.admin_dsn)
            if opts.instrumentation and self.instrumentation is None:
                raise UsageError("--instrumentation needs --engine mysql or postgres")

    # -- workloads -------------------------------------------------------------
    def program(self, opts: RunOptions | None = None) -> Program:
        """The compiled workload of `opts` (default: the session's)."""
        opts = opts or self.options
        if opts.engine == "fileio" and opts.fileio is not None:
            return fileio_program(opts.fileio)
        if opts.pgbench_scripts:
            return pgbench_program([parse_script_arg(a) for a in opts.pgbench_scripts], opts.engine,
                                   parse_defines(opts.defines))
        key = (opts.workload, opts.engine, repr(sorted(opts.workload_options.items())))
        if key not in self._programs:
            self._programs[key] = load_program(opts.workload, opts.engine, opts.workload_options)
        return self._programs[key]

    def ready(self, opts: RunOptions | None = None) -> None:
        """Checks that the workload of `opts` (default: the session's) can
        run: tables there, server reachable, files prepared, before any
        worker starts."""
        opts = opts or self.options
        program, conn = self.program(opts), opts.conn_settings()
        if opts.fileio is not None:
            check_files(opts.fileio)
            return
        # the tables' rows are counted once, not before each of a scenario's
        # steps (the null engine has no tables to count)
        key = (program.name, repr(program.loads), opts.target.describe())
        rows, self._counted = key not in self._counted and opts.engine != "null", self._counted | {key}
        try:
            check_ready(program, conn, opts.target.describe(), rows=rows)
        except PrepareError:
            if not self._prepare_missing:
                raise
            prepare(program, conn, max(1, min(opts.threads, 4)), quiet=True)
            check_ready(program, conn, opts.target.describe(), rows=rows)

    # -- controllers -----------------------------------------------------------
    def controller(self, opts: RunOptions | None = None, results: bool = True) -> RunController:
        """A new controller (not started) for `opts` (default: the session's),
        closed with the session: a ClusterController when the options name
        a cluster.  `results=False`: it writes no results
        folder (a scenario writes one for all its steps).  The options'
        --instrumentation preset is applied before it returns."""
        opts = opts or self.options
        program, conn = self.program(opts), opts.conn_settings()
        ctl: RunController
        if opts.cluster:
            try:  # Ray only for cluster runs
                from benchtop.cluster.controller import ClusterController
            except ImportError as exc:
                raise UsageError(f"--cluster needs the cluster extra: pip install 'benchtop[cluster]' ({exc})") from None

            # no cost meter: the client's CPU is on the load hosts, not in this process
            ctl = ClusterController(opts, program, conn, self.writer if results else None, self.instrumentation,
                                    self.guard if results else None)
        else:
            meter = None
            if opts.engine != "fileio":  # a scenario's steps measure their costs too
                kind = opts.target.kind
                meter = CostMeter(opts.engine, opts.target, latest=lambda: self.recorder.latest.get(kind),
                                  shared=self._passes)
            ctl = RunController(opts, program, conn, self.writer if results else None, self.instrumentation,
                                self.guard if results else None, meter)
            if meter is not None:
                ctl.verdicts = VerdictMeter(opts.target, lambda: dict(self.recorder.latest),
                                            lambda: meter.server_pid if meter else None, opts.monitor.interval_s,
                                            lambda: meter.scan if meter else None)
        self._stack.callback(ctl.close)
        if results and opts.instrumentation and self.instrumentation is not None:
            try:
                self.instrumentation.apply(opts.instrumentation)
            except InstrumentationError as exc:
                raise UsageError(str(exc)) from None
            ctl.note("instrumentation", f"instrumentation {opts.instrumentation}")
        return ctl

    def tapped_pollers(self) -> list[Poller]:
        """The sources for a UI that polls them itself (recorded all the same)."""
        return self.recorder.tapped()
