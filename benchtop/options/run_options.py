"""The effective configuration of a run, built in one place from any of the
three ways a run is described: a command line (`options_from_argv`), a
mapping of option names to values (`options_from_mapping`: a scenario's
settings, the pytest plugin's keyword arguments) — both checked by the same
option table — and the knobs a scenario step sets (`RunOptions.for_step`).

`RunOptions.to_dict()` is what results folders store: it never contains a
password."""

from __future__ import annotations

import argparse
import getpass
import math
import os
import sys
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping, Sequence

from benchtop import __version__
from benchtop.engine import MAX_CONNECTIONS, ConnSettings, RandomSettings
from benchtop.errors import OneLineParser, UsageError
from benchtop.record.workers import Workers
from benchtop.target import Target, TargetError, fill_defaults, parse_dsn
from benchtop.target.connection import native_conn, tls_of
from benchtop.workload import ARRIVALS, RunDefaults, file_run_defaults, option_defaults
from benchtop.workload.fileio import FileioSpec, add_fileio_options, fileio_conn, fileio_overrides
from benchtop.workload.groups import parse_group_setting

ENGINE_ALIASES = {"postgres": "postgresql", "pgsql": "postgresql", "mariadb": "mysql"}
ENGINES = ("sqlite", "null", "mysql", "postgresql", "fileio")
ENGINE_HELP = ("sqlite (default: the embedded database), null (no database: the engine's own cost), "
               "mysql (or mariadb), postgresql (or postgres, pgsql; PgBouncer too), fileio (sysbench's file IO test)")
WORKER_PRIORITIES = ("auto", "idle", "normal")
DISTRIBUTIONS = ("uniform", "gaussian", "special", "pareto", "zipfian")
# a run without --time: this long headless (as sysbench); the TUI runs until q
HEADLESS_TIME_S = 10.0
# after a run, its metrics stay up this long for the last scrape (Prometheus's default interval is 15 s
# but a run's scrape_interval is usually 1-5 s); at most an hour
METRICS_LINGER_S = 5.0
# the shortest --report-interval besides 0: a line over fewer milliseconds holds a handful of transactions
MIN_REPORT_INTERVAL_S = 0.1
MAX_METRICS_LINGER_S = 3600.0
DESCRIPTIONS = {
    "run": "Run a benchmark: the live dashboard (until q), or --headless interval lines and a summary.",
    "prepare": "Create and load a workload's tables (or fileio's test files) on the target.",
    "cleanup": "Drop a workload's tables (or remove fileio's test files) from the target.",
    "check": "Run a workload's consistency conditions (TPC-C's) on the target: PASS/FAIL per condition.",
    "restore": "Put back the settings a benchtop run killed before its own restore left changed on the target "
               "(instrumentation, a scenario's settings), from the record it wrote before changing them.",
}


@dataclass(frozen=True)
class MonitorOptions:
    """What a run watches beside the load, and who may change instrumentation."""

    proxysql: tuple[str, ...] = ()
    pgbouncer: tuple[str, ...] = ()
    interval_s: float = 2.0
    target: bool = True  # poll the target's own statistics (--no-monitor turns it off)
    admin_dsn: str | None = None

    @property
    def extra(self) -> list[tuple[str, str]]:
        """(kind, DSN) of every source besides the target."""
        return [("proxysql", d) for d in self.proxysql] + [("pgbouncer", d) for d in self.pgbouncer]


