"""The Python side of the native engine: start/stop, live knobs, snapshots.

Everything here checks its arguments in Python and turns the engine's return
codes into `EngineError`.  Calls into the engine release the GIL (cffi API
mode), so a UI or a headless loop keeps running while the engine works.
"""

from __future__ import annotations

import os
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from benchtop import __version__
from benchtop.engine._sources import digest
from benchtop.engine.histogram import Histogram, nbuckets
from benchtop.engine.sample import ERROR_KINDS, STATES, EngineSample, GroupSample
from benchtop.errors import EngineNotBuilt

_BUILD = "`pip install .` (or `python setup.py build_ext --inplace` in a source tree) compiles native/"

try:
    from benchtop.engine._native import ffi, lib
except ImportError:  # pragma: no cover - only without a build
    raise EngineNotBuilt(f"benchtop's native engine is not built: {_BUILD}") from None

# in a source tree (a clone, an editable install), an engine built before
# native/ last changed is refused in one line rather than failing later
_TREE = Path(__file__).resolve().parents[2]
if (_TREE / "setup.py").is_file() and (_TREE / "native" / "benchtop_api.h").is_file():
    _built = ffi.string(lib.bt_build_digest()).decode() if hasattr(lib, "bt_build_digest") else "?"
    if _built != digest(_TREE / "native"):
        raise EngineNotBuilt(f"benchtop's native engine was built from older sources than native/ holds: {_BUILD}")

if ffi.string(lib.bt_version()).decode() != __version__:
    raise EngineNotBuilt(
        f"native engine {ffi.string(lib.bt_version()).decode()} does not match benchtop {__version__}: {_BUILD}"
    )

DRIVERS = {"null": lib.BT_DRIVER_NULL, "sqlite": lib.BT_DRIVER_SQLITE, "mysql": lib.BT_DRIVER_MYSQL,
           "postgresql": lib.BT_DRIVER_PGSQL, "fileio": lib.BT_DRIVER_FILEIO}
DISTRIBUTIONS = {"uniform": lib.BT_DIST_UNIFORM, "gaussian": lib.BT_DIST_GAUSSIAN,
                 "special": lib.BT_DIST_SPECIAL, "pareto": lib.BT_DIST_PARETO,
                 "zipfian": lib.BT_DIST_ZIPFIAN}
ARRIVALS = {"uniform": lib.BT_ARRIVAL_UNIFORM, "poisson": lib.BT_ARRIVAL_POISSON}
MAX_THREADS = lib.BT_MAX_THREADS
MAX_CONNECTIONS = lib.BT_MAX_CONNECTIONS
MAX_GROUPS = lib.BT_MAX_GROUPS
_ABANDONED: list[Any] = []  # cffi memory of engines whose blocked workers outlive close()


def _state_name(code: int) -> str:
    """A BT_STATE_* code's name; a code this binding does not know reads as failed."""
    return STATES[code] if 0 <= code < len(STATES) else "failed"


class EngineError(RuntimeError):
    """An engine call failed; the message is one line."""


class ConnectError(EngineError):
    """The server could not be reached or refused the login."""


def _check(rc: int, what: str) -> None:
    if rc != lib.BT_OK:
        raise EngineError(f"{what}: {ffi.string(lib.bt_strerror(rc)).decode()}")


@dataclass(frozen=True, slots=True)
class ConnSettings:
    """How each worker connects (the password never leaves this object)."""

    driver: str = "null"
    host: str = ""
    port: int = 0
    user: str = ""
    password: str | None = field(default=None, repr=False)
    database: str = ""
    socket: str = ""
    options: str = ""
    ssl: int = 0
    prepare: bool = True
    pipeline: bool = False
    connect_timeout_s: int = 10
    query_timeout_s: float = 0.0  # 0: wait for replies as long as they take


