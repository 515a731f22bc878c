"""sysbench 0.5 spellings, still in most blog posts: `--num-threads=8
--max-time=60 --oltp-table-size=1000000 --test=oltp.lua ...` are rewritten to
benchtop's (sysbench 1.0's) names before parsing, and the caller says once,
in one line, what was mapped."""

from __future__ import annotations

from collections.abc import Sequence

from benchtop.errors import UsageError
from benchtop.workload.compiler import on_off

# old name -> new name, value unchanged
RENAMED = {
    "--num-threads": "--threads",
    "--max-time": "--time",
    "--max-requests": "--events",
    "--oltp-table-size": "--table-size",
    "--oltp-tables-count": "--tables",
    "--mysql-table-engine": "--mysql-storage-engine",
}
# sysbench 0.5's Lua test scripts (--test=.../oltp.lua) -> workloads
TESTS = {
    "oltp": "oltp_read_write", "select": "oltp_point_select", "insert": "oltp_insert",
    "delete": "oltp_delete", "update_index": "oltp_update_index", "update_non_index": "oltp_update_non_index",
    "select_random_points": "select_random_points", "select_random_ranges": "select_random_ranges",
}
# sysbench 0.4's --oltp-test-mode, which 0.5 posts still carry
TEST_MODES = {"complex": "oltp_read_write", "simple": "oltp_point_select", "nontrx": "oltp_point_select"}
DRIVERS = {"mysql": "mysql", "pgsql": "postgres"}
OLD = (*RENAMED, "--test", "--oltp-read-only", "--oltp-test-mode", "--db-driver")


def _split(argv: Sequence[str]) -> list[tuple[str, str | None, bool]]:
    """(option, value, value was a separate argument) per old option, in order;
    other arguments as (argument, None, False)."""
    out: list[tuple[str, str | None, bool]] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in OLD:
            if eq:
                out.append((name, value, False))
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out.append((name, argv[i + 1], True))
                i += 1
            else:
                raise UsageError(f"{name} needs a value ({name}=VALUE)")
        else:
            out.append((arg, None, False))
        i += 1
    return out


def translate(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """(argv in benchtop's spellings, a one-line note naming the mapped
    options, or None when there were none)."""
    new: list[str] = []
    mapped: list[str] = []
    workload: str | None = None
    read_only = False
    for name, value, _ in _split(argv):
        if value is None:
            new.append(name)
            continue
        if name in RENAMED:
            new += [RENAMED[name], value]
            mapped.append(f"{name} -> {RENAMED[name]}")
        elif name == "--db-driver":
            if value not in DRIVERS:
                raise UsageError(f"--db-driver={value}: use mysql or pgsql (or --engine)")
            new += ["--engine", DRIVERS[value]]
            mapped.append(f"--db-driver -> --engine {DRIVERS[value]}")
        elif name == "--test":
            stem = value.rsplit("/", 1)[-1].removesuffix(".lua")
            if stem not in TESTS:
                raise UsageError(f"--test={value}: no benchtop workload for it (use --workload; "
                                 f"known: {', '.join(sorted(TESTS))})")
            workload = TESTS[stem]
            mapped.append(f"--test={stem}.lua -> --workload {workload}")
        elif name == "--oltp-test-mode":
            if value not in TEST_MODES:
                raise UsageError(f"--oltp-test-mode={value}: use complex, simple or nontrx")
            workload = workload or TEST_MODES[value]
            mapped.append(f"--oltp-test-mode={value} -> --workload {TEST_MODES[value]}")
        else:  # --oltp-read-only
            switch = on_off(value)
            if switch is None:
                raise UsageError(f"--oltp-read-only takes on or off, not {value!r}")
            read_only = switch
            if switch:
                mapped.append("--oltp-read-only=on -> --workload oltp_read_only")
    if read_only and workload in (None, "oltp_read_write"):
        workload = "oltp_read_only"
    if workload is not None:
        if "--workload" in new or any(a.startswith("--workload=") for a in new):
            raise UsageError("--workload and sysbench 0.5's --test/--oltp-test-mode/--oltp-read-only name "
                             "the workload twice: keep one")
        new += ["--workload", workload]
    if not mapped:
        return new, None
    return new, "sysbench 0.5 options mapped: " + ", ".join(mapped)