@dataclass(frozen=True)
class RunOptions:
    engine: str = "sqlite"
    target: Target = field(default_factory=lambda: Target(kind="sqlite"))
    workload: str = "oltp_read_write"
    workload_options: dict[str, Any] = field(default_factory=dict)
    threads: int = 1  # the engine's workers: threads, or with --connections the connections
    loop_threads: int = 0  # --connections: the --threads event-loop threads that drive them (0: a thread each)
    time_s: float = HEADLESS_TIME_S  # 0 = until stopped (the TUI's default)
    events: int = 0
    rate: float = 0.0
    arrival: str = "uniform"
    report_interval: float = 1.0
    percentile: float = 95.0
    histogram: bool = False
    warmup_s: float = 0.0
    json: bool = False
    out: str | None = None
    headless: bool = False  # no TUI: --headless, --json or stdout not a terminal (runs_headless)
    rand: RandomSettings = field(default_factory=RandomSettings)
    prepare_statements: bool = True
    pipeline: bool = False
    reconnect: int = 0
    ignore_errors: str = ""
    instrumentation: str | None = None
    stop_if: tuple[str, ...] = ()
    temp_db: bool = False
    monitor: MonitorOptions = field(default_factory=MonitorOptions)
    fileio: FileioSpec | None = None
    query_timeout_s: float = 0.0  # --query-timeout: a statement's reply is awaited this long
    preset: str | None = None  # the workload's [presets] entry
    groups: tuple[str, ...] = ()  # --group NAME.threads=N / NAME.rate=R, after the preset
    pgbench_scripts: tuple[str, ...] = ()  # FILE[@WEIGHT] each, instead of --workload
    defines: tuple[str, ...] = ()  # NAME=VALUE constants of the pgbench scripts
    cluster: str | None = None  # a Ray cluster's address: the load runs on its nodes
    load_hosts: int = 0  # load hosts on the cluster (0: one per alive node)
    worker_priority: str = "auto"  # idle / normal; auto: idle when the server is on this host
    metrics_listen: str | None = None  # --metrics-listen HOST:PORT (None: no endpoint)
    metrics_linger_s: float = METRICS_LINGER_S

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["target"] = self.target.to_dict()
        d["stop_if"] = list(self.stop_if)
        d["groups"] = list(self.groups)
        d.pop("monitor")
        d.pop("fileio")
        # the flat rand_* names are what results folders have always stored
        d.pop("rand")
        d.update({f"rand_{k}": v for k, v in asdict(self.rand).items()})
        return d

    @property
    def workers(self) -> Workers:
        return Workers(self.threads, self.loop_threads)

    def for_step(self, threads: int | None = None, rate: float | None = None) -> RunOptions:
        """These options with a scenario step's threads and rate (None: keep)."""
        return replace(self, threads=self.threads if threads is None else threads,
                       rate=self.rate if rate is None else rate)

    def conn_settings(self) -> ConnSettings:
        """How the engine's workers connect (the C drivers' settings)."""
        if self.engine == "fileio" and self.fileio is not None:
            return fileio_conn(self.fileio)
        if self.engine in ("sqlite", "null"):
            return ConnSettings(driver=self.engine, database=self.target.database if self.engine == "sqlite" else "")
        return ConnSettings(
            driver=self.engine, **native_conn(self.target, self.engine),
            prepare=self.prepare_statements, pipeline=self.pipeline, query_timeout_s=self.query_timeout_s,
        )


# ----------------------------------------------------------------- the parser


def _add_target_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("target (passwords: prefer ~/.my.cnf, ~/.pgpass, MYSQL_PWD/PGPASSWORD or --ask-password)")
    g.add_argument("--engine", default="sqlite", help=ENGINE_HELP)
    g.add_argument("--db", help="SQLite database file (default: a prepared one in a temporary folder)")
    g.add_argument("--dsn", help="mysql://user@host:port/db or postgresql://user@host:port/db")
    # as with the mysql client, a password flag is readable in the process list until benchtop
    # overwrites it, once Python has started (docs/reliability.md has the figures)
    flag_password = ("visible to other users in the process list for the first 0.4-1.2 s (Python's start), "
                     "until benchtop hides it; "
                     "safer: {file}, {env} or --ask-password")
    for name in ("host", "port", "user", "password", "db", "socket", "ssl"):
        g.add_argument(f"--mysql-{name}", dest=f"mysql_{name}", help=flag_password.format(
            file="~/.my.cnf", env="MYSQL_PWD") if name == "password" else None)
    for name in ("host", "port", "user", "password", "db", "sslmode"):
        g.add_argument(f"--pgsql-{name}", dest=f"pgsql_{name}", help=flag_password.format(
            file="~/.pgpass", env="PGPASSWORD") if name == "password" else None)
    g.add_argument("--ask-password", action="store_true", help="prompt for the password")


