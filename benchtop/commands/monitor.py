"""`benchtop monitor`: watch servers and proxies with no load at all.

Safe against production: each source sends only SELECT/SHOW/SET SESSION
statements on its own connection, polls are modest (default every 2 s) and
bounded by a deadline, and an outage shows as `ok: false` snapshots while the
poller reconnects.  `--headless` prints a line per poll (JSON Lines with
`--json`); otherwise the TUI (benchtop.screens) takes over.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterable, Sequence, TextIO

from benchtop.commands import subcommands_epilog
from benchtop.errors import OneLineParser as _Parser
from benchtop.errors import UsageError as _UsageError
from benchtop.run.attach import TappedPoller
from benchtop.run.results import ResultsWriter
from benchtop.sources.base import SourceError, SourceSnapshot
from benchtop.sources.os import OSSource
from benchtop.sources.poller import Poller, SourcePoller, poll_all
from benchtop.sources.registry import build_sources, is_local
from benchtop.target import TargetError

# the TUI gets pollers, or pollers whose snapshots a recorder taps on the way
RunTui = Callable[[list[Any], argparse.Namespace], int]

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
    p.add_argument("--interval", type=float, default=2.0, metavar="S", help="seconds between polls (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
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
    return p


def _check(args: argparse.Namespace) -> list[tuple[str, str]]:
    if args.interval <= 0:
        raise _UsageError("--interval must be a positive number of seconds")
    if args.timeout is not None and args.timeout <= 0:
        raise _UsageError("--timeout must be a positive number of seconds")
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
        timeout = args.timeout if args.timeout is not None else min(5.0, max(1.0, args.interval))
        sources = build_sources(specs, timeout_s=timeout)
        # The OS panel only describes the server when the server runs here.
        if args.os if args.os is not None else any(is_local(s.target) for s in sources):
            sources.append(OSSource(timeout_s=timeout))
    except (_UsageError, TargetError) as exc:
        print(f"benchtop monitor: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)

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
        if not args.headless:
            run_tui = run_tui or _monitor_tui
            if writer is not None:
                def tap(snap: SourceSnapshot) -> None:
                    writer.append("monitor.jsonl", {"type": "snapshot", "t": round(snap.t, 3),
                                                    "sources": {snap.name: snap.to_dict()}})

                return run_tui([TappedPoller(p, tap) for p in pollers], args)
            return run_tui(pollers, args)
        return _headless(pollers, args, out, stop, writer)
    except KeyboardInterrupt:
        return 130
    finally:
        for p in pollers:
            p.close()


def _monitor_tui(pollers: Sequence[Poller], args: argparse.Namespace) -> int:
    # the TUI is imported only here: the headless monitor never loads textual
    from benchtop.screens.launch import monitor_tui

    return monitor_tui(pollers, args)


def _recorder(folder: str | None) -> Any:
    """A results folder for --out (created 0700), or None."""
    if not folder:
        return None
    from pathlib import Path

    return ResultsWriter(Path(folder))


def _headless(pollers: list[SourcePoller], args: argparse.Namespace, out: TextIO, stop: threading.Event,
              writer: Any = None) -> int:
    restore = _sigterm_as_interrupt()
    try:
        start = time.monotonic()
        n = 0
        while (args.count is None or n < args.count) and not stop.is_set():
            snaps = poll_all(pollers)
            n += 1
            line = snapshot_line(snaps)
            if writer is not None:
                writer.append("monitor.jsonl", line)
            if args.json:
                out.write(json.dumps(line, default=str) + "\n")
            else:
                out.write(format_text(snaps) + "\n")
            out.flush()
            if args.count is not None and n >= args.count:
                break
            # Keep a steady cadence; after a long (timed-out) poll, skip the missed ticks.
            ticks = int((time.monotonic() - start) / args.interval) + 1
            stop.wait(max(start + ticks * args.interval - time.monotonic(), 0.0))
    finally:
        restore()
    return 0


def snapshot_line(snaps: Iterable[SourceSnapshot]) -> dict[str, Any]:
    """The JSON Lines object for one poll of every source."""
    return {"type": "snapshot", "t": round(time.time(), 3), "sources": {s.name: s.to_dict() for s in snaps}}


def _sigterm_as_interrupt() -> Callable[[], None]:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: the caller handles signals
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


# ------------------------------------------------------------------ text mode


def _fmt(value: Any, spec: str = ".0f", unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        return f"{value:{spec}}{unit}"
    return str(value)


def _summary(s: SourceSnapshot) -> str:
    p = s.panel
    if s.kind == "mysql":
        threads, rates, inn = p("threads", {}), p("status_rates", {}), p("innodb", {})
        waits = p("waits", [])
        top = f" top wait {waits[0]['event']} {waits[0]['ms_per_s']:.1f}ms/s" if waits else ""
        return (
            f"threads {_fmt(threads.get('running'))}/{_fmt(threads.get('connected'))}"
            f" qps {_fmt(rates.get('questions_per_s'))} commit/s {_fmt(rates.get('commits_per_s'))}"
            f" redo {_fmt(inn.get('redo_bytes_per_s'))}B/s ckpt age {_fmt(inn.get('checkpoint_age_pct'), '.1f', '%')}"
            f" dirty {_fmt(inn.get('dirty_pages_pct'), '.1f', '%')}{top}"
            + _lists_summary(p("processlist", []), "time_s", p("top_statements", []))
        )
    if s.kind == "postgresql":
        sessions, db, ck = p("sessions", {}), p("database", {}), p("checkpoints", {})
        hit = p("cache_hit_ratio", {})
        return (
            f"active {_fmt(sessions.get('active', 0))}/{_fmt(sessions.get('total'))}"
            f" commit/s {_fmt(db.get('commits_per_s'))} wal {_fmt(p('wal_bytes_per_s'))}B/s"
            f" hit {_fmt(hit.get('interval'), '.4f')} ckpt timed/req {_fmt(ck.get('timed'))}/{_fmt(ck.get('requested'))}"
            + _lists_summary([r for r in p("activity", []) if r.get("state") == "active"], "query_age_s",
                             p("top_statements", []))
        )
    if s.kind == "pgbouncer":
        cl, sv, stats = p("client_states", {}), p("server_states", {}), p("stats", [])
        xact = sum(v.get("xact_per_s") or 0 for v in stats)
        waits = [v.get("avg_wait_time_us") for v in stats if v.get("avg_wait_time_us") is not None]
        return (
            f"clients active {_fmt(cl.get('active'))} waiting {_fmt(cl.get('waiting'))}"
            f" servers active {_fmt(sv.get('active'))} idle {_fmt(sv.get('idle'))}"
            f" xact/s {_fmt(xact)} wait/xact {_fmt(max(waits) if waits else None, '.0f', 'us')}"
        )
    if s.kind == "os":
        cpu, disk = p("cpu", {}), p("disk", {})
        return (
            f"cpu usr {_fmt(cpu.get('user_pct'), '.1f')}% sys {_fmt(cpu.get('system_pct'), '.1f')}%"
            f" iowait {_fmt(cpu.get('iowait_pct'), '.1f')}% disk r/w {_fmt(disk.get('read_kb_per_s'))}/"
            f"{_fmt(disk.get('write_kb_per_s'))} KB/s cs/s {_fmt(p('context_switches_per_s'))}"
        )
    return "panels " + ", ".join(sorted(s.panels))


def _lists_summary(sessions: list[dict[str, Any]], age_key: str, top: list[dict[str, Any]]) -> str:
    """The longest running statement and the one costing most in the interval, cut short.

    >>> _lists_summary([{"time_s": 42.0, "query": "SELECT SLEEP(60)"}, {"time_s": 1.0, "query": None}], "time_s",
    ...                [{"total_ms_per_s": 812.5, "query": "SELECT c FROM sbtest1 WHERE id=?"}])
    ' longest 42s SELECT SLEEP(60) | top 812ms/s SELECT c FROM sbtest1 WHERE id=?'
    """
    out = ""
    running = [r for r in sessions if r.get("query") and isinstance(r.get(age_key), (int, float))]
    if running:
        longest = max(running, key=lambda r: r[age_key])
        out += f" longest {longest[age_key]:.0f}s {str(longest['query'])[:48]}"
    if top:
        out += (" |" if out else "") + f" top {_fmt(top[0].get('total_ms_per_s'))}ms/s {str(top[0].get('query'))[:48]}"
    return out


def format_text(snaps: Iterable[SourceSnapshot]) -> str:
    """One line per source for a poll, under a timestamp."""
    snaps = list(snaps)
    width = max((len(s.name) for s in snaps), default=4)
    lines = [time.strftime("%H:%M:%S")]
    for s in snaps:
        body = _summary(s) if s.ok else f"DOWN: {s.error}"
        lines.append(f"  {s.name:<{width}} {s.poll_ms:6.1f}ms  {body}")
    return "\n".join(lines)
