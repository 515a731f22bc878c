"""`benchtop restore --engine postgres --dsn ... --admin-dsn ...`: put back
the settings a run killed before its own restore left changed on a server
(instrumentation presets, a scenario's settings), from the record benchtop
wrote before changing them (benchtop.target.leftovers), then remove the
record."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchtop.commands import subcommands_epilog
from benchtop.commands.exits import EXIT_ERROR, EXIT_OK
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.run.attach import make_instrumentation
from benchtop.target.instrumentation import InstrumentationError
from benchtop.target.leftovers import ChangeRecord, LeftoverError, described, leftover_warning
from benchtop.target.settings import SettingsControl, SettingsError


def main(argv: Sequence[str]) -> int:
    opts = options_from_argv("restore", argv, epilog=subcommands_epilog())
    target = opts.target
    if target.kind not in ("mysql", "postgresql"):
        raise UsageError("restore puts back a server's settings: use --engine mysql or postgres and its --dsn")
    record = ChangeRecord(target)
    where = record.address.split(" ", 1)[1]
    left = leftover_warning(target)
    if left is None:
        try:
            live = record.changes()
        except LeftoverError as exc:
            print(f"benchtop restore: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if live:
            pids = ", ".join(str(c.pid) for c in live)
            print(f"benchtop restore: nothing done: the changes recorded for {where} belong to a run still going "
                  f"(pid {pids}), which restores them itself", file=sys.stderr)
        else:
            print(f"benchtop restore: nothing to restore on {where}: no change of benchtop's is recorded there")
        return EXIT_OK
    what = "; ".join(described(c.saved) for c in record.changes())
    cycler = make_instrumentation(target, opts.monitor.admin_dsn)
    try:
        if cycler is not None:
            try:
                cycler.control.restore_leftovers()
            finally:
                cycler.control.close()
        SettingsControl(cycler.control.target if cycler is not None else target).restore_leftovers()
    except (InstrumentationError, SettingsError) as exc:
        print(f"benchtop restore: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"restored on {where}: {what}; record {record.path} removed")
    return EXIT_OK