def _add_workload_options(p: argparse.ArgumentParser, cmd: str) -> None:
    rand = RandomSettings()
    g = p.add_argument_group("workload")
    g.add_argument("--workload", default=RunOptions.workload,
                   help="built-in name (oltp_read_write, oltp_point_select, ...) or a .toml file")
    g.add_argument("--tables", type=int, help="number of tables (the workload's default)")
    g.add_argument("--table-size", dest="table_size", type=int, help="rows per table (the workload's default)")
    g.add_argument("--threads", type=int, default=RunOptions.threads,
                   help="loader threads (default 1)" if cmd == "prepare" else
                   "worker threads (default 1); alone, each holds one connection (as sysbench's --threads)")
    if cmd == "run":
        g.add_argument("--connections", type=int, default=None, metavar="N",
                       help="client connections, driven by --threads event-loop threads (epoll; pgbench's -c with "
                            "-j): each is its own closed-loop client or open-loop consumer, and the live keys and "
                            f"scenario steps change connections instead of threads; up to {MAX_CONNECTIONS}. "
                            "MySQL and PostgreSQL; SQLite and fileio keep a thread per connection")
    g.add_argument("--rand-type", dest="rand_type", default=rand.type, choices=DISTRIBUTIONS,
                   help=f"row access distribution (default {rand.type}, as sysbench 1.0.20)")
    g.add_argument("--rand-spec-iter", type=int, default=rand.spec_iter)
    g.add_argument("--rand-spec-pct", type=float, default=rand.spec_pct)
    g.add_argument("--rand-spec-res", type=float, default=rand.spec_res)
    g.add_argument("--rand-pareto-h", type=float, default=rand.pareto_h)
    g.add_argument("--rand-zipfian-exp", type=float, default=rand.zipfian_exp)
    g.add_argument("--rand-seed", type=int, default=rand.seed)
    g.add_argument("--pgbench-script", dest="pgbench_scripts", action="append", default=[], metavar="FILE[@WEIGHT]",
                   help="run a pgbench custom script (repeatable; weights as pgbench -f FILE@W) instead of --workload")
    g.add_argument("--define", "-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable of the pgbench scripts, as pgbench -D (scale=1 unless defined)")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    monitor = MonitorOptions()
    g = p.add_argument_group("run")
    g.add_argument("--headless", action="store_true", help="no TUI: interval lines and a summary")
    g.add_argument("--time", type=float, default=None,
                   help=f"seconds to run (0 = no limit); default: until q in the TUI, {HEADLESS_TIME_S:g} headless")
    g.add_argument("--events", type=int, default=0, help="stop after this many transactions")
    g.add_argument("--rate", type=float, default=None,
                   help="open loop: transactions/s (0 = as fast as possible; default: the workload file's rate, else 0)")
    g.add_argument("--arrival", default=None, choices=ARRIVALS,
                   help="with --rate: evenly spaced transactions, or independent arrivals (exponential gaps, as "
                        "pgbench -R); default: the workload file's arrival, else uniform")
    g.add_argument("--report-interval", dest="report_interval", type=float, default=RunOptions.report_interval)
    g.add_argument("--percentile", type=float, default=RunOptions.percentile)
    g.add_argument("--histogram", action="store_true")
    g.add_argument("--warmup", type=float, default=0.0, help="seconds excluded from the results")
    g.add_argument("--json", action="store_true", help="JSON Lines instead of text")
    g.add_argument("--out", help="results folder, written as the run goes "
                   "(default: a new folder under $BENCHTOP_RESULTS or ~/.local/share/benchtop/runs)")
    g.add_argument("--no-prepare", dest="no_prepare", action="store_true", help="text protocol, no prepared statements")
    g.add_argument("--pipeline", action="store_true", help="PostgreSQL pipeline mode")
    g.add_argument("--reconnect", type=int, default=0, help="new connection every N transactions")
    g.add_argument("--worker-priority", dest="worker_priority", default="auto", choices=WORKER_PRIORITIES,
                   help="idle: the workers run under SCHED_IDLE and take only CPU the server leaves; "
                        "auto (default): idle when the server is on this host (loopback, a local address or "
                        "a socket), normal otherwise")
    g.add_argument("--query-timeout", dest="query_timeout", type=float, default=0.0, metavar="S",
                   help="give up on a statement after S seconds (cancelled, counted as query_timeout, "
                        "then a new connection); 0 = wait as long as it takes")
    g.add_argument("--ignore-errors", "--mysql-ignore-errors", dest="ignore_errors", default="",
                   help="all, or error codes / SQLSTATEs to skip (deadlocks and lock waits are always retried)")
    g.add_argument("--instrumentation", help="performance_schema / track_io_timing preset to apply")
    g.add_argument("--stop-if", dest="stop_if", action="append", default=[],
                   help="end the load when a condition holds, e.g. 'p99>50ms for 10s', 'errors>1%%'")
    g.add_argument("--preset", help="the workload's preset of thread groups (insert_benchmark: i0.q10, i1.q10, "
                                    "i10.q0, i10.q1)")
    g.add_argument("--group", dest="group", action="append", default=[], metavar="NAME.threads=N",
                   help="a thread group's threads or rate (NAME.rate=R, 0 = closed loop); repeatable")
    g.add_argument("--admin-dsn", dest="admin_dsn",
                   help="credentials allowed to change instrumentation (default: the target's)")
    c = p.add_argument_group("many load hosts (pip install 'benchtop[cluster]'; see docs/cluster.md)")
    c.add_argument("--cluster", metavar="ADDRESS",
                   help="run the load on a Ray cluster: auto, HOST:PORT or ray://HOST:10001")
    c.add_argument("--load-hosts", dest="load_hosts", type=int, default=0, metavar="N",
                   help="load hosts (Ray actors, spread over the nodes) sharing --threads and --rate "
                        "(default: one per node)")
    m = p.add_argument_group("monitoring during the run")
    m.add_argument("--proxysql", action="append", default=[], metavar="DSN", help="also watch this ProxySQL admin")
    m.add_argument("--pgbouncer", action="append", default=[], metavar="DSN", help="also watch this PgBouncer")
    m.add_argument("--monitor-interval", dest="monitor_interval", type=float, default=monitor.interval_s)
    m.add_argument("--no-monitor", dest="no_monitor", action="store_true",
                   help="do not poll the target's own statistics")
    add_metrics_options(p)


