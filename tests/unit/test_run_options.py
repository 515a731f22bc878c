"""RunOptions come out the same whichever way a run is described: a command
line, a mapping of option names (scenario files, the pytest plugin), or a
scenario step's knobs; bad values are one-line UsageErrors either way."""

from __future__ import annotations

import pytest

from benchtop.engine import RandomSettings
from benchtop.errors import UsageError
from benchtop.options.run_options import RunOptions, options_from_argv, options_from_mapping


def test_a_mapping_and_a_command_line_give_the_same_options():
    argv = ["--engine", "null", "--workload", "oltp_read_only", "--threads", "8", "--rate", "250",
            "--rand-type", "uniform", "--table-size", "500", "--no-prepare", "--stop-if", "p99>5ms",
            "--stop-if", "errors>1%", "--pgbouncer", "pgbouncer://a@h:1/pgbouncer", "--range-size", "20",
            "--skip-trx", "--time", "5"]
    mapping = {"engine": "null", "workload": "oltp_read_only", "threads": 8, "rate": 250, "rand_type": "uniform",
               "table_size": 500, "no_prepare": True, "stop_if": ["p99>5ms", "errors>1%"],
               "pgbouncer": "pgbouncer://a@h:1/pgbouncer", "range_size": 20, "skip_trx": True, "time": 5}
    assert options_from_mapping(mapping) == options_from_argv("run", argv)


def test_defaults_are_defined_once():
    opts = options_from_argv("run", [])
    assert opts.rand == RandomSettings() and opts.rand.type == "special"
    assert (opts.threads, opts.time_s, opts.workload) == (RunOptions.threads, RunOptions.time_s, RunOptions.workload)
    assert opts.to_dict()["rand_spec_iter"] == RandomSettings().spec_iter  # results folders keep the flat names


@pytest.mark.parametrize("values, fragment", [
    ({"threads": "many"}, "--threads: invalid int value"),
    ({"rand_type": "normal"}, "--rand-type: invalid choice"),
    ({"no_prepare": "yes"}, "--no-prepare takes true or false"),
    ({"threads": [1, 2]}, "--threads takes one value"),
    ({"threads": True}, "--threads"),
    ({"point_selectz": 3}, "unknown option --point-selectz"),
    ({"skip_trx": [True]}, "--skip-trx takes one value"),
])
def test_bad_mapped_values_are_one_line(values, fragment):
    with pytest.raises(UsageError, match=fragment.replace("-", r"\-").replace("(", r"\(")):
        options_from_mapping(values)


def test_a_step_changes_only_its_knobs():
    opts = options_from_argv("run", ["--threads", "4", "--rate", "100"])
    assert opts.for_step(threads=16) == options_from_argv("run", ["--threads", "16", "--rate", "100"])
    assert opts.for_step(rate=0).rate == 0 and opts.for_step().threads == 4


def test_db_is_refused_for_a_server_engine():
    with pytest.raises(UsageError, match="--db is for --engine sqlite"):
        options_from_argv("run", ["--engine", "mysql", "--db", "x.db"])


def test_password_flags_say_they_show_in_the_process_list() -> None:
    from benchtop.options.run_options import build_parser

    text = build_parser("run").format_help()
    for flag, safer in (("--mysql-password", "~/.my.cnf"), ("--pgsql-password", "~/.pgpass")):
        after = text.split(flag, 2)[2]  # the option's own line, after the usage line
        assert "process list" in after[:300] and safer in after[:300]
