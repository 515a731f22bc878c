"""`benchtop monitor`: watch servers and proxies with no load at all.

Safe against production: each source sends only SELECT/SHOW/SET SESSION
statements on its own connection, polls are modest (default every 2 s) and
bounded by a deadline, and an outage shows as `ok: false` snapshots while the
poller reconnects.  `--headless` prints a line per poll (JSON Lines with
`--json`, benchtop.panels.headless); otherwise the TUI (benchtop.screens)
takes over.  This module is the argument handling.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Callable, Sequence, TextIO

from benchtop.commands import subcommands_epilog
from benchtop.errors import OneLineParser as _Parser
from benchtop.errors import UsageError as _UsageError
from benchtop.errors import bounded
from benchtop.metrics import served_monitor
from benchtop.options.run_options import add_metrics_options, metrics_settings
from benchtop.panels.headless import run_headless
from benchtop.record.folder import MONITOR, ResultsWriter
from benchtop.record.monitor import MonitorRecord
from benchtop.run.attach import TappedPoller
from benchtop.sources.base import SourceError, SourceSnapshot
from benchtop.sources.os import OSSource
from benchtop.sources.poller import Poller, SourcePoller
from benchtop.sources.registry import build_sources, is_local
from benchtop.target import TargetError
from benchtop.target.leftovers import leftover_warning

# the TUI gets pollers, or pollers whose snapshots a recorder taps on the way
RunTui = Callable[[Sequence[Poller], argparse.Namespace], int]

_KIND_FLAGS = (("proxysql", "proxysql"), ("pgbouncer", "pgbouncer"), ("mysql", "mysql"), ("pgsql", "postgresql"))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="benchtop monitor",
        description="Watch ProxySQL, PgBouncer, MySQL/MariaDB and PostgreSQL with read-only polls.",
        epilog="Passwords: prefer ~/.my.cnf, ~/.pgpass or MYSQL_PWD/PGPASSWORD over DSNs on the command line."
               "\n\n" + subcommands_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for flags, example in (
        (("--proxysql",), "ProxySQL admin, e.g. proxysql://admin@127.0.0.1:6032"),
        (("--pgbouncer",), "PgBouncer, e.g. pgbouncer://user@127.0.0.1:6432"),
        (("--mysql",), "MySQL/MariaDB, e.g. mysql://user@127.0.0.1:3306"),
        (("--pgsql", "--postgresql"), "PostgreSQL, e.g. postgresql://user@127.0.0.1:5432/db"),
    ):
        p.add_argument(
            *flags, dest=flags[0][2:], action="append", default=[], metavar="DSN", help=f"{example} (repeatable)"
        )
    p.add_argument(
        "--os",
        dest="os",
        action="store_true",
        default=None,
        help="also watch this host's CPU/disk (default: when a target is local)",
    )
    p.add_argument("--no-os", dest="os", action="store_false", help="do not watch this host")
    p.add_argument("--interval", type=bounded(0.05, 3600, "seconds"), default=2.0, metavar="S",
                   help="seconds between polls (default 2)")
    p.add_argument(
        "--timeout",
        type=bounded(0.01, 3600, "seconds"),
        default=None,
        metavar="S",
        help="statement/connect timeout per source (default: the interval, 1..5 s)",
    )
    p.add_argument("--count", type=int, default=None, metavar="N", help="stop after N polls")
    p.add_argument("--headless", action="store_true", help="print to stdout instead of opening the TUI")
    p.add_argument("--json", action="store_true", help="with --headless: JSON Lines, one snapshot per poll")
    p.add_argument(
        "--allow-changes", action="store_true", help="allow instrumentation changes from the TUI (off in monitor mode)"
    )
    p.add_argument("--out", metavar="DIR", help="record every snapshot to DIR/monitor.jsonl (benchtop replay DIR)")
    add_metrics_options(p)
    return p


def _check(args: argparse.Namespace) -> list[tuple[str, str]]:
    if args.count is not None and args.count < 1:
        raise _UsageError("--count must be at least 1")
    if args.json and not args.headless:
        raise _UsageError("--json needs --headless")
    specs = [(kind, dsn) for flag, kind in _KIND_FLAGS for dsn in getattr(args, flag)]
    if not specs and not args.os:
        raise _UsageError("nothing to watch: give at least one of --proxysql, --pgbouncer, --mysql, --pgsql DSN")
    return specs


def main(
    argv: list[str],
    run_tui: RunTui | None = None,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run `benchtop monitor`; `out` replaces stdout and setting `stop` ends a
    headless run early (for embedding), both with exit code 0."""
    out = out or sys.stdout
    stop = stop or threading.Event()
    try:
        args = build_parser().parse_args(argv)
        specs = _check(args)
        listen, linger = metrics_settings(args)
        timeout = args.timeout if args.timeout is not None else min(5.0, max(1.0, args.interval))
        sources = build_sources(specs, timeout_s=timeout)
        # The OS panel only describes the server when the server runs here.
        if args.os if args.os is not None else any(is_local(s.target) for s in sources):
            # the first local database server's processes: their CPU and I/O (pg_activity's columns)
            local = [s.target for s in sources if s.kind in ("mysql", "postgresql") and is_local(s.target)
                     and not s.target.socket]
            sources.append(OSSource(timeout_s=timeout, server_port=local[0].effective_port if local else None))
    except (_UsageError, TargetError) as exc:
        print(f"benchtop monitor: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)

    # settings a killed run left changed on a watched server: said at the start
    for s in sources:
        left = leftover_warning(s.target) if s.kind in ("mysql", "postgresql") else None
        if left is not None:
            print(left, file=sys.stderr, flush=True)
    pollers = [SourcePoller(s, interval=args.interval) for s in sources]
    try:
        for p in pollers:
            try:
                p.connect()
            except SourceError as exc:
                print(f"benchtop monitor: {p.name}: cannot connect: {exc}", file=sys.stderr)
                return 1
        try:
            writer = _recorder(args.out)
        except OSError as exc:  # ResultsError: one line saying why
            print(f"benchtop monitor: {exc}", file=sys.stderr)
            return 1
        with served_monitor(listen, linger, stop) as observe:
            if args.headless:
                return run_headless(pollers, out, stop, args.interval, args.count, args.json, writer, observe)
            taps: list[Callable[[SourceSnapshot], None]] = [] if observe is None else [observe]
            if writer is not None:
                taps.append(lambda snap: writer.append(MONITOR, MonitorRecord(round(snap.t, 3), (snap,)).to_dict()))

            def tap(snap: SourceSnapshot) -> None:
                for each in taps:
                    each(snap)

            run_tui = run_tui or _monitor_tui
            return run_tui([TappedPoller(p, tap) for p in pollers] if taps else pollers, args)
    except _UsageError as exc:  # --metrics-listen on a port that is taken
        print(f"benchtop monitor: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        for p in pollers:
            p.close()


def _monitor_tui(pollers: Sequence[Poller], args: argparse.Namespace) -> int:
    # the TUI is imported only here: the headless monitor never loads textual
    from benchtop.screens.launch import monitor_tui

    return monitor_tui(pollers, args)


def _recorder(folder: str | None) -> ResultsWriter | None:
    """A results folder for --out (created 0700), or None."""
    if not folder:
        return None
    from pathlib import Path

    return ResultsWriter(Path(folder))
