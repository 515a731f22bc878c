"""Command line: `benchtop [run] ...`, `prepare`, `cleanup`, `monitor`,
`scenario`, `report`, `replay`.

Every failure a user can cause ends in one line on stderr starting with
"benchtop: error:" and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from benchtop import __version__
from benchtop.target.secrets import scrub_argv
from benchtop.errors import OneLineParser as _Parser, UsageError, one_line
from benchtop.commands.exits import user_errors

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAILED_RUN = 0, 1, 2, 3

SUBCOMMANDS = ("run", "prepare", "cleanup", "monitor", "scenario", "report", "replay", "check")




def _add_target_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("target (passwords: prefer ~/.my.cnf, ~/.pgpass, MYSQL_PWD/PGPASSWORD or --ask-password)")
    g.add_argument("--engine", default="sqlite", help="sqlite (default), null, mysql, postgres")
    g.add_argument("--db", help="SQLite database file (default: a prepared one in a temporary folder)")
    g.add_argument("--dsn", help="mysql://user@host:port/db or postgresql://user@host:port/db")
    for name in ("host", "port", "user", "password", "db", "socket", "ssl"):
        g.add_argument(f"--mysql-{name}", dest=f"mysql_{name}")
    for name in ("host", "port", "user", "password", "db", "sslmode"):
        g.add_argument(f"--pgsql-{name}", dest=f"pgsql_{name}")
    g.add_argument("--ask-password", action="store_true", help="prompt for the password")


def _add_workload_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("workload")
    g.add_argument("--workload", default="oltp_read_write",
                   help="built-in name (oltp_read_write, oltp_point_select, ...) or a .toml file")
    g.add_argument("--tables", type=int)
    g.add_argument("--table-size", dest="table_size", type=int)
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--rand-type", dest="rand_type", default="special",
                   choices=["uniform", "gaussian", "special", "pareto", "zipfian"],
                   help="row access distribution (default special, as sysbench 1.0.20)")
    g.add_argument("--rand-spec-iter", type=int, default=12)
    g.add_argument("--rand-spec-pct", type=float, default=1.0)
    g.add_argument("--rand-spec-res", type=float, default=75.0)
    g.add_argument("--rand-pareto-h", type=float, default=0.2)
    g.add_argument("--rand-zipfian-exp", type=float, default=0.8)
    g.add_argument("--rand-seed", type=int, default=0)


def _add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run")
    g.add_argument("--headless", action="store_true", help="no TUI: interval lines and a summary")
    g.add_argument("--time", type=float, default=10.0, help="seconds to run (0 = no limit); default 10")
    g.add_argument("--events", type=int, default=0, help="stop after this many transactions")
    g.add_argument("--rate", type=float, default=0.0, help="open loop: transactions/s (0 = as fast as possible)")
    g.add_argument("--arrival", default="uniform", choices=["uniform", "poisson"])
    g.add_argument("--report-interval", dest="report_interval", type=float, default=1.0)
    g.add_argument("--percentile", type=float, default=95.0)
    g.add_argument("--histogram", action="store_true")
    g.add_argument("--warmup", type=float, default=0.0, help="seconds excluded from the results")
    g.add_argument("--json", action="store_true", help="JSON Lines instead of text")
    g.add_argument("--out", help="results folder (intervals written as they happen)")
    g.add_argument("--no-prepare", dest="no_prepare", action="store_true", help="text protocol, no prepared statements")
    g.add_argument("--pipeline", action="store_true", help="PostgreSQL pipeline mode")
    g.add_argument("--reconnect", type=int, default=0, help="new connection every N transactions")
    g.add_argument("--ignore-errors", "--mysql-ignore-errors", dest="ignore_errors", default="",
                   help="all, or error codes / SQLSTATEs to skip (deadlocks and lock waits are always retried)")
    g.add_argument("--instrumentation", help="performance_schema / track_io_timing preset to apply")
    g.add_argument("--stop-if", dest="stop_if", action="append", default=[],
                   help="end the load when a condition holds, e.g. 'p99>50ms for 10s', 'errors>1%%'")
    g.add_argument("--admin-dsn", dest="admin_dsn",
                   help="credentials allowed to change instrumentation (default: the target's)")
    m = p.add_argument_group("monitoring during the run")
    m.add_argument("--proxysql", action="append", default=[], metavar="DSN", help="also watch this ProxySQL admin")
    m.add_argument("--pgbouncer", action="append", default=[], metavar="DSN", help="also watch this PgBouncer")
    m.add_argument("--monitor-interval", dest="monitor_interval", type=float, default=2.0)
    m.add_argument("--no-monitor", dest="no_monitor", action="store_true",
                   help="do not poll the target's own statistics")


def build_parser(cmd: str) -> argparse.ArgumentParser:
    p = _Parser(
        prog=f"benchtop {cmd}" if cmd != "run" else "benchtop",
        description="benchtop: a live benchmark controller and monitor for database people.",
        epilog=("Workload options (e.g. --point-selects 5, --range-size 50, --skip-trx on) are passed through to "
                "the workload. Passwords never belong on the command line: use ~/.my.cnf, ~/.pgpass, "
                "MYSQL_PWD/PGPASSWORD or --ask-password. "
                "Subcommands: prepare, cleanup, monitor, scenario, report, replay."),
    )
    p.add_argument("--version", action="version", version=f"benchtop {__version__}")
    _add_target_options(p)
    _add_workload_options(p)
    from benchtop.workload.fileio import add_fileio_options

    add_fileio_options(p)
    if cmd in ("run", "check"):
        _add_run_options(p)
    return p


def _workload_overrides(extra: list[str], workload: str) -> dict[str, Any]:
    """--point-selects 5 / --skip-trx=on -> {'point_selects': '5', ...}, only
    for options the workload declares."""
    from benchtop.workload import option_defaults

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
            raise UsageError(f"unknown option --{name} (see benchtop --help; workload options of {workload}: "
                             + ", ".join("--" + k.replace("_", "-") for k in known) + ")")
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


def _engine_name(raw: str) -> str:
    from benchtop.run.options import ENGINE_ALIASES, ENGINES

    name = ENGINE_ALIASES.get(raw.lower(), raw.lower())
    if name not in ENGINES:
        raise UsageError(f"unknown --engine {raw!r}: use sqlite, null, mysql, postgres or fileio")
    return name


def resolve_target(ns: argparse.Namespace, engine: str) -> Any:
    from benchtop.target import Target, TargetError, fill_defaults, parse_dsn

    if engine == "fileio":
        return Target(kind="fileio", database=ns.dir)
    if engine in ("sqlite", "null"):
        if ns.dsn:
            raise UsageError(f"--dsn does not apply to --engine {engine}")
        return Target(kind=engine, database=ns.db or "")
    if ns.db and engine == "sqlite":
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
        if engine == "mysql":
            port = ns.mysql_port
            t = replace(
                t,
                host=ns.mysql_host or t.host,
                port=int(port) if port else t.port,
                user=ns.mysql_user or t.user,
                password=ns.mysql_password if ns.mysql_password is not None else t.password,
                database=ns.mysql_db or t.database or "sbtest",
                socket=ns.mysql_socket or t.socket,
                ssl=ns.mysql_ssl or t.ssl,
            )
        else:
            port = ns.pgsql_port
            t = replace(
                t,
                host=ns.pgsql_host or t.host,
                port=int(port) if port else t.port,
                user=ns.pgsql_user or t.user,
                password=ns.pgsql_password if ns.pgsql_password is not None else t.password,
                database=ns.pgsql_db or t.database or "sbtest",
                ssl=ns.pgsql_sslmode or t.ssl,
            )
    except ValueError as exc:
        if isinstance(exc, TargetError):
            raise UsageError(str(exc)) from None
        raise UsageError(f"bad port: {exc}") from None
    t = fill_defaults(t)
    if engine == "mysql" and not ns.mysql_user and not (ns.dsn and t.user) and t.user == "root":
        t = replace(t, user="sbtest")  # sysbench's default user
    if ns.ask_password:
        import getpass

        t = t.with_password(getpass.getpass(f"Password for {t.describe()}: "))
    return t


def _run_config(ns: argparse.Namespace, extra: list[str]) -> Any:
    from benchtop.run.options import RunConfig

    engine = _engine_name(ns.engine)
    target = resolve_target(ns, engine)
    overrides = _workload_overrides(extra, ns.workload)
    if ns.tables is not None:
        overrides["tables"] = ns.tables
    if ns.table_size is not None:
        overrides["table_size"] = ns.table_size
    if ns.threads < 1 and getattr(ns, "time", None) is not None:
        raise UsageError("--threads must be at least 1")
    kw: dict[str, Any] = dict(
        engine=engine,
        target=target,
        workload=ns.workload,
        workload_options=overrides,
        threads=ns.threads,
        rand_type=ns.rand_type,
        rand_spec_iter=ns.rand_spec_iter,
        rand_spec_pct=ns.rand_spec_pct,
        rand_spec_res=ns.rand_spec_res,
        rand_pareto_h=ns.rand_pareto_h,
        rand_zipfian_exp=ns.rand_zipfian_exp,
        rand_seed=ns.rand_seed,
    )
    if hasattr(ns, "time"):
        if ns.time < 0 or ns.events < 0 or ns.rate < 0 or ns.report_interval < 0 or ns.warmup < 0:
            raise UsageError("--time, --events, --rate, --report-interval and --warmup must not be negative")
        if not 0 <= ns.percentile <= 100:
            raise UsageError("--percentile must be between 0 and 100")
        if ns.time == 0 and ns.events == 0 and ns.headless:
            raise UsageError("--time 0 needs --events N (or run the TUI and quit with q)")
        if ns.pipeline and engine != "postgresql":
            raise UsageError("--pipeline is for --engine postgres")
        kw.update(
            time_s=ns.time, events=ns.events, rate=ns.rate, arrival=ns.arrival,
            report_interval=ns.report_interval, percentile=ns.percentile, histogram=ns.histogram,
            warmup_s=ns.warmup, json=ns.json, out=ns.out, headless=ns.headless,
            prepare_statements=not ns.no_prepare, pipeline=ns.pipeline, reconnect=ns.reconnect,
            ignore_errors=ns.ignore_errors, instrumentation=ns.instrumentation, stop_if=tuple(ns.stop_if),
        )
    return RunConfig(**kw)


def _program(cfg: Any) -> Any:
    from benchtop.workload import load_program

    return load_program(cfg.workload, cfg.engine, cfg.workload_options)


def cmd_prepare(argv: list[str], drop_first: bool = False) -> int:
    from benchtop.run.options import conn_settings
    from benchtop.workload.prepare import cleanup, prepare

    ns, extra = build_parser("prepare").parse_known_args(argv)
    cfg = _run_config(ns, extra)
    if cfg.engine == "fileio":
        from benchtop.workload.fileio import fileio_overrides, prepare_files

        prepare_files(fileio_overrides(ns))
        return EXIT_OK
    if cfg.engine == "sqlite" and not cfg.target.database:
        raise UsageError("prepare --engine sqlite needs --db FILE")
    program = _program(cfg)
    conn = conn_settings(cfg)
    if drop_first:
        cleanup(program, conn, quiet=True)
    prepare(program, conn, max(1, cfg.threads))
    return EXIT_OK


def cmd_cleanup(argv: list[str]) -> int:
    from benchtop.run.options import conn_settings
    from benchtop.workload.prepare import cleanup

    ns, extra = build_parser("cleanup").parse_known_args(argv)
    cfg = _run_config(ns, extra)
    if cfg.engine == "fileio":
        from benchtop.workload.fileio import cleanup_files, fileio_overrides

        cleanup_files(fileio_overrides(ns))
        return EXIT_OK
    if cfg.engine == "sqlite" and not cfg.target.database:
        raise UsageError("cleanup --engine sqlite needs --db FILE")
    cleanup(_program(cfg), conn_settings(cfg))
    return EXIT_OK


def cmd_run(argv: list[str]) -> int:
    from benchtop.run.options import conn_settings
    from benchtop.run.headless import StopFlag, run_headless
    from benchtop.workload.prepare import prepare
    from benchtop.run.results import ResultsWriter
    from benchtop.run.controller import RunController

    ns, extra = build_parser("run").parse_known_args(argv)
    cfg = _run_config(ns, extra)
    tmpdir: str | None = None
    writer = ResultsWriter(Path(cfg.out)) if cfg.out else None
    try:
        if cfg.engine == "sqlite" and not cfg.target.database:
            # the embedded default: a freshly prepared database that goes away afterwards
            tmpdir = tempfile.mkdtemp(prefix="benchtop-")
            cfg = replace(cfg, target=replace(cfg.target, database=str(Path(tmpdir) / "benchtop.db")), temp_db=True)
            prepare(_program(cfg), conn_settings(cfg), 2, quiet=cfg.json, out=sys.stderr)
        program, conn = _program_and_conn(cfg, ns)
        instrumentation = None
        if cfg.instrumentation or cfg.engine in ("mysql", "postgresql"):
            from benchtop.run.attach import make_instrumentation

            instrumentation = make_instrumentation(cfg.target, ns.admin_dsn)
            if cfg.instrumentation and instrumentation is None:
                raise UsageError("--instrumentation needs --engine mysql or postgres")
        from benchtop.run.attach import MonitorRecorder, build_pollers

        extra = [("proxysql", d) for d in ns.proxysql] + [("pgbouncer", d) for d in ns.pgbouncer]
        pollers = build_pollers(cfg.target, extra, ns.monitor_interval, with_target=not ns.no_monitor)
        recorder = MonitorRecorder(pollers, writer)
        guard = None
        if cfg.stop_if:
            from benchtop.run.guards import Guard

            try:
                guard = Guard.parse(list(cfg.stop_if), sources=[p.source.kind for p in pollers])
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            recorder.listeners.append(guard.observe)
        ctl = RunController(cfg, program, conn, writer, instrumentation)
        ctl.guard = guard
        if cfg.instrumentation and instrumentation is not None:
            from benchtop.target.instrumentation import InstrumentationError

            try:
                instrumentation.apply(cfg.instrumentation)
            except InstrumentationError as exc:
                ctl.close()
                raise UsageError(str(exc)) from None
            ctl.note("instrumentation", f"instrumentation {cfg.instrumentation}")
        headless = cfg.headless or not sys.stdout.isatty()
        if headless:
            recorder.start()
        try:
            if headless:
                stop = StopFlag()
                stop.install()
                summary = run_headless(ctl, sys.stdout, stop,
                                       after=lambda s: _finish_results(cfg, ctl, recorder, writer))
            else:
                from benchtop.screens.launch import run_tui

                ctl.start()
                summary = run_tui(ctl, sources=recorder.tapped() or None,
                                  save_dir=Path(cfg.out) if cfg.out else Path.cwd())
                if summary is not None:
                    print(ctl.summary_text())
                    print(_finish_results(cfg, ctl, recorder, writer)[1])
            if writer and writer.failed:
                print(f"benchtop: warning: {writer.failed}; results after that point were not saved", file=sys.stderr)
            if summary is not None and summary.stopped_by.startswith("error:"):
                print(f"benchtop: error: {summary.stopped_by[7:].strip()}", file=sys.stderr)
                return EXIT_FAILED_RUN
            return EXIT_OK
        finally:
            recorder.stop()
            ctl.close()
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _program_and_conn(cfg: Any, ns: argparse.Namespace) -> tuple[Any, Any]:
    """The compiled workload and how workers connect, checked to be ready
    (tables there, server reachable, files prepared) before any worker starts."""
    from benchtop.run.options import conn_settings
    from benchtop.workload.prepare import check_ready

    if cfg.engine == "fileio":
        from benchtop.workload.fileio import check_files, fileio_conn, fileio_overrides, fileio_program

        spec = fileio_overrides(ns)
        for note in spec.notes:
            print(f"benchtop: note: {note}", file=sys.stderr)
        check_files(spec)
        return fileio_program(spec), fileio_conn(spec)
    program = _program(cfg)
    conn = conn_settings(cfg)
    check_ready(program, conn, cfg.target.describe())
    return program, conn


def _finish_results(cfg: Any, ctl: Any, recorder: Any, writer: Any) -> tuple[dict[str, Any], str]:
    """Validity of the target's settings and steady state of the run, added to
    summary.json and to what is printed."""
    from benchtop.run.analysis import analyse, analysis_text, enrich_results, target_validity, validity_from_snapshot

    validity = None
    for snap in recorder.latest.values():
        validity = validity or validity_from_snapshot(snap)
    if validity is None and cfg.engine != "fileio":  # durability of files is the file system's
        validity = target_validity(cfg.engine, cfg.target)
    if writer is not None and not writer.failed and (writer.folder / "summary.json").exists():
        try:
            enrich_results(writer.folder, validity)
        except OSError as exc:
            print(f"benchtop: warning: cannot update summary.json: {exc.strerror}", file=sys.stderr)
    extra = analyse([iv.to_dict() for iv in ctl.history])
    if validity is not None:
        extra["validity"] = validity.to_dict()
    return extra, analysis_text(extra)


def _dispatch(argv: list[str]) -> int:
    cmd = argv[0] if argv and argv[0] in SUBCOMMANDS else "run"
    rest = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
    if cmd == "run":
        return cmd_run(rest)
    if cmd == "prepare":
        return cmd_prepare(rest)
    if cmd == "cleanup":
        return cmd_cleanup(rest)
    if cmd == "monitor":
        from benchtop.commands.monitor import main as monitor_main

        def tui(pollers: Any, args: Any) -> int:
            from benchtop.screens.launch import monitor_tui

            return monitor_tui(pollers, args)

        return monitor_main(rest, run_tui=tui)
    if cmd == "scenario":
        from benchtop.commands.scenario import main as scenario_main

        return scenario_main(rest)
    if cmd == "report":
        from benchtop.commands.report import main as report_main

        return report_main(rest)
    if cmd == "replay":
        from benchtop.commands.replay import main as replay_main

        return replay_main(rest)
    if cmd == "check":
        from benchtop.commands.check import main as check_main

        return check_main(rest)
    raise UsageError(f"unknown command {cmd!r}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        scrub_argv()
    try:
        return _dispatch(args)
    except UsageError as exc:
        print(f"benchtop: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except user_errors() as exc:
        print(f"benchtop: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("benchtop: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): nothing left to tell it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
