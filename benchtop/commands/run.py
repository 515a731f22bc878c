"""`benchtop [run] ...`: one benchmark run, headless (interval lines and a
summary) or in the TUI, assembled by a RunSession and driven by a Drive."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from benchtop.commands import subcommands_epilog
from benchtop.commands.drive import Drive, on_terminal
from benchtop.options.run_options import RunOptions, options_from_argv
from benchtop.record.analysis import (
    Validity,
    analyse,
    analysis_text,
    enrich_results,
    target_validity,
    validity_from_snapshot,
)
from benchtop.record.costs import costs_text
from benchtop.record.folder import SUMMARY, default_results_folder
from benchtop.record.samples import RunSummary
from benchtop.run.controller import RunController
from benchtop.run.headless import LinePrinter, print_summary
from benchtop.session import RunSession


def main(argv: Sequence[str]) -> int:
    opts = options_from_argv("run", argv, terminal=on_terminal(sys.stdout), epilog=subcommands_epilog())
    if not opts.out:  # every run is saved: a new folder when none is named
        opts = replace(opts, out=str(default_results_folder(opts.workload)))
    with RunSession(opts, progress=sys.stderr) as session:
        ctl = session.controller()
        opts = session.options
        early = validity_before(session, ctl)
        drive = Drive(session, sys.stdout)

        def ended(summary: RunSummary | None) -> None:
            if summary is None:
                return
            extra, text = finish_results(session, ctl, early, summary)
            if opts.headless:
                print_summary(summary, ctl.program, opts, sys.stdout, extra, text)
            else:  # the dashboard's summary, once the terminal is back to normal
                print(ctl.summary_text())
                print(text)

        printer = LinePrinter(sys.stdout, opts.json, opts.percentile, opts.report_interval > 0)
        summary = drive.run(ctl, printer, ctl.program.txn_names, "" if opts.json else _banner(ctl), ended)
    failed = summary.stopped_by[7:].strip() if summary is not None and summary.stopped_by.startswith("error:") else None
    return drive.end(failed)


def interval_dicts(ctl: RunController) -> list[dict[str, Any]]:
    """The counted intervals as their JSON objects, with each one's verdict."""
    out = [iv.to_dict() for iv in ctl.history]
    verdicts = getattr(ctl, "verdicts", None)
    if verdicts is not None:
        for d, v in zip(out, verdicts.verdicts):
            d["verdict"] = v.to_dict()
    return out


def _banner(ctl: RunController) -> str:
    opts: RunOptions = ctl.options
    rate = f", rate {opts.rate:g}/s ({opts.arrival} arrivals)" if opts.rate > 0 else ""
    who = f"{opts.threads} thread(s){rate}"
    if ctl.groups:
        who = "; ".join(f"{name} {threads} thread(s) " + (f"at {r:g}/s" if r > 0 else "closed loop")
                        for name, threads, r in ctl.groups)
    lines = [f"benchtop {ctl.label}: {who}, --rand-type={opts.rand.type}"]
    if opts.warmup_s > 0:
        lines.append(f"Warming up for {opts.warmup_s:g} seconds...")
    return "\n".join(lines)


def validity_before(session: RunSession, ctl: RunController) -> Validity | None:
    """The target's settings verdict read before the load when nothing else
    will read them: at the end the server may not answer."""
    opts = session.options
    if opts.engine == "fileio":  # durability of files is the file system's
        return None
    if any(p.source.kind == opts.target.kind for p in session.recorder.pollers):
        return None  # its snapshots carry the settings
    if ctl.meter is not None and opts.target.kind in ("mysql", "postgresql"):
        return None  # the meter's first reading carries them, one connection fewer
    return target_validity(opts.engine, opts.target)


def finish_results(session: RunSession, ctl: RunController, early: Validity | None,
                    summary: RunSummary) -> tuple[dict[str, Any], str]:
    """Validity of the target's settings and steady state of the run, added to
    summary.json and to what is printed (with the run's per-operation costs,
    sizes and totals, which the summary already holds)."""
    writer = session.writer
    validity = None
    # the monitor's latest snapshots, else the cost meter's first (None: no verdict from it)
    first = ctl.meter.first_snapshot if ctl.meter is not None else None
    for snap in [*session.recorder.latest.values(), first]:
        validity = validity or validity_from_snapshot(snap)
    validity = validity or early
    if writer is not None and not writer.failed and (writer.folder / SUMMARY).exists():
        try:
            enrich_results(writer.folder, validity)
        except OSError as exc:
            print(f"benchtop: warning: cannot update summary.json: {exc.strerror}", file=sys.stderr)
    extra = analyse(interval_dicts(ctl), events=[ev.to_dict() for ev in ctl.timeline])
    if validity is not None:
        extra["validity"] = validity.to_dict()
    text = "\n".join(line for line in [analysis_text(extra), *costs_text(summary.costs)] if line)
    return extra, text
