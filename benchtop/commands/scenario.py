"""`benchtop scenario FILE.toml [--headless] [--out DIR] [--json] [--dry-run]`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from benchtop.commands import subcommands_epilog
from benchtop.commands.drive import Drive, on_terminal
from benchtop.commands.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE, reporting_errors
from benchtop.errors import OneLineParser as _Parser
from benchtop.errors import UsageError as _UsageError
from benchtop.options.run_options import RunOptions, add_metrics_options, metrics_settings, runs_headless
from benchtop.record.analysis import analysis_text, target_validity
from benchtop.record.folder import default_results_folder
from benchtop.record.formats import summary_text
from benchtop.run.controller import RunController
from benchtop.run.guards import Guard, GuardError
from benchtop.run.headless import LinePrinter
from benchtop.scenario.controller import ScenarioController
from benchtop.scenario.driver import ScenarioDriver, iter_step_lines
from benchtop.scenario.file import (
    Scenario,
    ScenarioError,
    all_conditions,
    build_options,
    check_instrumentation,
    load_scenario,
)
from benchtop.scenario.hooks import HookRunner
from benchtop.session import RunSession
from benchtop.target import fill_defaults, parse_dsn
from benchtop.target.instrumentation import InstrumentationError
from benchtop.target.settings import SettingsControl, change_statements


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="benchtop scenario", description="Run the steps of a scenario file (TOML).",
                epilog=subcommands_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="scenario .toml file")
    p.add_argument("--headless", action="store_true", help="no TUI: interval lines, step results and a summary")
    p.add_argument("--out", help="results folder (default: the file's `out` setting, else a new folder "
                   "under $BENCHTOP_RESULTS or ~/.local/share/benchtop/runs)")
    p.add_argument("--json", action="store_true", help="JSON Lines instead of text")
    p.add_argument("--dry-run", action="store_true", help="list the steps and the total time, run nothing")
    add_metrics_options(p)
    return p


def _fmt_s(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:g} s"


def plan_text(sc: Scenario, engine: str = "") -> str:
    lines = [f"scenario {sc.name}: {len(sc.steps)} step(s), {_fmt_s(sc.total_s)} in all"]
    current: dict[str, object] = {}
    for s in sc.steps:
        warm = f" + {s.warmup:g}s warm-up" if s.warmup else ""
        lines.append(f"  {s.label(len(sc.steps))}: {s.duration:g}s{warm}" + (f" [mark: {s.mark}]" if s.mark else ""))
        for name, value in s.settings:
            if current.get(name) != value:
                current[name] = value
                lines += [f"      change: {sql}" for sql in change_statements(engine, name, value)]
        lines += [f"      before: {h.describe()}" for h in s.before]
        lines += [f"      after: {h.describe()}" for h in s.after]
    if current:
        lines.append(f"  at the end: {', '.join(current)} restored to the values found at the start")
        if sc.restart is not None:
            lines.append(f"  settings that need a restart run: {sc.restart.describe()}")
    return "\n".join(lines)


def changes_warning(sc: Scenario) -> str:
    """What a scenario will change on the server, said before it starts."""
    names = sorted({n for s in sc.steps for n, _ in s.settings})
    hooks = sum(len(s.before) + len(s.after) for s in sc.steps)
    parts = []
    if names:
        parts.append(f"changes server settings {', '.join(names)} (restored at the end)")
    if hooks:
        parts.append(f"runs {hooks} hook(s)")
    return f"benchtop scenario: note: this scenario {' and '.join(parts)}; --dry-run lists every change" if parts else ""


def main(argv: list[str], out: TextIO | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except _UsageError as exc:
        print(f"benchtop scenario: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return reporting_errors("benchtop scenario", lambda: _run(args, out or sys.stdout), usage=(ScenarioError,))


def _run(args: argparse.Namespace, out: TextIO) -> int:
    sc = load_scenario(Path(args.file))
    if sc.ab is not None:
        # an [ab] table: a comparison's rounds, not steps
        from benchtop.commands.ab import main as ab_main

        if args.dry_run:
            print(f"scenario {sc.name}: a comparison (benchtop ab): "
                  + ", ".join(f"{k} = {v!r}" for k, v in sc.ab.items()), file=out)
            return EXIT_OK
        return ab_main([args.file, *(["--out", args.out] if args.out else [])])
    if sc.search is not None:
        # a [search] table: the knee search decides the steps
        from benchtop.commands.knee import main as knee_main

        if args.dry_run:
            print(f"scenario {sc.name}: a knee search (benchtop knee): "
                  + ", ".join(f"{k} = {v}" for k, v in sc.search.items()), file=out)
            return EXIT_OK
        flags = [f for f, on in (("--headless", args.headless), ("--json", args.json)) if on]
        return knee_main([args.file, *flags, *(["--out", args.out] if args.out else [])], out)
    # every run is saved: a new folder when neither the command line nor the file names one
    folder = args.out or sc.options.get("out") or str(default_results_folder(sc.name))
    listen, linger = metrics_settings(args)
    # JSON Lines and TUI or headless are the command line's, decided as for a run
    configs = {w: replace(build_options(sc, w, out=folder), metrics_listen=listen, metrics_linger_s=linger,
                          json=args.json, headless=runs_headless(args.headless, args.json, on_terminal(out)))
               for w in sc.workloads}
    base = configs[sc.workloads[0]]
    check_instrumentation(sc, base.engine)
    if args.dry_run:
        print(plan_text(sc, base.engine), file=out)
        return EXIT_OK
    if sc.changes_settings:
        print(changes_warning(sc), file=sys.stderr)
    try:
        with RunSession(base, instrumentation=any(s.instrumentation for s in sc.steps), stop_if=(),
                        progress=sys.stderr if not args.json else None) as session:
            drive = Drive(session, out, prog="benchtop scenario")
            failed = _execute(sc, configs, drive)
    except InstrumentationError as exc:
        print(f"benchtop scenario: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return drive.end(failed)


def _execute(sc: Scenario, configs: dict[str, RunOptions], drive: Drive) -> str | None:
    """Runs the steps; the error that ended them, if one did."""
    session = drive.session
    base = session.options
    # every workload on the session's target (the embedded default's temporary database too)
    configs = {w: replace(c, target=base.target, temp_db=base.temp_db) for w, c in configs.items()}
    for opts in configs.values():
        session.ready(opts)
    validity = target_validity(base.engine, base.target)
    try:
        Guard.parse(all_conditions(sc), sources=[p.source.kind for p in session.recorder.pollers])
    except GuardError as exc:
        raise ScenarioError(f"{sc.filename}: {exc}") from None

    def make_controller(workload: str, threads: int | None, rate: float | None) -> RunController:
        return session.controller(configs[workload].for_step(threads, rate), results=False)

    writer = session.writer
    # ALTER SYSTEM, SET GLOBAL, CHECKPOINT need rights the benchmark user rarely
    # has: admin_dsn names them, for settings and SQL hooks alike
    admin = fill_defaults(parse_dsn(base.monitor.admin_dsn)) if base.monitor.admin_dsn else base.target
    admin = replace(admin, kind=base.target.kind, database=admin.database or base.target.database)
    settings = None
    if any(s.settings for s in sc.steps):
        if base.engine not in ("mysql", "postgresql"):
            raise ScenarioError(f"{sc.filename}: settings sweeps need engine = \"mysql\" or \"postgres\"")
        bouncer = fill_defaults(parse_dsn(base.monitor.pgbouncer[0])) if base.monitor.pgbouncer else None
        settings = SettingsControl(admin, bouncer)
    hooks = (HookRunner(replace(base, target=admin).conn_settings(), wait_with=base.conn_settings())
             if sc.changes_settings or sc.restart else None)
    driver = ScenarioDriver(sc, make_controller, writer, validity, base.percentile, settings=settings, hooks=hooks,
                            validity_of=lambda: target_validity(base.engine, base.target))
    try:
        return _drive(driver, drive)
    finally:
        driver.restore_settings()


def _drive(driver: ScenarioDriver, drive: Drive) -> str | None:
    session, out = drive.session, drive.out
    base, writer = session.options, session.writer
    session.recorder.listeners.append(driver.observe)
    drive.run(ScenarioController(driver, base.report_interval, base.target.describe()),
              LinePrinter(out, base.json, base.percentile, base.report_interval > 0))
    summary_d = driver.summary_dict()
    if base.json:
        print(json.dumps(summary_d), file=out, flush=True)
    else:
        print("", file=out)
        if driver.summary is not None:
            print(summary_text(driver.summary, base.percentile, base.histogram), file=out)
            print("", file=out)
        print("Steps:", file=out)
        for line in iter_step_lines(driver.results, base.percentile):
            print("    " + line, file=out)
        print(f"    stopped by: {driver.stopped_by or 'done'}", file=out)
        extra = analysis_text(summary_d)
        if extra:
            print("\n" + extra, file=out)
        if writer:
            print("", file=out)  # the results folder's line (Drive.end) stands apart
    if driver.restore_error:
        print(f"benchtop scenario: warning: {driver.restore_error}", file=sys.stderr)
    return driver.stopped_by[6:].strip() if driver.stopped_by.startswith("error:") else None
