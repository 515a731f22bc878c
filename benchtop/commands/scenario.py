"""`benchtop scenario FILE.toml [--headless] [--out DIR] [--json] [--dry-run]`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from benchtop.scenario.file import Scenario, ScenarioError
from benchtop.scenario.driver import ScenarioDriver, iter_step_lines
from benchtop.errors import OneLineParser as _Parser, UsageError as _UsageError, one_line
from benchtop.commands.exits import user_errors

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAILED_RUN = 0, 1, 2, 3




def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="benchtop scenario", description="Run the steps of a scenario file (TOML).")
    p.add_argument("file", help="scenario .toml file")
    p.add_argument("--headless", action="store_true", help="no TUI: interval lines, step results and a summary")
    p.add_argument("--out", help="results folder (default: the file's `out` setting, else none)")
    p.add_argument("--json", action="store_true", help="JSON Lines instead of text")
    p.add_argument("--dry-run", action="store_true", help="list the steps and the total time, run nothing")
    return p


def _fmt_s(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:g} s"


def plan_text(sc: Scenario) -> str:
    lines = [f"scenario {sc.name}: {len(sc.steps)} step(s), {_fmt_s(sc.total_s)} in all"]
    for s in sc.steps:
        warm = f" + {s.warmup:g}s warm-up" if s.warmup else ""
        lines.append(f"  {s.label(len(sc.steps))}: {s.duration:g}s{warm}" + (f" [mark: {s.mark}]" if s.mark else ""))
    return "\n".join(lines)


def main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout

    try:
        args = build_parser().parse_args(argv)
    except _UsageError as exc:
        print(f"benchtop scenario: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        return _run(args, out)
    except (ScenarioError, _UsageError) as exc:
        print(f"benchtop scenario: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except user_errors() as exc:
        print(f"benchtop scenario: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("benchtop scenario: interrupted", file=sys.stderr)
        return 130


def _instrumentation_error() -> tuple[type[BaseException], ...]:
    try:
        from benchtop.target.instrumentation import InstrumentationError
    except ImportError:
        return ()
    return (InstrumentationError,)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from benchtop.scenario.file import check_instrumentation, load_scenario, parse_options

    sc = load_scenario(Path(args.file))
    folder = args.out or sc.options.get("out")
    parsed = {w: parse_options(sc, w) for w in sc.workloads}
    configs = {w: cfg for w, (cfg, _) in parsed.items()}
    base, ns = parsed[sc.workloads[0]]
    check_instrumentation(sc, base.engine)
    if args.dry_run:
        print(plan_text(sc), file=out)
        return EXIT_OK
    tmpdir: str | None = None
    try:
        if base.engine == "sqlite" and not base.target.database:
            tmpdir = tempfile.mkdtemp(prefix="benchtop-scenario-")
            db = str(Path(tmpdir) / "benchtop.db")
            configs = {w: replace(c, target=replace(c.target, database=db), temp_db=True) for w, c in configs.items()}
        try:
            return _execute(sc, configs, ns, folder, args, out, tmpdir is not None)
        except _instrumentation_error() as exc:
            print(f"benchtop scenario: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _execute(sc: Scenario, configs: dict[str, Any], ns: argparse.Namespace, folder: str | None,
             args: argparse.Namespace, out: TextIO, fresh_db: bool) -> int:
    from benchtop.run.analysis import analysis_text, target_validity
    from benchtop.run.attach import MonitorRecorder, build_pollers, make_instrumentation
    from benchtop.run.options import conn_settings
    from benchtop.run.formats import summary_text
    from benchtop.run.guards import Guard, GuardError
    from benchtop.run.headless import StopFlag
    from benchtop.workload.prepare import check_ready, prepare
    from benchtop.run.results import ResultsWriter
    from benchtop.run.controller import RunController
    from benchtop.scenario.file import all_conditions
    from benchtop.workload import load_program

    programs = {w: load_program(c.workload, c.engine, c.workload_options) for w, c in configs.items()}
    base = configs[sc.workloads[0]]
    if fresh_db:
        prepare(programs[sc.workloads[0]], conn_settings(base), 2, quiet=args.json, out=sys.stderr)
    for w, program in programs.items():
        check_ready(program, conn_settings(configs[w]))
    validity = target_validity(base.engine, base.target)
    # the target itself (unless no_monitor) and any proxysql/pgbouncer DSNs, as for a run
    pollers = build_pollers(base.target, [("proxysql", d) for d in ns.proxysql] + [("pgbouncer", d) for d in ns.pgbouncer],
                            ns.monitor_interval, with_target=not ns.no_monitor)
    try:
        Guard.parse(all_conditions(sc), sources=[p.source.kind for p in pollers])
    except GuardError as exc:
        raise ScenarioError(f"{sc.filename}: {exc}") from None
    instrumentation = (make_instrumentation(base.target, ns.admin_dsn)
                       if any(s.instrumentation for s in sc.steps) else None)
    writer = ResultsWriter(Path(folder)) if folder else None
    recorder = MonitorRecorder(pollers, writer)

    def make_controller(workload: str, threads: int | None, rate: float | None) -> RunController:
        cfg = configs[workload]
        cfg = replace(cfg, threads=cfg.threads if threads is None else threads, rate=cfg.rate if rate is None else rate)
        return RunController(cfg, programs[workload], conn_settings(cfg), None, instrumentation)

    driver = ScenarioDriver(sc, make_controller, writer, validity, base.percentile)
    recorder.listeners.append(driver.observe)
    stop = StopFlag()
    stop.install()
    interactive = not (args.headless or args.json) and out is sys.stdout and sys.stdout.isatty()
    if not interactive:
        recorder.start()
    try:
        if interactive:
            from benchtop.screens.scenario import run_scenario_tui

            run_scenario_tui(driver, recorder.tapped(), Path(folder) if folder else Path.cwd())
        else:
            run_headless(driver, out, stop, base.report_interval or 1.0, json_lines=args.json)
    finally:
        recorder.stop()
        driver.close()
        if writer:
            writer.close()
    summary_d = driver.summary_dict()
    if args.json:
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
        if folder:
            print(f"\nresults: {folder}", file=out, flush=True)
    if writer and writer.failed:
        print(f"benchtop scenario: warning: {writer.failed}; results after that point were not saved", file=sys.stderr)
    if driver.stopped_by.startswith("error:"):
        print(f"benchtop scenario: error: {driver.stopped_by[6:].strip()}", file=sys.stderr)
        return EXIT_FAILED_RUN
    return EXIT_OK


def run_headless(driver: ScenarioDriver, out: TextIO, stop: Any, interval: float = 1.0,
                 json_lines: bool = False, percentile: float | None = None) -> None:
    """Sample on each report tick and at every step boundary (so no interval
    straddles two steps), print lines, tick the driver until it is done."""
    from benchtop.run.formats import interval_line

    pct = percentile if percentile is not None else driver.percentile
    shown = -1

    def announce() -> None:
        nonlocal shown
        i = driver.step_index
        if i != shown and i < len(driver.scenario.steps) and not driver.done:
            shown = i
            step = driver.scenario.steps[i]
            if json_lines:
                print(json.dumps({"type": "step_start", **step.to_dict()}), file=out, flush=True)
            else:
                warm = f" (+{step.warmup:g}s warm-up)" if step.warmup else ""
                print(f"# {step.label(len(driver.scenario.steps))}: {step.duration:g}s{warm}", file=out, flush=True)

    def step_done(result: dict[str, Any]) -> None:
        if json_lines:
            print(json.dumps({"type": "step", **result}), file=out, flush=True)
        else:
            lat = result["latency_ms"]
            print(f"# step {result['index'] + 1} done: tps {result['tps']:.2f} qps {result['qps']:.2f} "
                  f"p95 {lat.get('p95', 0):.3f} ms p99 {lat.get('p99', 0):.3f} ms errors {result['errors']}",
                  file=out, flush=True)

    driver.on_step_done = step_done
    driver.start()
    announce()
    next_tick = time.monotonic() + interval
    last = time.monotonic()
    while not driver.done:
        now = time.monotonic()
        deadline = driver.deadline()
        wake = min(next_tick, deadline) if deadline is not None else next_tick
        wake = max(wake, last + 0.02)  # the engine's clock lags ours a hair: never spin on a due deadline
        if stop.event.wait(max(0.0, wake - now)):
            driver.finish(stop.reason)
            break
        now = last = time.monotonic()
        ctl = driver.controller
        iv = ctl.sample()
        if ctl.history and ctl.history[-1] is iv:
            if json_lines:
                d = iv.to_dict()
                d["t"] = round(driver.scenario_t(iv.t), 3)
                d["step"] = driver.step_index
                print(json.dumps(d), file=out, flush=True)
            else:
                print(interval_line(iv, pct, iv.t - driver.scenario_t(iv.t)), file=out, flush=True)
        before = driver.step_index
        driver.tick()
        if driver.step_index != before or now < next_tick:
            next_tick = now + interval  # intervals restart at each boundary
        else:
            next_tick += interval
            if next_tick < now:
                next_tick = now + interval
        announce()