_TARGET = ("--help", "--version", "--engine", "--db", "--dsn", "--ask-password")
_WORKLOAD = ("--workload", "--tables", "--table-size")
# the options each subcommand other than the run uses (the rest are hidden)
_USED: dict[str, tuple[str, ...]] = {
    "prepare": (*_TARGET, *_WORKLOAD, "--threads"),
    "cleanup": (*_TARGET, *_WORKLOAD),
    "check": (*_TARGET, *_WORKLOAD),
}
_USED_PREFIXES: dict[str, tuple[str, ...]] = {
    "prepare": ("--mysql-", "--pgsql-", "--dir", "--file-"),
    "cleanup": ("--mysql-", "--pgsql-", "--dir", "--file-num"),
    "check": ("--mysql-", "--pgsql-"),
}


def build_parser(cmd: str, epilog: str = "") -> argparse.ArgumentParser:
    """The option table of a run-like command (run, prepare, cleanup,
    check): each has its own description and only the options it uses;
    `epilog` is added after the note on workload options."""
    note = ("Workload options (e.g. --point-selects 5, --range-size 50, --skip-trx on, --scale 2) are passed "
            "through to the workload. Passwords never belong on the command line: use ~/.my.cnf, ~/.pgpass, "
            "MYSQL_PWD/PGPASSWORD or --ask-password.")
    p = OneLineParser(
        prog=f"benchtop {cmd}" if cmd != "run" else "benchtop",
        description=DESCRIPTIONS.get(cmd, DESCRIPTIONS["run"]),
        epilog=f"{note}\n\n{epilog}" if epilog else note,
        formatter_class=argparse.RawDescriptionHelpFormatter if epilog else argparse.HelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"benchtop {__version__}")
    _add_target_options(p)
    _add_workload_options(p, cmd)
    add_fileio_options(p)
    _add_run_options(p)
    # one option string serves prepare, the run and cleanup (as sysbench's
    # does): a subcommand accepts the others' options, but its help and
    # usage show only those it uses
    if cmd in _USED:
        for action in p._actions:  # argparse has no public list of actions
            longs = [o for o in action.option_strings if o.startswith("--")]
            # by its first name: --ignore-errors is a run option whatever its alias
            if longs and not (longs[0] in _USED[cmd] or longs[0].startswith(_USED_PREFIXES[cmd])):
                action.help = argparse.SUPPRESS
    return p


def option_names(cmd: str = "run") -> dict[str, tuple[str, bool]]:
    """Option dest -> (its long option, whether it may be repeated), e.g.
    table_size -> ("--table-size", False)."""
    out = {}
    for action in build_parser(cmd)._actions:  # argparse has no public list of actions
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in ("help", "version"):
            out[action.dest] = (longs[0], isinstance(action, argparse._AppendAction))
    return out


# ----------------------------------------------------------------- building


def runs_headless(headless: bool, json_lines: bool, terminal: bool) -> bool:
    """TUI or headless, decided here once for run, knee and scenario:
    headless when asked (--headless), when stdout takes JSON Lines (--json),
    or when stdout is not a terminal."""
    return headless or json_lines or not terminal


def options_from_argv(cmd: str, argv: Sequence[str], terminal: bool = False, epilog: str = "") -> RunOptions:
    """A command line's RunOptions; UsageError (one line) when it is wrong.
    `terminal`: stdout is a terminal, so the run opens the TUI unless
    --headless or --json is given (RunOptions.headless), where no --time
    means until the user quits."""
    ns, extra = build_parser(cmd, epilog).parse_known_args(list(argv))
    if getattr(ns, "time", 0) is None and not runs_headless(ns.headless, ns.json, terminal):
        ns.time = 0.0
    return _from_namespace(ns, _workload_overrides(extra, ns.workload), terminal)


def options_from_mapping(values: Mapping[str, Any], cmd: str = "run") -> RunOptions:
    """RunOptions from option names with underscores (as in a scenario file or
    the pytest plugin's keywords): the same checks and conversions as the
    command line's, without going through a command line.  Names the run
    does not know are the workload's options.  Headless: a mapping has no
    terminal (the scenario command decides for its own command line)."""
    parser = build_parser(cmd)
    ns = parser.parse_args([])
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    workload_values: dict[str, Any] = {}
    for key, value in values.items():
        action = actions.get(key)
        if action is None or key in ("help", "version"):
            workload_values[key] = value
            continue
        setattr(ns, key, _convert(action, value))
    workload = str(getattr(ns, "workload"))
    return _from_namespace(ns, _workload_values(workload_values, workload))


