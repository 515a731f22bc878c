"""sysbench 0.5 command lines from the blog posts run, mapped to today's names."""

from __future__ import annotations

import pytest

from benchtop.commands.sysbench05 import translate
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv


def test_posts_command_line_maps_to_the_same_run() -> None:
    old = ["--db-driver=mysql", "--mysql-host=127.0.0.1", "--test=/usr/share/doc/sysbench/tests/db/oltp.lua",
           "--oltp-tables-count=4", "--oltp-table-size", "10000", "--num-threads=8", "--max-time=60",
           "--max-requests=0", "--mysql-table-engine=myisam", "--oltp-read-only=on"]
    argv, note = translate(old)
    opts = options_from_argv("run", argv)
    assert (opts.engine, opts.workload, opts.threads, opts.time_s, opts.events) == (
        "mysql", "oltp_read_only", 8, 60.0, 0)
    assert opts.workload_options == {"tables": 4, "table_size": 10000, "mysql_storage_engine": "myisam"}
    assert note is not None and "\n" not in note
    assert note.startswith("sysbench 0.5 options mapped: ") and "--num-threads -> --threads" in note


def test_new_spellings_pass_untouched_and_old_modes_pick_workloads() -> None:
    assert translate(["--threads", "4", "--time=5"]) == (["--threads", "4", "--time=5"], None)
    assert translate(["--oltp-test-mode=simple"])[0] == ["--workload", "oltp_point_select"]
    assert translate(["--oltp-read-only=off"])[0] == []
    assert translate(["--db-driver=pgsql"])[0] == ["--engine", "postgres"]


@pytest.mark.parametrize("argv, message", [
    (["--test=fileio"], "no benchtop workload"),
    (["--db-driver=oracle"], "use mysql or pgsql"),
    (["--oltp-read-only=maybe"], "takes on or off"),
    (["--num-threads"], "needs a value"),
    (["--workload", "oltp_insert", "--test=oltp.lua"], "name the workload twice"),
])
def test_bad_old_options_are_one_line_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        translate(argv)
