"""`benchtop report DIR... [--html FILE] [--png DIR]`: without --html or
--png, a terminal table with a TPS sparkline per run. A capture's folder is its
statements' table; two captures (production's and one taken while its twin
ran) are compared statement by statement."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from benchtop.commands import subcommands_epilog
from benchtop.errors import OneLineParser as _Parser
from benchtop.errors import bounded
from benchtop.errors import UsageError as _UsageError
from benchtop.capture.model import CaptureError, read_capture
from benchtop.report.ab import ab_plots, is_ab_folder, load_ab
from benchtop.report.capture import capture_text, is_capture_folder
from benchtop.report.capture_compare import compare_text
from benchtop.report.data import ReportError, load_runs


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="benchtop report", description="Compare benchmark results folders in a table and plots.",
                epilog=subcommands_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="+", metavar="DIR",
                   help="results folders (from --out); a capture's folder (benchtop capture --out), or two of "
                        "them to compare a twin's run with production")
    p.add_argument("--html", metavar="FILE", help="write one self-contained HTML file")
    p.add_argument("--png", metavar="DIR", help="write the plots as PNG files into DIR")
    p.add_argument("--title", default="benchtop report", help="title of the HTML report")
    p.add_argument("--width", type=bounded(10, 1000, "columns", integer=True), default=60,
                   help="sparkline width in the terminal (default 60)")
    return p


def main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        args = build_parser().parse_args(argv)
    except _UsageError as exc:
        print(f"benchtop report: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        # a comparison's folder (benchtop ab: ab.json beside a folder per round and side) is reported as one
        folders = [Path(f) for f in args.folders]
        # a capture's folder (benchtop capture --out) is its statements' table
        captures = [f for f in folders if is_capture_folder(f)]
        folders = [f for f in folders if f not in captures]
        if captures and folders:
            # a run's results hold its own latencies, not the server's per-statement figures
            print(f"benchtop report: error: {folders[0]} is not a capture: capture the twin's run too (benchtop "
                  f"capture --out DIR while it runs) and give benchtop report {captures[0]} DIR", file=sys.stderr)
            return 2
        if len(captures) == 1:
            print(capture_text(read_capture(captures[0]), str(captures[0])), file=out)
        for f in captures[1:]:
            # each later capture against the first (production's)
            print(compare_text(read_capture(captures[0]), read_capture(f), str(captures[0]), str(f)), file=out)
        if captures:
            return 0
        comparisons = [load_ab(f) for f in folders if is_ab_folder(f)]
        runs = load_runs([f for f in folders if not is_ab_folder(f)])
        for problem in (p for r in runs for p in r.problems):
            print(f"benchtop report: warning: {problem}", file=sys.stderr)
        if not args.html and not args.png:
            from benchtop.report.text import report_text

            print(report_text(runs, args.width, comparisons), file=out)
            return 0
        from benchtop.report.plots import build_plots, render_png

        plots = (build_plots(runs) if runs else []) + ab_plots(comparisons)
        if args.png:
            folder = Path(args.png)
            folder.mkdir(parents=True, exist_ok=True)
            for plot in plots:
                path = folder / f"{plot.name}.png"
                path.write_bytes(render_png(plot))
                print(path, file=out)
        if args.html:
            from benchtop.report.html import report_html

            Path(args.html).write_text(report_html(runs, plots, args.title, comparisons))
            print(args.html, file=out)
        return 0
    except (ReportError, CaptureError) as exc:
        print(f"benchtop report: error: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:  # matplotlib missing: plots.install_hint()
        print(f"benchtop report: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"benchtop report: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1