@dataclass(frozen=True, slots=True)
class RandomSettings:
    """How workers draw row ids: sysbench 1.0.20's --rand-* options and defaults."""

    type: str = "special"
    spec_iter: int = 12
    spec_pct: float = 1.0
    spec_res: float = 75.0
    pareto_h: float = 0.2
    zipfian_exp: float = 0.8
    seed: int = 0


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """One thread group: its threads, its own rate (0 = closed loop) and the
    weight of each transaction type in its mix (0: the group does not run it)."""

    name: str
    threads: int
    rate: float = 0.0
    arrival: str = "uniform"
    weights: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """`groups`: thread groups; empty for one pool of `threads` at `rate`."""

    threads: int = 1
    rate: float = 0.0
    arrival: str = "uniform"
    max_events: int = 0
    rand: RandomSettings = RandomSettings()
    reconnect_every: int = 0
    ignore_all_errors: bool = False
    ignore_codes: tuple[int, ...] = ()
    max_retries: int = 0
    groups: tuple[GroupSettings, ...] = ()
    idle_workers: bool = False  # workers under SCHED_IDLE: the server on this host takes the CPU first
    # > 0: `threads` (and each group's) count connections, driven by this many event-loop threads
    # per group (MySQL, PostgreSQL); SQLite and fileio keep a thread per connection
    loop_threads: int = 0


def _open_files() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _allow_files(connections: int, open_now: Callable[[], int] = _open_files) -> None:
    """Event loops hold a socket per connection: raise the soft open-files
    limit towards the hard one when 10,000 connections need more than the
    usual 1,024 (best effort: the connects past the limit fail and say so).
    The files already open count too (the monitor keeps /proc files open)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + 256 + open_now()
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            pass


class _Keep:
    """Holds cffi allocations that C keeps pointers to for the engine's life."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def new(self, ctype: str, init: Any = None) -> Any:
        obj = ffi.new(ctype, init)
        self.items.append(obj)
        return obj

    def cstr(self, s: str | None) -> Any:
        if s is None or s == "":
            return ffi.NULL
        return self.new("char[]", s.encode())


def _fill_conn(c: Any, conn: ConnSettings, keep: _Keep) -> None:
    if conn.driver not in DRIVERS:
        raise EngineError(f"unknown engine {conn.driver!r}: use one of {', '.join(DRIVERS)}")
    if not lib.bt_driver_available(DRIVERS[conn.driver]):
        raise EngineError(
            f"this build of benchtop has no {conn.driver} driver: install the client library "
            f"({'libmariadb-dev' if conn.driver == 'mysql' else 'libpq-dev'}) and reinstall benchtop"
        )
    c.driver = DRIVERS[conn.driver]
    c.host = keep.cstr(conn.host)
    c.port = conn.port
    c.user = keep.cstr(conn.user)
    c.password = keep.cstr(conn.password) if conn.password is not None else ffi.NULL
    c.database = keep.cstr(conn.database)
    c.socket = keep.cstr(conn.socket)
    c.options = keep.cstr(conn.options)
    c.ssl = conn.ssl
    c.prepare = 1 if conn.prepare else 0
    c.pipeline = 1 if conn.pipeline else 0
    c.connect_timeout_s = conn.connect_timeout_s
    c.query_timeout_ms = int(round(conn.query_timeout_s * 1000)) if conn.query_timeout_s > 0 else 0


def _fill_groups(cfg: Any, groups: Sequence[GroupSettings], keep: _Keep) -> None:
    if len(groups) > MAX_GROUPS:
        raise EngineError(f"at most {MAX_GROUPS} thread groups, not {len(groups)}")
    if sum(g.threads for g in groups) > MAX_THREADS:
        raise EngineError(f"thread groups add up to more than {MAX_THREADS} threads")
    arr = keep.new("bt_group[]", len(groups))
    for i, g in enumerate(groups):
        if g.threads < 0 or g.rate < 0 or g.arrival not in ARRIVALS:
            raise EngineError(f"thread group {g.name}: threads and rate must be >= 0, arrival uniform or poisson")
        arr[i].name = keep.cstr(g.name)
        arr[i].threads = g.threads
        arr[i].rate = g.rate
        arr[i].arrival = ARRIVALS[g.arrival]
        for k, w in enumerate(g.weights[:32]):
            arr[i].weights[k] = w
    cfg.groups = arr
    cfg.ngroups = len(groups)