def argv_from_mapping(values: Mapping[str, object], cmd: str = "run") -> list[str]:
    """The command line that says what `values` say (names with underscores,
    as options_from_mapping takes them), for a caller that adds options
    after it which win (benchtop ab: a side's own).  Switches are given when
    true; a workload's switches as on/off; repeated options once per item.

    >>> argv_from_mapping({"threads": 4, "headless": True, "json": False, "stop_if": ["p99>5ms", "errors>0"],
    ...                    "point_selects": 14, "skip_trx": False})
    ['--threads', '4', '--headless', '--stop-if', 'p99>5ms', '--stop-if', 'errors>0', '--point-selects', '14', '--skip-trx', 'off']
    >>> argv_from_mapping({"threads": [1, 2]})
    Traceback (most recent call last):
    benchtop.errors.UsageError: --threads takes one value, not [1, 2]
    """
    actions = {a.dest: a for a in build_parser(cmd)._actions if a.option_strings}
    out: list[str] = []
    for key, value in values.items():
        action = actions.get(key)
        option = max(action.option_strings, key=len) if action is not None else "--" + key.replace("_", "-")
        if action is not None and isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                raise UsageError(f"{option} takes true or false, not {value!r}")
            out += [option] if value else []
        elif action is not None and isinstance(action, argparse._AppendAction):
            for item in value if isinstance(value, (list, tuple)) else [value]:
                out += [option, str(item)]
        elif isinstance(value, (list, tuple, dict)):
            raise UsageError(f"{option} takes one value, not {value!r}")
        elif isinstance(value, bool):
            if action is not None:
                raise UsageError(f"argument {option}: {value!r} is not a value for it")
            out += [option, "on" if value else "off"]
        else:
            out += [option, str(value)]
    return out


def _convert(action: argparse.Action, value: Any) -> Any:
    option = max(action.option_strings, key=len)
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise UsageError(f"{option} takes true or false, not {value!r}")
        return value
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, (list, tuple)) else [value]
        return [_convert_one(action, option, v) for v in items]
    if isinstance(value, (list, tuple, dict)):
        raise UsageError(f"{option} takes one value, not {value!r}")
    return _convert_one(action, option, value)


def _convert_one(action: argparse.Action, option: str, value: Any) -> Any:
    if isinstance(value, bool):
        raise UsageError(f"argument {option}: {value!r} is not a value for it")
    convert = action.type if callable(action.type) else str
    try:
        out = convert(value if convert is not str else str(value))
    except (TypeError, ValueError):
        name = getattr(convert, "__name__", "")
        raise UsageError(f"argument {option}: invalid {name} value: {value!r}") from None
    if action.choices is not None and out not in action.choices:
        raise UsageError(f"argument {option}: invalid choice: {value!r} (choose from "
                         + ", ".join(repr(c) for c in action.choices) + ")")
    return out


def _workload_overrides(extra: list[str], workload: str) -> dict[str, Any]:
    """--point-selects 5 / --skip-trx=on -> {'point_selects': '5', ...}, only
    for options the workload declares."""
    known = option_defaults(workload)
    out: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        arg = extra[i]
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument {arg!r}")
        name, eq, value = arg[2:].partition("=")
        key = name.replace("-", "_")
        if key not in known:
            raise _unknown_option(name, workload, known)
        if not eq:
            if isinstance(known[key], bool) and (i + 1 >= len(extra) or extra[i + 1].startswith("--")):
                value = "on"
            elif i + 1 < len(extra):
                i += 1
                value = extra[i]
            else:
                raise UsageError(f"option --{name} needs a value")
        out[key] = value
        i += 1
    return out


def _workload_values(values: Mapping[str, Any], workload: str) -> dict[str, Any]:
    """Workload options given by name: switches as on/off, the rest as the
    text the command line would have carried."""
    if not values:
        return {}
    known = option_defaults(workload)
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise _unknown_option(key.replace("_", "-"), workload, known)
        if isinstance(value, bool):
            out[key] = "on" if value else "off"
        elif isinstance(value, (list, tuple, dict)):
            raise UsageError(f"--{key.replace('_', '-')} takes one value, not {value!r}")
        else:
            out[key] = str(value)
    return out


def _unknown_option(name: str, workload: str, known: Mapping[str, Any]) -> UsageError:
    return UsageError(f"unknown option --{name} (see benchtop --help; workload options of {workload}: "
                      + ", ".join("--" + k.replace("_", "-") for k in known) + ")")


