"""`benchtop ab [SCENARIO.toml] [run options] --a "OPTIONS" --b "OPTIONS" [--rounds N] [--round-time S]
[--until-confident --resolution 2% --max-time S] [--turn S] [--out DIR]`: is B really faster than A?
Rounds in which both sides' runs take turns (or one run of each side in a random order: benchtop.ab),
each run a normal headless run in this process with its own results folder (DIR/round-01-a/), then B/A
per metric with its 95% interval, in DIR/ab.json.  A scenario
file's top-level options are the shared ones and its [ab] table the comparison's (benchtop.ab.settings);
the command line wins over both.  `compare_sides` is the comparison without the command: the pytest
plugin's benchtop_ab fixture runs it too."""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from benchtop.ab.duet import duet_refusal, halved, split_text
from benchtop.ab.result import AbResult, closing_lines, decided
from benchtop.ab.rounds import Plan, RoundRunner, SideFigures
from benchtop.ab.settings import (
    KEYS,
    MAX_TIME_RANGE,
    MAX_TIME_S,
    ROUND_TIME_RANGE,
    ROUND_TIME_S,
    ROUNDS,
    ROUNDS_RANGE,
    AbSettings,
    ab_settings,
    resolution,
    turn,
)
from benchtop.ab.sides import Side, owned_option, parse_side
from benchtop.ab.stats import METHOD
from benchtop.ab.turns import TURN_S
from benchtop.ab.view import Progress
from benchtop.commands import subcommands_epilog
from benchtop.commands.ab_compare import AbComparison
from benchtop.commands.ab_runs import SideRuns
from benchtop.commands.drive import on_terminal
from benchtop.commands.exits import EXIT_FAILED_RUN, EXIT_OK
from benchtop.errors import Interrupted, OneLineParser, UsageError, bounded
from benchtop.options.run_options import RunOptions, argv_from_mapping, options_from_argv, runs_headless
from benchtop.record.controller import Sample
from benchtop.record.folder import default_results_folder
from benchtop.run.controller import worker_priority
from benchtop.scenario.file import Scenario, build_options, load_scenario, scenario_values
from benchtop.stopping import StopFlag
from benchtop.target import fill_defaults, parse_dsn
from benchtop.target.settings import SettingsControl

DESCRIPTION = ("Compare two sides, A and B, that differ in benchtop options (--threads 8, --point-selects 14, "
               "--dsn ...) or server settings (--set NAME=VALUE, applied with --admin-dsn before the side's run and "
               "restored after it): rounds in which both sides' runs take turns of --turn seconds, one paused while "
               "the other runs (sides that set server settings: one run of each in a random order), each after a "
               f"warm-up that is not counted, then the ratio B/A per metric with its 95% interval ({METHOD}). The "
               "other options are shared by both sides.")
WARMUP_S = "1"  # a side's warm-up unless the options give --warmup


