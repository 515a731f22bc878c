"""`benchtop ab [run options] --a "OPTIONS" --b "OPTIONS" [--rounds N] [--round-time S]
[--until-confident --resolution 2% --max-time S] [--out DIR]`: is B really faster than A?  Rounds of one
run of each side in a random order (benchtop.ab), each run a normal headless run in this process with its
own results folder (DIR/round-01-a/), then B/A per metric with its 95% interval, in DIR/ab.json."""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchtop.ab.result import AbResult, closing_lines, decided, round_line
from benchtop.ab.rounds import Plan, Round, RoundRunner, SideFigures
from benchtop.ab.sides import Side, owned_option, parse_side
from benchtop.ab.stats import METHOD
from benchtop.commands import subcommands_epilog
from benchtop.commands.drive import Drive
from benchtop.commands.exits import EXIT_ERROR, EXIT_FAILED_RUN, EXIT_OK
from benchtop.commands.run import finish_results, validity_before
from benchtop.errors import Interrupted, OneLineParser, UsageError, bounded
from benchtop.options.run_options import RunOptions, options_from_argv
from benchtop.record.folder import default_results_folder
from benchtop.record.samples import RunSummary
from benchtop.run.headless import LinePrinter
from benchtop.session import RunSession
from benchtop.stopping import StopFlag
from benchtop.target import fill_defaults, parse_dsn
from benchtop.target.settings import SettingsControl, SettingsError

DESCRIPTION = ("Compare two sides, A and B, that differ in benchtop options (--threads 8, --point-selects 14, "
               "--dsn ...) or server settings (--set NAME=VALUE, applied with --admin-dsn before the side's run and "
               "restored after it): rounds of one run of each in a random order, each after a warm-up that is not "
               f"counted, then the ratio B/A per metric with its 95% interval ({METHOD}). The other options are "
               "shared by both sides.")
ROUNDS = 10
ROUND_TIME_S = 10.0
WARMUP_S = "1"  # a side's warm-up unless the options give --warmup
MAX_TIME_S = 600.0


class RunFailed(Exception):
    """A side's run ended on an error; one line."""


def _resolution(text: str) -> float:
    """'2%' or 0.02."""
    pct = text.endswith("%")
    value: float = bounded(0.0001, 100.0 if pct else 1.0, "a resolution (2% or 0.02)")(text.rstrip("%"))
    return value / 100 if pct else value


def _add_ab_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("comparison")
    g.add_argument("--a", default="", metavar="OPTIONS",
                   help="side A's options and --set NAME=VALUE settings, one quoted string (\"\": the shared options)")
    g.add_argument("--b", default="", metavar="OPTIONS", help="side B's, the same way")
    g.add_argument("--rounds", type=bounded(1, 10000, "rounds", integer=True), default=None,
                   help=f"rounds of one run of each side (default {ROUNDS}; with --until-confident, the most)")
    g.add_argument("--round-time", dest="round_time", type=bounded(0.1, 86400, "seconds"), default=ROUND_TIME_S,
                   metavar="S", help=f"seconds each side runs per round, after its warm-up (default {ROUND_TIME_S:g}; "
                                     f"--warmup S sets the warm-up, default {WARMUP_S} s)")
    g.add_argument("--until-confident", dest="until_confident", action="store_true",
                   help="more rounds until the TPS interval excludes 1 or lies within --resolution")
    g.add_argument("--resolution", type=_resolution, default=0.02,
                   help="the smallest difference that matters (default 2%%): an interval within it says no difference")
    g.add_argument("--max-time", dest="max_time", type=bounded(1, 10 ** 7, "seconds"), default=MAX_TIME_S,
                   metavar="S", help=f"--until-confident stops before a round that would end after S s "
                                     f"(default {MAX_TIME_S:g})")
    g.add_argument("--seed", type=int, default=None, help="the seed of the rounds' random order (default: new)")
    g.add_argument("--out", help="the comparison's folder: ab.json and a results folder per round and side")


