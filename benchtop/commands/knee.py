"""`benchtop knee [SCENARIO.toml] [run options] [--min-threads N --max-threads N | --min-rate R --max-rate R]
[--p99-limit MS] [--error-limit PCT] [--tolerance PCT]`: the setting with the highest throughput under the
limits, by search (benchtop.knee), on one live run; a line per probe, then the answer."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from benchtop.commands import subcommands_epilog
from benchtop.commands.drive import Drive, on_terminal
from benchtop.errors import OneLineParser, UsageError
from benchtop.knee.answer import answer_text, ms_text
from benchtop.knee.runner import KneeController
from benchtop.knee.search import KneeSearch
from benchtop.knee.settings import KneeOptions, SearchSettingError, add_knee_options, knee_options, namespace_values
from benchtop.options.run_options import RunOptions, build_parser, options_from_argv, runs_headless
from benchtop.record.folder import SUMMARY, default_results_folder
from benchtop.run.headless import LinePrinter
from benchtop.scenario.file import Scenario, ScenarioError, build_options, load_scenario
from benchtop.session import RunSession

DESCRIPTION = ("Find the knee: the threads (or arrival rate) with the highest throughput whose p99 stays under "
               "--p99-limit, by search on one live run (each probe until its throughput and p99 are steady), with a "
               "Universal Scalability Law fit of the probes.")


def _knee_parser(full: bool, epilog: str = "") -> argparse.ArgumentParser:
    if full:  # the help: the run's options and the search's
        p = build_parser("run", epilog)
        p.prog, p.description = "benchtop knee", DESCRIPTION
        p.usage = "benchtop knee [SCENARIO.toml] [options]"
    else:
        p = OneLineParser(prog="benchtop knee", add_help=False, allow_abbrev=False)
    add_knee_options(p)
    return p


def parse(argv: Sequence[str], terminal: bool = False) -> tuple[RunOptions, KneeOptions, float]:
    """The run's options, the search's and its time budget (--time; 0: none)
    from a command line, and the scenario file it names first (whose
    [search] table the command line overrides).  `terminal`: stdout is a
    terminal (RunOptions.headless, as for a run)."""
    args = list(argv)
    if any(a in ("-h", "--help") for a in args):
        _knee_parser(True, subcommands_epilog()).parse_args(["--help"])
    path = Path(args.pop(0)) if args and not args[0].startswith("-") else None
    try:
        scenario = load_scenario(path) if path is not None else None
        ns, rest = _knee_parser(False).parse_known_args(args)
        return _parse(scenario, ns, rest, terminal)
    except ScenarioError as exc:  # FILE:LINE: what
        raise UsageError(str(exc)) from None


def _parse(scenario: Scenario | None, ns: argparse.Namespace, rest: list[str],
           terminal: bool) -> tuple[RunOptions, KneeOptions, float]:
    values: dict[str, Any] = dict(scenario.search or {}) if scenario is not None else {}
    values.update(namespace_values(ns))
    if scenario is not None:
        # the file describes the target and the workload; the command line adds where the results go
        outer = OneLineParser(prog="benchtop knee", add_help=False, allow_abbrev=False)
        outer.add_argument("--headless", action="store_true")
        outer.add_argument("--json", action="store_true")
        outer.add_argument("--out")
        outer.add_argument("--time", type=float)
        known, left = outer.parse_known_args(rest)
        if left:
            raise UsageError(f"with a scenario file the run's options come from the file: {left[0]} is not taken here "
                             "(only --headless, --json, --out and --time)")
        opts = build_options(scenario, out=known.out or scenario.options.get("out"))
        opts = replace(opts, json=known.json, headless=runs_headless(known.headless, known.json, terminal))
        rest = ["--time", str(known.time)] if known.time is not None else []
    else:
        opts = options_from_argv("run", rest, terminal=terminal)
    try:
        knee = knee_options(values, opts.workers.limit)
    except SearchSettingError as exc:
        given = namespace_values(ns)
        if scenario is None or (exc.key in given if exc.key is not None else bool(given)):
            raise UsageError(str(exc)) from None
        raise scenario.table_error("search", str(exc), exc.key) from None
    threads = opts.threads
    if knee.rate and "--threads" not in rest:
        threads = int(knee_options({}, opts.workers.limit).search.high)  # enough workers for any rate the range asks
    first = knee.search.low
    budget = 0.0
    if any(a == "--time" or a.startswith("--time=") for a in rest):
        budget = opts.time_s if scenario is None else float(rest[1])
    opts = replace(opts, time_s=0.0, events=0,
                   threads=threads if knee.rate else int(first), rate=first if knee.rate else 0.0)
    return opts, knee, budget


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    opts, knee, budget = parse(argv, on_terminal(out))
    if not opts.out:  # every run is saved: a new folder when none is named
        opts = replace(opts, out=str(default_results_folder("knee")))
    search = KneeSearch(knee.search)
    with RunSession(opts, progress=sys.stderr if not opts.json else None) as session:
        opts = session.options
        ctl = KneeController(session.controller(), search, knee.timing, opts.warmup_s, budget)
        printer = ProbePrinter(out, opts.json, knee)
        drive = Drive(session, out, prog="benchtop knee")
        drive.run(ctl, LinePrinter(out, opts.json, opts.percentile, intervals=False), ctl.program.txn_names,
                  printer.banner_text(ctl.label))
        if not opts.headless:
            for notice in ctl.notices():  # the probes, for the terminal's scrollback
                printer.line(notice.text)
        result = knee_result(search, ctl)
        writer = session.writer
        if writer is not None and not writer.failed:
            _add_to_summary(writer.folder, result, writer)
        printer.answer(result)
    return drive.end(ctl.stepper.failed or None, printed="answer",
                     cut_short="" if result["complete"] else result["reason"])


def knee_result(search: KneeSearch, ctl: KneeController) -> dict[str, Any]:
    """summary.json's `knee`: best, usl, probes, how the search went and
    whether it finished (`complete`: False when a signal, the time budget,
    the probe budget or an error ended it first)."""
    d = search.to_dict()
    d["reason"] = ctl.stepper.reason or search.reason
    d["elapsed_s"] = round(ctl.elapsed_s, 1)
    d["answer"] = answer_text(d)
    return d


def _add_to_summary(folder: Path, knee: dict[str, Any], writer: Any) -> None:
    """The run's summary.json gains `knee`, and the probes as its steps (so
    a report draws them against threads)."""
    try:
        summary = json.loads((folder / SUMMARY).read_text())
    except (OSError, json.JSONDecodeError):
        summary = {}
    summary["knee"] = knee
    key = "rate" if knee["setting"] == "rate" else "threads"
    summary["steps"] = [{"index": i, key: p[key], "tps": p["tps"], "latency_ms": {"p99": p["p99_ms"]},
                         "errors": p["errors"], "time_s": p["time_s"]} for i, p in enumerate(knee["probes"])]
    writer.write_json(SUMMARY, summary)


class ProbePrinter:
    """A line per probe (text or JSON Lines) and the answer at the end."""

    def __init__(self, out: TextIO, json_lines: bool, knee: KneeOptions) -> None:
        self.out = out
        self.json_lines = json_lines
        self.knee = knee

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def banner_text(self, label: str) -> str:
        """What the search is about to do ("" for JSON Lines)."""
        s = self.knee.search
        if self.json_lines:
            return ""
        what = f"rate {s.low:g}..{s.high:g}/s" if s.rate else f"threads {s.low:g}..{s.high:g}"
        limits = []
        if s.p99_limit_ms is not None:
            limits.append(f"p99 limit {ms_text(s.p99_limit_ms)} ms")
        if s.error_limit is not None:
            limits.append(f"error limit {100 * s.error_limit:g}%")
        t = self.knee.timing
        return (f"benchtop knee {label}: {what}, {', '.join(limits) or 'no latency limit'}, "
                f"tolerance {100 * s.tolerance:g}%; probes of {t.min_s:g}-{t.max_s:g} s until steady "
                f"(TPS cv < {100 * t.cv:g}%, the TPS and p99 of {t.parts} parts within {100 * t.tolerance:g}%"
                f"{' (the p99 of the limit)' if s.p99_limit_ms is not None else ''}, "
                f"{t.min_transactions:,} transactions)"
                + (f"; the answer held {s.confirm_s:g} s once more" if s.confirm_s > 0 else ""))

    def line(self, text: str) -> None:
        if not self.json_lines:
            self._print(text)

    def answer(self, result: dict[str, Any]) -> None:
        if self.json_lines:
            self._print(json.dumps({"type": "knee", **result}))
        else:
            self._print("")
            self._print(result["answer"])