def _program_struct(program: Any, keep: _Keep) -> Any:
    """cffi structs for a compiled benchtop.workload.Program."""
    p = keep.new("bt_program *")
    ops = keep.new("bt_op[]", max(1, len(program.ops)))
    for i, op in enumerate(program.ops):
        o = ops[i]
        o.code, o.a, o.b, o.c, o.d, o.x, o.y = op
    params = keep.new("bt_param[]", max(1, len(program.params)))
    for i, (kind, reg, k) in enumerate(program.params):
        params[i].kind, params[i].reg, params[i].k = kind, reg, k
    stmts = keep.new("bt_stmt[]", max(1, len(program.stmts)))
    for i, st in enumerate(program.stmts):
        stmts[i].sql = keep.cstr(st.sql)
        stmts[i].table_reg = st.table_reg
        stmts[i].nparams = st.nparams
        stmts[i].kind = st.kind
        stmts[i].is_begin = st.is_begin
    strings = keep.new("char *[]", max(1, len(program.strings)))
    for i, s in enumerate(program.strings):
        strings[i] = keep.cstr(s) if s else keep.new("char[]", b"")
    types = keep.new("bt_txn_type[]", max(1, len(program.txn_types)))
    for i, tt in enumerate(program.txn_types):
        types[i].name = keep.cstr(tt.name)
        types[i].weight = tt.weight
        types[i].first_op = tt.first_op
        types[i].nops = tt.nops
    regs = keep.new("int64_t[]", max(1, len(program.init_regs)))
    for i, v in enumerate(program.init_regs):
        regs[i] = v
    p.ops, p.nops = ops, len(program.ops)
    p.params, p.nparams = params, len(program.params)
    p.stmts, p.nstmts = stmts, len(program.stmts)
    p.strings, p.nstrings = strings, len(program.strings)
    p.txn_types, p.ntxn_types = types, len(program.txn_types)
    p.max_table = program.max_table
    p.init_regs, p.ninit_regs = regs, len(program.init_regs)
    p.strict_eval = int(getattr(program, "strict_eval", False))
    p.time_queries = 1 if getattr(program, "query_kinds", ()) else 0
    return p


