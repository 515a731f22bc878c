"""`benchtop workload from-capture DIR`: the workload file that runs like a
capture (benchtop capture), printed to stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchtop.capture.model import CaptureError, read_capture
from benchtop.capture.twin import twin_toml
from benchtop.commands import subcommands_epilog
from benchtop.errors import OneLineParser


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="benchtop workload", description="Workload files made from other things.",
                      epilog=subcommands_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    fc = sub.add_parser("from-capture", help="print the workload that runs like a capture (benchtop capture)",
                        description="benchtop workload from-capture DIR: print a workload file whose statements, "
                                    "weights, values and default --rate are those of the capture in DIR.")
    fc.add_argument("dir", metavar="DIR", help="a folder written by benchtop capture --out DIR")
    fc.add_argument("--name", default="", help="the workload's name (default: the folder's name)")
    return p


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    folder = Path(args.dir)
    try:
        cap = read_capture(folder)
        text = twin_toml(cap, args.name or folder.resolve().name)
    except (CaptureError, ValueError) as exc:
        print(f"benchtop workload: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