def _parser(full: bool) -> argparse.ArgumentParser:
    if full:  # the help: the comparison's options; the shared ones are the run's
        p = argparse.ArgumentParser(
            prog="benchtop ab", description=DESCRIPTION,
            usage='benchtop ab [shared run options] --a "OPTIONS" --b "OPTIONS" [--rounds N] [--round-time S] '
                  '[--until-confident --resolution 2%%] [--out DIR]',
            epilog="The shared options are benchtop run's (benchtop --help), except --time (--round-time), --json "
                   "and --out (the comparison's). Each side's run writes its own results folder, "
                   "DIR/round-01-a/ and so on; DIR/ab.json holds the rounds and the comparison.\n\n"
                   + subcommands_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    else:
        p = OneLineParser(prog="benchtop ab", add_help=False, allow_abbrev=False)
    _add_ab_options(p)
    return p


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if any(a in ("-h", "--help") for a in args):
        _parser(True).parse_args(["--help"])
    ns, shared = _parser(False).parse_known_args(args)
    owned = owned_option(shared)
    if owned:
        raise UsageError(f"{owned} is not an option of benchtop ab")
    sides = {"a": parse_side("a", ns.a), "b": parse_side("b", ns.b)}
    base = _side_options(shared, None, ns.round_time)
    options = {name: _side_options(shared, side, ns.round_time) for name, side in sides.items()}
    controls = {name: _settings_control(sides[name], opts) for name, opts in options.items()}
    plan = Plan(ns.rounds if ns.rounds is not None or ns.until_confident else ROUNDS, ns.round_time,
                ns.until_confident, ns.resolution, ns.max_time)
    folder = Path(ns.out or default_results_folder("ab"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the comparison's folder {folder}: {exc.strerror}") from None
    seed = ns.seed if ns.seed is not None else random.SystemRandom().randrange(2 ** 32)
    stop = StopFlag()
    stop.install()
    print(_banner(sides, plan, base), flush=True)

    def run_side(side: Side, index: int) -> SideFigures | None:
        return _run_side(options[side.name], folder, f"round-{index:02d}-{side.name}", stop)

    runner = RoundRunner(sides, plan, run_side, lambda side: controls[side.name], stop,
                         decided=lambda rounds: decided(rounds, plan.resolution),
                         on_round=lambda r: _round_done(r, plan, folder, sides, seed, runner), rng=random.Random(seed))
    failed = ""
    try:
        runner.run()
    except (RunFailed, SettingsError) as exc:
        failed = str(exc)
    finally:
        # already restored after each run: this catches a restore that failed there
        failed = "; ".join(why for why in [failed, *map(_restore, controls.values())] if why)
    result = AbResult(sides, plan, runner.rounds, runner.stopped_by or ("error" if failed else ""), seed)
    result.write(folder)
    print("")
    for line in closing_lines(result):
        print(line)
    print(f"results: {folder}", flush=True)
    if failed:
        print(f"benchtop ab: error: {failed}", file=sys.stderr)
        return EXIT_FAILED_RUN
    if stop.signum is not None:
        stopped = Interrupted(stop.signum)
        print(f"benchtop ab: interrupted ({stopped.signal_name}): the comparison above covers "
              f"the {len(runner.rounds)} round(s) that finished", file=sys.stderr)
        return stopped.exit_code
    return EXIT_OK


def _side_options(shared: list[str], side: Side | None, round_time: float) -> RunOptions:
    """The run options of a side's runs: the shared ones, then the side's
    (which win), a default warm-up, the round's time, headless."""
    argv = ["--warmup", WARMUP_S, *shared, *(side.argv if side else ()), "--time", f"{round_time:g}", "--headless"]
    try:
        return options_from_argv("run", argv)
    except UsageError as exc:
        raise UsageError(f"--{side.name}: {exc}" if side is not None else str(exc)) from None


def _settings_control(side: Side, opts: RunOptions) -> SettingsControl | None:
    """The control of the side's server settings (its --admin-dsn's
    credentials, on its target), or None when it sets none."""
    if not side.settings:
        return None
    flag = f"--{side.name}"
    if opts.engine not in ("mysql", "postgresql"):
        raise UsageError(f"{flag}: --set changes a server's settings: it needs --engine mysql or postgres")
    if not opts.monitor.admin_dsn:
        raise UsageError(f"{flag}: --set needs --admin-dsn, credentials with the rights to change server settings")
    admin = fill_defaults(parse_dsn(opts.monitor.admin_dsn))
    admin = replace(admin, kind=opts.target.kind, database=admin.database or opts.target.database)
    bouncer = fill_defaults(parse_dsn(opts.monitor.pgbouncer[0])) if opts.monitor.pgbouncer else None
    control = SettingsControl(admin, bouncer)
    restart = control.needs_restart([name for name, _ in side.settings])
    if restart:
        raise UsageError(f"{flag}: {', '.join(restart)} take(s) effect only after a server restart, "
                         "which a comparison round does not do")
    return control


def _restore(control: SettingsControl | None) -> str:
    """What could not be put back ("" when all was, or nothing was changed)."""
    try:
        if control is not None:
            control.restore()
    except SettingsError as exc:
        return f"{exc}: put them back with `benchtop restore` and the same --dsn and --admin-dsn"
    return ""


def _run_side(opts: RunOptions, folder: Path, name: str, stop: StopFlag) -> SideFigures | None:
    """One side's run of a round, headless and silent, into folder/name;
    None when a stop signal cut it short (its figures do not count)."""
    extra: dict[str, Any] = {}
    with RunSession(replace(opts, out=str(folder / name)), progress=None) as session:
        ctl = session.controller()
        early = validity_before(session, ctl)

        def ended(summary: RunSummary | None) -> None:
            if summary is not None:
                extra.update(finish_results(session, ctl, early, summary)[0])

        drive = Drive(session, sys.stdout, prog="benchtop ab", stop=stop)
        summary = drive.run(ctl, LinePrinter(None, False, opts.percentile, intervals=False), ctl.program.txn_names,
                            ended=ended)
        writer = session.writer
    if stop.event.is_set():
        return None
    if summary is None or summary.stopped_by.startswith("error:"):
        why = summary.stopped_by[6:].strip() if summary is not None else "nothing was measured"
        raise RunFailed(f"{name}: {why}")
    if writer is not None and writer.failed:
        raise RunFailed(f"{name}: {writer.failed}")
    return _figures(summary, extra, name)


def _figures(summary: RunSummary, extra: dict[str, Any], name: str) -> SideFigures:
    lat = summary.latency_ms
    cpu = summary.costs.client_cpu if summary.costs is not None else None
    verdict = (extra.get("steady_state") or {}).get("verdict") or {}
    return SideFigures(name, summary.tps, lat.get("p50", 0.0), lat.get("p95", 0.0), lat.get("p99", 0.0),
                       cpu.per_op_us if cpu is not None else None, summary.error_count,
                       verdict.get("limit"), str(verdict.get("evidence") or ""))


def _round_done(r: Round, plan: Plan, folder: Path, sides: dict[str, Side], seed: int, runner: RoundRunner) -> None:
    """A round's line, and ab.json rewritten: a comparison killed later keeps what it measured."""
    print(round_line(r, plan.rounds if not plan.until_confident else None), flush=True)
    AbResult(sides, plan, list(runner.rounds), "", seed).write(folder)


def _banner(sides: dict[str, Side], plan: Plan, opts: RunOptions) -> str:
    what = {name: side.text.strip() or "the shared options" for name, side in sides.items()}
    count = (f"until the TPS interval decides (at most {plan.max_time_s:g} s)" if plan.until_confident
             else f"{plan.rounds} rounds")
    return (f"benchtop ab {opts.workload} on {opts.target.describe()}: A = {what['a']}; B = {what['b']}\n"
            f"{count} of A and B in a random order, {plan.round_time_s:g} s each after a {opts.warmup_s:g} s warm-up\n")