class Engine:
    """One run of the native engine.

    >>> from benchtop.workload import builtin_program
    >>> eng = Engine(ConnSettings(driver="null"), EngineSettings(threads=2), builtin_program("oltp_point_select", "null"))
    >>> started = eng.start(); import time; time.sleep(0.05); eng.stop(); eng.join(5)
    True
    >>> eng.snapshot().transactions > 0
    True
    >>> eng.close()
    """

    def __init__(self, conn: ConnSettings, settings: EngineSettings, program: Any | None) -> None:
        limit = MAX_CONNECTIONS if settings.loop_threads > 0 else MAX_THREADS
        if not 0 <= settings.threads <= limit:
            what = "connections" if settings.loop_threads > 0 else "threads"
            raise EngineError(f"{what} must be between 0 and {limit}, not {settings.threads}")
        if not 0 <= settings.loop_threads <= MAX_THREADS:
            raise EngineError(f"threads must be between 0 and {MAX_THREADS}, not {settings.loop_threads}")
        if settings.rate < 0:
            raise EngineError(f"rate must be >= 0, not {settings.rate}")
        if settings.arrival not in ARRIVALS:
            raise EngineError(f"unknown arrival process {settings.arrival!r}: use uniform or poisson")
        rand = settings.rand
        if rand.type not in DISTRIBUTIONS:
            raise EngineError(f"unknown --rand-type {rand.type!r}: use one of {', '.join(DISTRIBUTIONS)}")
        if settings.loop_threads > 0:
            _allow_files(sum(g.threads for g in settings.groups) or settings.threads)
        self._keep = _Keep()
        self._lock = threading.Lock()
        self.program = program
        self.conn = conn
        cfg = self._keep.new("bt_config *")
        _fill_conn(cfg.conn, conn, self._keep)
        cfg.program = _program_struct(program, self._keep) if program is not None else ffi.NULL
        cfg.threads = settings.threads
        cfg.rate = settings.rate
        cfg.arrival = ARRIVALS[settings.arrival]
        cfg.max_events = settings.max_events
        cfg.rand_type = DISTRIBUTIONS[rand.type]
        cfg.rand_spec_iter = rand.spec_iter
        cfg.rand_spec_pct = rand.spec_pct
        cfg.rand_spec_res = rand.spec_res
        cfg.rand_pareto_h = rand.pareto_h
        cfg.rand_zipfian_exp = rand.zipfian_exp
        cfg.seed = rand.seed
        cfg.reconnect_every = settings.reconnect_every
        cfg.ignore_all_errors = 1 if settings.ignore_all_errors else 0
        codes = self._keep.new("int32_t[]", max(1, len(settings.ignore_codes)))
        for i, code in enumerate(settings.ignore_codes):
            codes[i] = code
        cfg.ignore_codes = codes
        cfg.nignore_codes = len(settings.ignore_codes)
        cfg.max_retries = settings.max_retries
        cfg.idle_workers = 1 if settings.idle_workers else 0
        cfg.loop_threads = settings.loop_threads
        self.loop_threads = settings.loop_threads
        self.group_names = tuple(g.name for g in settings.groups)
        if settings.groups:
            _fill_groups(cfg, settings.groups, self._keep)
        out = ffi.new("bt_engine **")
        rc = lib.bt_engine_new(cfg, out)
        if rc == lib.BT_EINVAL:
            raise EngineError("the engine refused this configuration (a workload program or option is invalid)")
        _check(rc, "cannot create the engine")
        self._h = out[0]
        self._arrival = settings.arrival
        n = nbuckets()
        self._lat = ffi.new("uint64_t[]", n)
        self._svc = ffi.new("uint64_t[]", n)
        self._qbuf = ffi.new("uint64_t[]", n)
        self._snap = ffi.new("bt_snapshot *")
        self._gsnap = ffi.new("bt_group_snapshot *")
        self._closed = False

    # -- lifecycle -------------------------------------------------------------
    def start(self, cancel: threading.Event | None = None) -> float | None:
        """Starts the workers; returns when the run's clock starts, once every
        connection asked for has tried its first connect (pgbench leaves its
        initial connection time out of tps the same way), when the engine no
        longer runs, or once `cancel` is set.  Returns the start's
        time.monotonic() (None: it did not start): thousands of workers
        woken at once may keep this thread from running for a while after."""
        _check(lib.bt_engine_start(self._h), "cannot start the engine")
        # short slices, as join's: signal handlers run between them
        while not lib.bt_engine_wait_started(self._h, 100):
            if cancel is not None and cancel.is_set():
                break
        ns = int(lib.bt_engine_start_ns(self._h))
        return ns / 1e9 if ns else None

    def stop(self) -> None:
        _check(lib.bt_engine_stop(self._h), "cannot stop the engine")

    def join(self, timeout: float | None = None, cancel: threading.Event | None = None) -> bool:
        """Wait for the workers to finish their current transaction and exit.
        Returns False if they are still busy after `timeout` (a hung server)
        or once `cancel` is set."""
        # short slices on this thread (the GIL is released in C): signal
        # handlers run between them, and no thread is left behind in a join
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            step = 100 if left is None else max(0, min(100, int(left * 1000)))
            if lib.bt_engine_join_timeout(self._h, step) == 0:
                return True
            if (left is not None and left <= 0.1) or (cancel is not None and cancel.is_set()):
                return False

    def abort_io(self) -> int:
        """After stop(): shut down the workers' sockets so reads blocked on a
        hung server return; returns how many were shut down."""
        return int(lib.bt_engine_abort_io(self._h))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if lib.bt_engine_free(self._h) > 0:
                # abandoned workers still read the configuration and program
                _ABANDONED.append(self._keep)

    # -- knobs -----------------------------------------------------------------
    def set_threads(self, n: int) -> None:
        """Threads, or with event loops (loop_threads) connections."""
        limit = MAX_CONNECTIONS if self.loop_threads > 0 else MAX_THREADS
        if not 0 <= n <= limit:
            raise EngineError(f"{'connections' if self.loop_threads > 0 else 'threads'} must be between 0 and {limit}, not {n}")
        _check(lib.bt_engine_set_threads(self._h, n), "cannot change threads")

    def set_rate(self, rate: float, arrival: str | None = None) -> None:
        if rate < 0:
            raise EngineError(f"rate must be >= 0, not {rate}")
        arrival = arrival or self._arrival
        if arrival not in ARRIVALS:
            raise EngineError(f"unknown arrival process {arrival!r}: use uniform or poisson")
        self._arrival = arrival
        _check(lib.bt_engine_set_rate(self._h, float(rate), ARRIVALS[arrival]), "cannot change rate")

    def set_group_threads(self, group: int, n: int) -> None:
        limit = MAX_CONNECTIONS if self.loop_threads > 0 else MAX_THREADS
        if not 0 <= n <= limit:
            raise EngineError(f"{'connections' if self.loop_threads > 0 else 'threads'} must be between 0 and {limit}, not {n}")
        _check(lib.bt_engine_set_group_threads(self._h, group, n), "cannot change the group's threads")

    def set_group_rate(self, group: int, rate: float, arrival: str | None = None) -> None:
        if rate < 0:
            raise EngineError(f"rate must be >= 0, not {rate}")
        arrival = arrival or self._arrival
        if arrival not in ARRIVALS:
            raise EngineError(f"unknown arrival process {arrival!r}: use uniform or poisson")
        _check(lib.bt_engine_set_group_rate(self._h, group, float(rate), ARRIVALS[arrival]),
               "cannot change the group's rate")

    def set_paused(self, paused: bool) -> None:
        _check(lib.bt_engine_set_paused(self._h, 1 if paused else 0), "cannot pause")

    # -- reading -----------------------------------------------------------------
    @property
    def state(self) -> str:
        """The engine's state alone ("running", "stopping" once --events are
        all started, "failed", ...): cheap enough to ask between samples."""
        return _state_name(int(lib.bt_engine_state(self._h)))

    def snapshot(self) -> EngineSample:
        with self._lock:
            _check(lib.bt_engine_snapshot(self._h, self._snap, self._lat, self._svc), "snapshot failed")
            n = nbuckets()
            return self._sample(Histogram(tuple(ffi.unpack(self._lat, n))), Histogram(tuple(ffi.unpack(self._svc, n))))

    def snapshot_packed(self) -> tuple[EngineSample, bytes, bytes]:
        """A snapshot whose histograms stay out of the sample (it holds empty
        ones): the latency and service bucket counts as raw native uint64
        arrays, for a reader that ships them elsewhere (a cluster's load
        host) without building 4,736-entry tuples first."""
        with self._lock:
            _check(lib.bt_engine_snapshot(self._h, self._snap, self._lat, self._svc), "snapshot failed")
            none = Histogram(())
            # copied before anything else reuses the buffers; groups stay out (a cluster runs none)
            lat, svc = ffi.buffer(self._lat)[:], ffi.buffer(self._svc)[:]
            return self._sample(none, none, with_groups=False), lat, svc

    def _sample(self, lat: Histogram, svc: Histogram, with_groups: bool = True) -> EngineSample:
        """The newest snapshot's figures (call with the lock held; reading the
        groups reuses the histogram buffers)."""
        s = self._snap
        return EngineSample(
            t=s.t,
            state=_state_name(s.state),
            threads_target=s.threads_target,
            threads_running=s.threads_running,
            in_flight=s.in_flight,
            unfinished=s.unfinished,
            paused=bool(s.paused),
            rate=s.rate,
            transactions=s.transactions,
            rollbacks=s.rollbacks,
            reads=s.queries[0],
            writes=s.queries[1],
            other=s.queries[2],
            errors={k: s.errors[i] for i, k in enumerate(ERROR_KINDS)},
            retries=s.retries,
            reconnects=s.reconnects,
            connects=s.connects,
            connect_ns_sum=s.connect_ns_sum,
            connect_ns_max=s.connect_ns_max,
            connect_failures=s.connect_failures,
            connected=s.connected,
            connections_served=s.connections_served,
            loops_running=s.loops_running,
            loop_threads=self.loop_threads,
            latency_ns_sum=s.latency_ns_sum,
            latency_ns_min=s.latency_ns_min,
            latency_ns_max=s.latency_ns_max,
            service_ns_sum=s.service_ns_sum,
            service_ns_max=s.service_ns_max,
            busy_ns=s.busy_ns,
            queue_ns=s.queue_ns,
            tickets_due=s.tickets_due,
            txn_by_type=tuple(s.txn_by_type),
            txn_ns_by_type=tuple(s.txn_ns_by_type),
            svc_ns_by_type=tuple(s.svc_ns_by_type),
            rows_loaded=s.rows_loaded,
            error=ffi.string(s.error).decode(errors="replace"),
            connect_error=ffi.string(s.connect_error).decode(errors="replace"),
            lost_error=ffi.string(s.lost_error).decode(errors="replace"),
            latency=lat,
            service=svc,
            groups=tuple(self._group_sample(i, name) for i, name in enumerate(self.group_names)) if with_groups else (),
            query_latency=self._query_hists() if with_groups else {},
        )

    def _group_sample(self, index: int, name: str) -> GroupSample:
        """Called with self._lock held (it reuses the snapshot buffers)."""
        g = self._gsnap
        _check(lib.bt_engine_group_snapshot(self._h, index, g, self._lat, self._svc), "group snapshot failed")
        n = nbuckets()
        return GroupSample(
            name=name, threads_target=g.threads_target, threads_running=g.threads_running, rate=g.rate,
            transactions=g.transactions, errors=g.errors, latency_ns_sum=g.latency_ns_sum,
            service_ns_sum=g.service_ns_sum, busy_ns=g.busy_ns, queue_ns=g.queue_ns, tickets_due=g.tickets_due,
            latency=Histogram(tuple(ffi.unpack(self._lat, n))), service=Histogram(tuple(ffi.unpack(self._svc, n))),
        )

    def _query_hists(self) -> dict[str, Histogram]:
        """Cumulative latency per query kind, by the program's names for them."""
        kinds = getattr(self.program, "query_kinds", ()) if self.program is not None else ()
        out = {}
        for i, name in enumerate(kinds):
            _check(lib.bt_engine_query_hist(self._h, i, self._qbuf), "query histogram")
            out[name] = Histogram(tuple(ffi.unpack(self._qbuf, nbuckets())))
        return out

    def type_histogram(self, index: int) -> Histogram:
        """Cumulative latency of one transaction type (empty for one-type workloads)."""
        return Histogram(tuple(array("Q", self.type_histogram_packed(index))))

    def type_histogram_packed(self, index: int) -> bytes:
        """type_histogram's counts as a raw native uint64 array (see snapshot_packed)."""
        buf = ffi.new("uint64_t[]", nbuckets())
        _check(lib.bt_engine_type_hist(self._h, index, buf), "type histogram")
        return ffi.buffer(buf)[:]

    # -- bulk load ---------------------------------------------------------------
    def load(self, spec: Any, threads: int) -> None:
        """Blocking multi-threaded bulk load (run it in a thread and watch
        snapshot().rows_loaded for progress)."""
        keep = _Keep()
        ld = keep.new("bt_load *")
        cols = keep.new("bt_gen[]", max(1, len(spec.cols)))
        for i, g in enumerate(spec.cols):
            cols[i].kind, cols[i].dist, cols[i].lo, cols[i].hi = g.kind, g.dist, g.lo, g.hi
            cols[i].text = keep.cstr(g.text) if g.text else ffi.NULL
        ld.insert_prefix = keep.cstr(spec.insert_prefix)
        ld.cols, ld.ncols = cols, len(spec.cols)
        ld.first_table, ld.last_table = spec.first_table, spec.last_table
        ld.rows = spec.rows
        ld.rows_per_insert = spec.rows_per_insert
        ld.rows_per_commit = spec.rows_per_commit
        rc = lib.bt_engine_load(self._h, ld, threads)
        if rc != lib.BT_OK:
            err = self.snapshot().error
            raise EngineError(err or ffi.string(lib.bt_strerror(rc)).decode())


def exec_sql(conn: ConnSettings, sql: str) -> str | None:
    """Run one statement on a fresh connection; the first column of the first
    row as text (None if no row).  Raises EngineError with the server's message."""
    keep = _Keep()
    c = keep.new("bt_conn_config *")
    _fill_conn(c, conn, keep)
    out = ffi.new("char[]", 4096)
    err = ffi.new("char[]", 1024)
    rc = lib.bt_exec_sql(c, sql.encode(), out, 4096, err, 1024)
    if rc != lib.BT_OK:
        msg = ffi.string(err).decode(errors="replace") or ffi.string(lib.bt_strerror(rc)).decode()
        raise (ConnectError if rc == lib.BT_ECONNECT else EngineError)(msg)
    value = ffi.string(out).decode(errors="replace")
    return value if value != "" else None