def _resolution(text: str) -> float:
    """'2%' or 0.02, as an argparse type."""
    try:
        return resolution(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _turn(text: str) -> float:
    """'0.5', '250ms' or 0, as an argparse type."""
    try:
        return turn(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_ab_options(p: argparse.ArgumentParser) -> None:
    # every default None: a scenario's [ab] table gives what the command line does not
    g = p.add_argument_group("comparison (or a scenario file's [ab] table)")
    g.add_argument("--a", default=None, metavar="OPTIONS",
                   help="side A's options and --set NAME=VALUE settings, one quoted string (\"\": the shared options)")
    g.add_argument("--b", default=None, metavar="OPTIONS", help="side B's, the same way")
    g.add_argument("--rounds", type=bounded(*ROUNDS_RANGE, "rounds", integer=True), default=None,
                   help=f"rounds of one run of each side (default {ROUNDS}; with --until-confident, the most)")
    g.add_argument("--round-time", dest="round_time", type=bounded(*ROUND_TIME_RANGE, "seconds"), default=None,
                   metavar="S", help=f"seconds each side runs per round, after its warm-up (default {ROUND_TIME_S:g}; "
                                     f"--warmup S sets the warm-up, default {WARMUP_S} s)")
    g.add_argument("--until-confident", dest="until_confident", action="store_true", default=None,
                   help="more rounds until the TPS interval excludes 1 or lies within --resolution")
    g.add_argument("--resolution", type=_resolution, default=None,
                   help="the smallest difference that matters (default 2%%): an interval within it says no difference")
    g.add_argument("--max-time", dest="max_time", type=bounded(*MAX_TIME_RANGE, "seconds"), default=None,
                   metavar="S", help=f"--until-confident stops before a round that would end after S s "
                                     f"(default {MAX_TIME_S:g})")
    g.add_argument("--duet", action="store_true", default=None,
                   help="A and B on two targets (--dsn, --engine) run at the same time, each with half the stated "
                        "threads, so that the host's noise falls on both alike; each round is one pair")
    g.add_argument("--turn", type=_turn, default=None, metavar="S",
                   help=f"within a round the sides take turns of S s, both runs open and one paused while the other "
                        f"runs, so that a neighbour's load falls on both alike (default {TURN_S:g}; 0: one whole run "
                        "of each side after the other, as sides that set server settings always run)")
    g.add_argument("--seed", type=int, default=None, help="the seed of the rounds' random order (default: new)")
    g.add_argument("--out", help="the comparison's folder: ab.json and a results folder per round and side")


def _parser(full: bool) -> argparse.ArgumentParser:
    if full:  # the help: the comparison's options; the shared ones are the run's
        p = argparse.ArgumentParser(
            prog="benchtop ab", description=DESCRIPTION,
            usage='benchtop ab [SCENARIO.toml] [shared run options] --a "OPTIONS" --b "OPTIONS" [--rounds N] '
                  '[--round-time S] [--until-confident --resolution 2%%] [--turn S] [--out DIR]',
            epilog="The shared options are benchtop run's (benchtop --help), except --time (--round-time), --json "
                   "and --out (the comparison's). Each side's run writes its own results folder, "
                   "DIR/round-01-a/ and so on; DIR/ab.json holds the rounds and the comparison. A scenario file "
                   "gives the shared options at its top level and these in an [ab] table (a, b, rounds, round_time, "
                   "until_confident, resolution, max_time, duet, turn, out, seed); the command line wins.\n\n"
                   + subcommands_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    else:
        p = OneLineParser(prog="benchtop ab", add_help=False, allow_abbrev=False)
    _add_ab_options(p)
    return p


@dataclass(frozen=True, slots=True)
class ComparisonSetup:
    """A comparison ready to run: the shared run options, each side, its run
    options and the control of its server settings (None: it sets none),
    the plan, the folder and the seed of the order; `split`, what a duet
    did to the sides' threads."""

    shared: RunOptions
    sides: Mapping[str, Side]
    options: Mapping[str, RunOptions]
    controls: Mapping[str, SettingsControl | None]
    plan: Plan
    folder: Path
    seed: int
    split: str = ""


def prepare_comparison(shared: Sequence[str], settings: AbSettings) -> ComparisonSetup:
    """The comparison of `settings`' sides over the shared run options
    (a command line); UsageError (one line) before anything runs, and
    the folder made."""
    owned = owned_option(list(shared))
    if owned:
        raise UsageError(f"{owned} is not an option of benchtop ab")
    sides = {"a": parse_side("a", settings.a), "b": parse_side("b", settings.b)}
    options = {name: _side_options(shared, side, settings.plan.round_time_s) for name, side in sides.items()}
    split = ""
    plan = settings.plan
    if plan.duet or any(side.settings for side in sides.values()):
        plan = replace(plan, turn_s=0.0)  # a setting holds for every session of its server: whole runs
    if plan.duet:
        refused = duet_refusal(options, sides)
        if refused:
            raise UsageError(refused)
        stated, options = options, {name: halved(opts) for name, opts in options.items()}
        split = split_text(stated, options)
    controls = {name: _settings_control(sides[name], opts) for name, opts in options.items()}
    folder = Path(settings.out or default_results_folder("ab"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the comparison's folder {folder}: {exc.strerror}") from None
    seed = settings.seed if settings.seed is not None else random.SystemRandom().randrange(2 ** 32)
    return ComparisonSetup(_side_options(shared, None, plan.round_time_s), sides, options, controls,
                           plan, folder, seed, split)


def compare_sides(c: ComparisonSetup, stop: StopFlag, out: TextIO | None) -> tuple[AbResult, str]:
    """Runs the rounds, restores every side's settings, writes ab.json;
    the result and what failed ("": nothing).  `out` takes the banner and a
    line per round (None: nothing is printed)."""
    if out is not None:
        print(_banner(c), file=out, flush=True)
    comparison = _comparison(c, stop, (lambda line: print(line, file=out, flush=True)) if out is not None
                             else (lambda line: None))
    comparison.run()
    return _written(comparison, c)


def _compare_on_screen(c: ComparisonSetup, stop: StopFlag) -> tuple[AbResult, str]:
    """compare_sides under the comparison's screen; the terminal keeps the
    banner and a line per round once it closes."""
    turns = (f"taking turns of {c.plan.turn_s:g} s, one side paused while the other runs: runs last "
             f"{2 * c.plan.round_time_s:g} s, TPS is over the time each ran") if c.plan.takes_turns else ""
    progress = Progress(_title(c), c.plan, note=c.split or turns)
    lines: list[str] = []
    comparison = _comparison(c, stop, lines.append, progress)
    # the TUI is imported only here: headless comparisons never load textual
    from benchtop.screens.ab import AbApp

    error = AbApp(comparison, progress.view()).run()
    if error is not None:
        raise error
    print(_banner(c))
    for line in lines:
        print(line)
    return _written(comparison, c)


def _comparison(c: ComparisonSetup, stop: StopFlag, line: Callable[[str], None],
                progress: Progress | None = None) -> AbComparison:
    # the turns' lengths drawn apart from the rounds' order, both from the seed
    runs = SideRuns(c.options, c.folder, stop, live=progress.side_read if progress is not None else _nowhere,
                    rng=random.Random(f"turns {c.seed}"))
    runner = RoundRunner(c.sides, c.plan, runs.one, lambda side: c.controls[side.name], stop,
                         decided=lambda rounds, confidence: decided(rounds, c.plan.resolution, confidence), rng=random.Random(c.seed),
                         run_pair=_pairs(runs, c.plan))
    return AbComparison(runner, c.controls, c.folder, c.seed, stop, line, progress)


def _pairs(runs: SideRuns, plan: Plan) -> Callable[[tuple[Side, Side], int], dict[str, SideFigures] | None] | None:
    """How a round runs both sides at once: a duet's together, else taking
    turns (None: one whole run of each side after the other)."""
    if plan.duet:
        return runs.pair
    if plan.takes_turns:
        return lambda pair, index: runs.turns(pair, index, plan.turn_s)
    return None


def _nowhere(side: str, sample: Sample | None) -> None:
    """Headless: the runs' intervals are shown nowhere (a line per round says what they measured)."""


def _written(comparison: AbComparison, c: ComparisonSetup) -> tuple[AbResult, str]:
    result = comparison.result()
    result.write(c.folder)
    return result, comparison.failed


def parse(argv: Sequence[str]) -> tuple[list[str], AbSettings]:
    """The shared run options (a command line) and the comparison's
    settings, from a command line and the scenario file it names first."""
    args = list(argv)
    if any(a in ("-h", "--help") for a in args):
        _parser(True).parse_args(["--help"])
    path = Path(args.pop(0)) if args and not args[0].startswith("-") else None
    ns, shared = _parser(False).parse_known_args(args)
    given = {k: getattr(ns, k) for k in KEYS if getattr(ns, k) is not None}
    try:
        if path is None:
            return shared, ab_settings(given)
        scenario = load_scenario(path)
        return _scenario_argv(scenario) + shared, _scenario_settings(scenario, given)
    except ValueError as exc:  # ScenarioError among them: FILE:LINE: what
        raise UsageError(str(exc)) from None


def _scenario_argv(scenario: Scenario) -> list[str]:
    """The file's top-level options as a command line (checked first as any
    scenario's are, so a problem names its line)."""
    build_options(scenario)
    values = scenario_values(scenario)
    for key in ("time", "out"):  # the comparison's: --round-time, and [ab]'s out
        values.pop(key, None)
    return argv_from_mapping(values)


def _scenario_settings(scenario: Scenario, given: Mapping[str, object]) -> AbSettings:
    if scenario.ab is None:
        raise UsageError(f"{scenario.filename}: no [ab] table: benchtop ab takes a scenario file with one "
                         "(a, b, rounds, round_time, ...)")
    values = dict(scenario.ab)
    if "out" not in values and isinstance(scenario.options.get("out"), str):
        values["out"] = scenario.options["out"]
    values.update(given)
    try:
        return ab_settings(values)
    except ValueError as exc:
        problem = str(exc)
        key = next((k for k in scenario.ab if problem.startswith(k + " ") or f"'{k}'" in problem), None)
        if key is None or key in given:
            raise
        raise scenario.table_error("ab", problem, key) from None


def main(argv: Sequence[str]) -> int:
    shared, settings = parse(argv)
    comparison = prepare_comparison(shared, settings)
    stop = StopFlag()
    stop.install()
    if runs_headless("--headless" in shared, False, on_terminal(sys.stdout)):
        result, failed = compare_sides(comparison, stop, sys.stdout)
    else:
        result, failed = _compare_on_screen(comparison, stop)
    print("")
    for line in closing_lines(result):
        print(line)
    print(f"results: {comparison.folder}", flush=True)
    if failed:
        print(f"benchtop ab: error: {failed}", file=sys.stderr)
        return EXIT_FAILED_RUN
    if stop.signum is not None:
        stopped = Interrupted(stop.signum)
        print(f"benchtop ab: interrupted ({stopped.signal_name}): the comparison above covers "
              f"the {len(result.rounds)} round(s) that finished", file=sys.stderr)
        return stopped.exit_code
    return EXIT_OK


def _side_options(shared: Sequence[str], side: Side | None, round_time: float) -> RunOptions:
    """The run options of a side's runs: the shared ones, then the side's
    (which win), a default warm-up, the round's time, headless."""
    argv = ["--warmup", WARMUP_S, *shared, *(side.argv if side else ()), "--time", f"{round_time:g}", "--headless"]
    try:
        opts = options_from_argv("run", argv)
    except UsageError as exc:
        raise UsageError(f"--{side.name}: {exc}" if side is not None else str(exc)) from None
    return _steady_priority(opts)


def _steady_priority(opts: RunOptions) -> RunOptions:
    """--worker-priority auto settled once for the whole comparison by
    where the server is (idle when it is on this host), not by how busy the
    host is as each run starts, as a run alone settles it: a neighbour that
    came and went put some rounds' workers at normal priority and others'
    idle, and beside a CPU hog workers at normal priority contend with the
    server's threads, which spread the rounds' ratios (A/B of
    oltp_read_only, 12 rounds of 3 s beside noisy-neighbour.sh: rounds
    0.68-1.08 with normal workers, 0.87-0.99 and one 1.10 with idle ones)."""
    if opts.worker_priority != "auto":
        return opts
    idle, _ = worker_priority(opts, others_busy=lambda: None)
    return replace(opts, worker_priority="idle" if idle else "normal")


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


def _title(c: ComparisonSetup) -> str:
    """What is compared: the workload, the target(s), each side's options."""
    targets = {name: o.target.describe() for name, o in c.options.items()}
    # two targets are the sides' own options (--dsn, --db, --engine), which say them
    where = f" on {targets['a']}" if targets["a"] == targets["b"] else ""
    what = {name: side.shown or "the shared options" for name, side in c.sides.items()}
    return f"{c.shared.workload}{where}: A = {what['a']}; B = {what['b']}"


def _banner(c: ComparisonSetup) -> str:
    plan, opts = c.plan, c.shared
    count = (f"until the TPS interval decides (at most {plan.max_time_s:g} s)" if plan.until_confident
             else f"{plan.rounds} rounds")
    if c.split:
        how = f"{count} of A and B together, {plan.round_time_s:g} s after a {opts.warmup_s:g} s warm-up\n{c.split}"
    elif plan.takes_turns:
        how = (f"{count} of A and B taking turns of {plan.turn_s:g} s, the first drawn at random, {plan.round_time_s:g} s "
               f"each after a {opts.warmup_s:g} s warm-up")
    else:
        how = f"{count} of A and B in a random order, {plan.round_time_s:g} s each after a {opts.warmup_s:g} s warm-up"
    return f"benchtop ab {_title(c)}\n{how}\n"
