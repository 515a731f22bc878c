"""`benchtop restore --engine postgres --dsn ... --admin-dsn ...`: put back
the settings a run killed before its own restore left changed on a server
(instrumentation presets, a scenario's or a comparison's settings), from
the record benchtop wrote before changing them (benchtop.target.leftovers),
then remove the record.

A record is kept under the address of the connection that made the change:
--admin-dsn's when the run had one (instrumentation, a scenario's settings,
`benchtop ab`'s --set), else --dsn's.  The admin often reaches the server by
its socket and the benchmark by host:port, so both addresses are looked at,
each reached with the admin's credentials."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchtop.commands import subcommands_epilog
from benchtop.commands.exits import EXIT_ERROR, EXIT_OK
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.run.attach import make_instrumentation
from benchtop.target import Target
from benchtop.target.instrumentation import InstrumentationError
from benchtop.target.leftovers import Change, ChangeRecord, LeftoverError, described, record_places
from benchtop.target.settings import SettingsControl, SettingsError


def main(argv: Sequence[str]) -> int:
    opts = options_from_argv("restore", argv, epilog=subcommands_epilog())
    target = opts.target
    if target.kind not in ("mysql", "postgresql"):
        raise UsageError("restore puts back a server's settings: use --engine mysql or postgres and its --dsn")
    found: list[tuple[Target, ChangeRecord, list[Change]]] = []
    for place in record_places(target, opts.monitor.admin_dsn):
        record = ChangeRecord(place)
        try:
            found.append((place, record, record.changes()))
        except LeftoverError as exc:
            print(f"benchtop restore: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    # a record whose every change is a live run's is that run's to restore
    left = [(place, record, changes) for place, record, changes in found if any(not c.live for c in changes)]
    if not left:
        live = [c for _, _, changes in found for c in changes]
        where = " or ".join(record.address.split(" ", 1)[1] for _, record, _ in found)
        if live:
            pids = ", ".join(str(c.pid) for c in live)
            print(f"benchtop restore: nothing done: the changes recorded for {where} belong to a run still going "
                  f"(pid {pids}), which restores them itself", file=sys.stderr)
        else:
            print(f"benchtop restore: nothing to restore on {where}: no change of benchtop's is recorded there")
        return EXIT_OK
    for place, record, changes in left:
        what = "; ".join(described(c.saved) for c in changes)
        cycler = make_instrumentation(place, None)
        try:
            if cycler is not None:
                try:
                    cycler.control.restore_leftovers()
                finally:
                    cycler.control.close()
            SettingsControl(place).restore_leftovers()
        except (InstrumentationError, SettingsError) as exc:
            print(f"benchtop restore: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        print(f"restored on {record.address.split(' ', 1)[1]}: {what}; record {record.path} removed")
    return EXIT_OK
