"""`benchtop capture`: what a MySQL/MariaDB or PostgreSQL server, or the
MySQL servers behind a ProxySQL, run over a window, read-only (SELECTs on
performance_schema, pg_stat_statements, pg_stat_activity, pg_stats,
information_schema and ProxySQL's stats schema; nothing is enabled or
reset), written to DIR/capture.json for `benchtop workload from-capture DIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchtop.capture.model import CaptureSourceError, write_capture
from benchtop.capture.window import SAMPLE_EVERY_S, Reader, capture
from benchtop.commands import subcommands_epilog
from benchtop.errors import OneLineParser, UsageError, bounded
from benchtop.sources.registry import parse_spec
from benchtop.target import TargetError


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="benchtop capture",
        description="Capture a server's statement mix, rates, rows and values over a window, read-only, "
                    "for `benchtop workload from-capture DIR`.",
        epilog="MariaDB's prepared statements (binary protocol) are in no digest: with the statement history on "
               "(events_statements_current and _history_long consumers) their executions are shared among their "
               "texts, which the processlist names while they run (it needs the PROCESS privilege; polled about 270 "
               "times a second while such executions run, about 12% of one server core and a quarter of one core "
               "here for the window).\n\n"
               "Passwords: prefer ~/.my.cnf, ~/.pgpass or MYSQL_PWD/PGPASSWORD over DSNs on the command line."
               "\n\n" + subcommands_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--mysql", metavar="DSN", help="MySQL/MariaDB, e.g. mysql://user@127.0.0.1:3306/db "
                                                      "(its statements in that schema); with --proxysql, the "
                                                      "backend whose schema holds the tables (their columns)")
    which.add_argument("--pgsql", "--postgresql", dest="pgsql", metavar="DSN",
                       help="PostgreSQL with pg_stat_statements, e.g. postgresql://user@127.0.0.1:5432/db")
    p.add_argument("--proxysql", metavar="DSN", help="ProxySQL's admin interface, e.g. "
                                                     "proxysql://stats@127.0.0.1:6032 (its query digests)")
    p.add_argument("--time", type=bounded(1, 86400, "seconds"), default=60.0, metavar="S",
                   help="seconds to watch (default 60)")
    p.add_argument("--interval", type=bounded(0.01, 60, "seconds"), default=SAMPLE_EVERY_S, metavar="S",
                   help="seconds between looks at the statements running now, for their values and order "
                        f"(default {SAMPLE_EVERY_S:g}: each look costs the server a fraction of a millisecond)")
    p.add_argument("--out", metavar="DIR", required=True, help="folder to write capture.json to")
    return p


def _reader(args: argparse.Namespace) -> Reader:
    if args.proxysql:
        if args.pgsql:
            raise UsageError("--proxysql captures the MySQL servers behind it: --pgsql cannot go with it")
        from benchtop.capture.proxysql import ProxySQLReader

        return ProxySQLReader(parse_spec("proxysql", args.proxysql),
                              parse_spec("mysql", args.mysql) if args.mysql else None)
    if args.mysql:
        from benchtop.capture.mysql import MySQLReader

        return MySQLReader(parse_spec("mysql", args.mysql))
    if args.pgsql:
        from benchtop.capture.postgres import PostgresReader

        return PostgresReader(parse_spec("postgresql", args.pgsql))
    raise UsageError("name the server to capture: --mysql DSN, --pgsql DSN or --proxysql DSN")


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        if not args.out.strip():
            raise UsageError("--out takes a folder to write capture.json to")
        reader = _reader(args)
    except (UsageError, TargetError, CaptureSourceError) as exc:
        print(f"benchtop capture: {exc}", file=sys.stderr)
        return 2 if not isinstance(exc, CaptureSourceError) else 1
    except SystemExit as exc:  # --help, or a usage error already said
        return int(exc.code or 0)
    try:
        print(f"capturing {reader.target} for {args.time:g} s ...", file=sys.stderr, flush=True)
        cap = capture(reader, args.time, args.interval)
        path = write_capture(Path(args.out), cap)
    except CaptureSourceError as exc:
        print(f"benchtop capture: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"benchtop capture: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        reader.close()
    sampled = sum(1 for s in cap.statements for p in s.placeholders if p.samples)
    print(f"{len(cap.statements)} statements, {cap.transactions} transactions ({cap.rate:.1f}/s) over "
          f"{cap.window_s:.1f} s; {sampled} placeholders with values seen; written to {path}")
    return 0