def engine_name(raw: str) -> str:
    name = ENGINE_ALIASES.get(raw.lower(), raw.lower())
    if name not in ENGINES:
        raise UsageError(f"unknown --engine {raw!r}: use sqlite, null, mysql (mariadb), postgresql (postgres) or fileio")
    return name


def resolve_target(ns: argparse.Namespace, engine: str) -> Target:
    if engine == "fileio":
        return Target(kind="fileio", database=getattr(ns, "dir", "."))
    if engine in ("sqlite", "null"):
        if ns.dsn:
            raise UsageError(f"--dsn does not apply to --engine {engine}")
        return Target(kind=engine, database=ns.db or "")
    if ns.db:
        raise UsageError("--db is for --engine sqlite")
    try:
        if ns.dsn:
            t = parse_dsn(ns.dsn)
            if t.kind != engine and not (engine == "postgresql" and t.kind == "pgbouncer"):
                raise UsageError(f"--dsn is {t.kind}:// but --engine is {engine}")
            if t.kind == "pgbouncer":
                t = replace(t, kind="postgresql")
        else:
            t = Target(kind=engine, host="")
        prefix = "mysql" if engine == "mysql" else "pgsql"

        def given(name: str) -> Any:
            return getattr(ns, f"{prefix}_{name}", None)  # PostgreSQL has no --pgsql-socket

        port = given("port")
        if port is not None and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise UsageError(f"--{prefix}-port takes a port from 1 to 65535, not {port!r}")
        host = given("host") or ""
        if host.startswith("/"):  # as libpq reads a host: a socket directory
            t = replace(t, socket=host, host="127.0.0.1")
        t = replace(
            t,
            host=host if host and not host.startswith("/") else t.host,
            port=int(port) if port else t.port,
            user=given("user") or t.user,
            password=given("password") if given("password") is not None else t.password,
            database=given("db") or t.database or "sbtest",
            socket=given("socket") or t.socket,
            ssl=given("ssl" if engine == "mysql" else "sslmode") or t.ssl,
        )
        tls_of(t)  # an unknown TLS mode is refused now, not at the first connection
    except ValueError as exc:
        if isinstance(exc, TargetError):
            raise UsageError(str(exc)) from None
        raise UsageError(f"bad port: {exc}") from None
    t = fill_defaults(t)
    if engine == "mysql" and not ns.mysql_user and not (ns.dsn and t.user) and t.user == "root":
        t = replace(t, user="sbtest")  # sysbench's default user
    if ns.ask_password:
        t = t.with_password(ask_password(t.describe()))
    return t


# every number a run takes, checked where it enters: (option, least, most, what 0 means).  Ranges are wide
# enough for any real run and keep the engine's 64-bit counters and timers from overflowing.
YEAR_S = 365 * 24 * 3600
NUMBER_RANGES: dict[str, tuple[str, float, float, str]] = {
    "time": ("--time", 0, YEAR_S, "seconds; 0 = no limit"),
    "events": ("--events", 0, 2**62, "transactions; 0 = no limit"),
    "rate": ("--rate", 0, 1e9, "transactions/s; 0 = closed loop"),
    "report_interval": ("--report-interval", 0, 86400, "seconds; 0 = summary only"),
    "warmup": ("--warmup", 0, YEAR_S, "seconds"),
    "monitor_interval": ("--monitor-interval", 0.05, 3600, "seconds"),
    "reconnect": ("--reconnect", 0, 2**31 - 1, "transactions; 0 = never"),
    "tables": ("--tables", 1, 1_000_000, "tables"),
    "table_size": ("--table-size", 0, 10**12, "rows"),
    "load_hosts": ("--load-hosts", 0, 100_000, "load hosts"),
    # sysbench's distribution knobs: out of these the engine used to put its default in silently
    "rand_spec_iter": ("--rand-spec-iter", 1, 1000, "iterations"),
    "rand_spec_pct": ("--rand-spec-pct", 0.000001, 100, "percent"),
    "rand_spec_res": ("--rand-spec-res", 0.000001, 99.999999, "percent"),
    "rand_pareto_h": ("--rand-pareto-h", 0.000001, 0.999999, "a fraction"),
    "rand_zipfian_exp": ("--rand-zipfian-exp", 0, 1000, "the exponent"),
    "rand_seed": ("--rand-seed", 0, 2**63 - 1, "0 = from the clock"),
}


def check_number_ranges(ns: argparse.Namespace) -> None:
    """One line for a number that is not finite or out of its range (--time inf, --events 1e21).

    >>> check_number_ranges(argparse.Namespace(time=float("inf")))
    Traceback (most recent call last):
    benchtop.errors.UsageError: --time takes seconds; 0 = no limit, from 0 to 31536000, not inf
    """
    for dest, (option, least, most, unit) in NUMBER_RANGES.items():
        value = getattr(ns, dest, None)
        if value is None:
            continue
        if not (math.isfinite(value) and least <= value <= most):
            high = str(most) if isinstance(most, int) else f"{most:.0f}" if most.is_integer() else f"{most:g}"
            raise UsageError(f"{option} takes {unit}, from {least:g} to {high}, not {value:g}"
                             if isinstance(value, float) else
                             f"{option} takes {unit}, from {least:g} to {high}, not {value}")


def ask_password(what: str) -> str:
    """--ask-password: the prompt on the terminal; one line where there is none (a cron job, CI)."""
    if not _has_terminal():
        raise UsageError("--ask-password needs a terminal to ask on: give the password in ~/.my.cnf, ~/.pgpass "
                         "or MYSQL_PWD / PGPASSWORD instead")
    try:
        return getpass.getpass(f"Password for {what}: ")
    except EOFError:
        raise UsageError("--ask-password: no password was typed (end of input)") from None


def _has_terminal() -> bool:
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
        return True
    except OSError:
        return sys.stdin is not None and sys.stdin.isatty()


def _from_namespace(ns: argparse.Namespace, overrides: dict[str, Any], terminal: bool = False) -> RunOptions:
    check_number_ranges(ns)
    engine = engine_name(ns.engine)
    target = resolve_target(ns, engine)
    if ns.tables is not None:
        overrides["tables"] = ns.tables
    if ns.table_size is not None:
        overrides["table_size"] = ns.table_size
    workers = Workers(getattr(ns, "threads", RunOptions.threads))
    problem = workers.problem()
    if problem and hasattr(ns, "time"):  # a run's (prepare's loaders are not checked here)
        raise UsageError(f"--{problem}")
    connections = getattr(ns, "connections", None)
    if connections is not None:
        # --threads event loops carry them; SQLite and fileio keep a thread per connection
        workers = Workers(connections, workers.threads if engine in ("mysql", "postgresql") else 0)
        problem = workers.problem()
        if problem:
            raise UsageError(f"--connections with --engine {engine}: {problem}")
    kw: dict[str, Any] = dict(
        engine=engine,
        target=target,
        workload=ns.workload,
        workload_options=overrides,
        threads=workers.connections,
        loop_threads=workers.loop_threads,
        fileio=fileio_overrides(ns) if engine == "fileio" and hasattr(ns, "file_num") else None,
        pgbench_scripts=tuple(getattr(ns, "pgbench_scripts", None) or ()),
        defines=tuple(getattr(ns, "defines", None) or ()),
    )
    if kw["pgbench_scripts"] and engine == "fileio":
        raise UsageError("--pgbench-script runs SQL: not with --engine fileio")
    if kw["defines"] and not kw["pgbench_scripts"]:
        raise UsageError("--define sets variables of --pgbench-script scripts: give a script")
    if hasattr(ns, "rand_type"):
        kw["rand"] = RandomSettings(type=ns.rand_type, spec_iter=ns.rand_spec_iter, spec_pct=ns.rand_spec_pct,
                                    spec_res=ns.rand_spec_res, pareto_h=ns.rand_pareto_h,
                                    zipfian_exp=ns.rand_zipfian_exp, seed=ns.rand_seed)
    if hasattr(ns, "time"):
        if ns.time is None:
            ns.time = HEADLESS_TIME_S
        for setting in ns.group:
            parse_group_setting(setting)
        if not 0 <= ns.query_timeout < 2_000_000:
            raise UsageError("--query-timeout takes seconds: 0 (none) or more")
        if 0 < ns.query_timeout < 0.001:
            raise UsageError("--query-timeout below a millisecond would time out every statement")
        if not 0 <= ns.percentile <= 100:
            raise UsageError("--percentile must be between 0 and 100")
        if ns.time == 0 and ns.events == 0 and ns.headless:
            raise UsageError("--time 0 needs --events N (or run the TUI and quit with q)")
        if ns.pipeline and engine != "postgresql":
            raise UsageError("--pipeline is for --engine postgres")
        if ns.load_hosts < 0 or (ns.load_hosts and not ns.cluster):
            raise UsageError("--load-hosts N needs --cluster ADDRESS and N >= 1")
        if ns.cluster and engine == "fileio":
            raise UsageError("--cluster does not run --engine fileio (its files are on one machine)")
        metrics_listen, metrics_linger = metrics_settings(ns)
        if 0 < ns.report_interval < MIN_REPORT_INTERVAL_S:
            raise UsageError(f"--report-interval takes 0 (the summary only) or from {MIN_REPORT_INTERVAL_S:g} s, "
                             f"not {ns.report_interval:g}: shorter intervals count too few transactions to mean much")
        if ns.out is not None and not ns.out.strip():
            raise UsageError("--out takes a folder to write the results to, not an empty name")
        try:
            parse_ignore_errors(ns.ignore_errors)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        # a workload file may set the run's default rate and protocol (a captured workload's: benchtop.capture)
        defaults = (RunDefaults() if kw["pgbench_scripts"] or engine == "fileio"
                    else file_run_defaults(ns.workload))
        kw.update(
            metrics_listen=metrics_listen, metrics_linger_s=metrics_linger,
            time_s=ns.time, events=ns.events, rate=defaults.rate if ns.rate is None else ns.rate,
            arrival=defaults.arrival if ns.arrival is None else ns.arrival,
            report_interval=ns.report_interval, percentile=ns.percentile, histogram=ns.histogram,
            warmup_s=ns.warmup, json=ns.json, out=ns.out, headless=runs_headless(ns.headless, ns.json, terminal),
            prepare_statements=not ns.no_prepare and defaults.prepare, pipeline=ns.pipeline, reconnect=ns.reconnect,
            ignore_errors=ns.ignore_errors, instrumentation=ns.instrumentation, stop_if=tuple(ns.stop_if),
            preset=ns.preset, groups=tuple(ns.group), query_timeout_s=ns.query_timeout,
            cluster=ns.cluster or None, load_hosts=ns.load_hosts, worker_priority=ns.worker_priority,
            monitor=MonitorOptions(proxysql=tuple(ns.proxysql), pgbouncer=tuple(ns.pgbouncer),
                                   interval_s=ns.monitor_interval, target=not ns.no_monitor,
                                   admin_dsn=ns.admin_dsn),
        )
    return RunOptions(**kw)


def parse_ignore_errors(spec: str) -> tuple[bool, tuple[int, ...]]:
    """sysbench's --mysql-ignore-errors: 'all', or codes (MySQL errnos or
    5-character SQLSTATEs).

    >>> parse_ignore_errors("all")
    (True, ())
    >>> parse_ignore_errors("1062,1213")
    (False, (1062, 1213))
    """
    spec = (spec or "").strip()
    if not spec or spec == "none":
        return False, ()
    if spec == "all":
        return True, ()
    codes = []
    for item in spec.split(","):
        item = item.strip()
        if item.isdigit():
            codes.append(int(item))
        elif len(item) == 5 and item.isalnum():
            v = 0
            for ch in item.upper():
                v = v * 36 + (int(ch) if ch.isdigit() else ord(ch) - ord("A") + 10)
            codes.append(v)
        else:
            raise ValueError(f"--ignore-errors: {item!r} is neither an error number nor a SQLSTATE")
    return False, tuple(codes)


def parse_listen(spec: str) -> tuple[str, int]:
    """--metrics-listen: HOST:PORT, :PORT or PORT (loopback unless a host is
    named), [::1]:PORT for IPv6.

    >>> parse_listen("9187"), parse_listen(":9187"), parse_listen("0.0.0.0:9187"), parse_listen("[::1]:9187")
    (('127.0.0.1', 9187), ('127.0.0.1', 9187), ('0.0.0.0', 9187), ('::1', 9187))
    >>> parse_listen("host:x")
    Traceback (most recent call last):
    benchtop.errors.UsageError: --metrics-listen takes HOST:PORT (e.g. 127.0.0.1:9187), not 'host:x'
    """
    host, sep, port = spec.strip().rpartition(":")
    if not sep:
        host, port = "", spec.strip()
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--metrics-listen takes HOST:PORT (e.g. 127.0.0.1:9187), not {spec!r}")
    return host, int(port)


def add_metrics_options(p: argparse.ArgumentParser) -> None:
    """--metrics-listen and --metrics-linger: runs, scenarios and the monitor."""
    g = p.add_argument_group("live metrics (Prometheus / OpenMetrics, see docs/metrics.md)")
    g.add_argument("--metrics-listen", dest="metrics_listen", default=None, metavar="HOST:PORT",
                   help="serve live metrics at http://HOST:PORT/metrics (loopback unless a host is named)")
    g.add_argument("--metrics-linger", dest="metrics_linger", type=float, default=METRICS_LINGER_S, metavar="S",
                   help=f"keep serving the final values S seconds after the end (default {METRICS_LINGER_S:g}), "
                        "so the last scrape sees the summary's totals")


def metrics_settings(ns: argparse.Namespace) -> tuple[str | None, float]:
    """(listen, linger) of a parsed command line, checked: one line when wrong."""
    listen = ns.metrics_listen
    if listen is not None:  # an empty one too: it names no address
        parse_listen(listen)
    linger = ns.metrics_linger
    if not 0 <= linger <= MAX_METRICS_LINGER_S:
        raise UsageError(f"--metrics-linger takes seconds from 0 to {MAX_METRICS_LINGER_S:g}, not {linger:g}")
    return listen, float(linger)
