"""`benchtop ab`'s bad input: one line on stderr and exit 2, before any run."""

from __future__ import annotations

import pytest

from benchtop.commands import main

SHARED = ["ab", "--headless", "--workload", "oltp_point_select", "--rounds", "2", "--round-time", "1"]


@pytest.mark.parametrize(("args", "said"), [
    (["--a", "", "--b", "--frobnicate 3"], "benchtop: error: --b: unknown option --frobnicate"),
    (["--a", "--set sync_binlog=0", "--b", ""], "benchtop: error: --a: --set changes a server's settings"),
    (["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:1/db", "--a", "", "--b", "--set sync_binlog=0"],
     "benchtop: error: --b: --set needs --admin-dsn"),
    (["--a", "--set sync_binlog", "--b", ""], "benchtop: error: --a: --set takes NAME=VALUE, not 'sync_binlog'"),
    (["--a", "--out elsewhere", "--b", ""], "benchtop: error: --a: --out is not a side's option"),
    (["--time", "5", "--a", "", "--b", ""], "benchtop: error: --time (every run lasts --round-time)"),
    (["--a", "", "--b", "", "--resolution", "two"], "benchtop: error: argument --resolution"),
])
def test_bad_input_is_one_line(args: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main([*SHARED, "--out", str(tmp_path / "ab"), *args]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(said) and err.count("\n") == 1, err
    assert not (tmp_path / "ab").exists()  # refused before anything ran


def test_the_help_names_the_comparisons_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["ab", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for option in ("--a OPTIONS", "--b OPTIONS", "--rounds", "--round-time", "--until-confident", "--resolution"):
        assert option in out


@pytest.mark.parametrize("args", [
    ["--round-time", "0.5"],
    ["--warmup", "0", "--round-time", "0.1"],
    # a run counts from its warm-up's end, wherever the readings fall: these were refused as measuring nothing
    ["--warmup", "0.1", "--round-time", "0.5"],
    ["--warmup", "0.3", "--report-interval", "0.25", "--round-time", "0.1"],
])
def test_a_round_that_measures_is_taken(args: list[str], tmp_path) -> None:
    from benchtop.commands.ab import parse, prepare_comparison

    shared, settings = parse([*SHARED[1:], "--out", str(tmp_path / "ab"), "--a", "", "--b", "", *args])
    assert prepare_comparison(shared, settings).plan.round_time_s == float(args[-1])


@pytest.mark.parametrize(("args", "priority"), [
    # a server on this host: idle whatever the host's load as a round starts (a run alone asks the load)
    (["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:1/db"], "idle"),
    (["--engine", "mysql", "--dsn", "mysql://u@192.0.2.7:1/db"], "normal"),
    (["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:1/db", "--worker-priority", "normal"], "normal"),
    ([], "normal"),  # SQLite: its workers are the server
])
def test_both_sides_keep_one_worker_priority_for_every_round(args: list[str], priority: str, tmp_path) -> None:
    from benchtop.commands.ab import parse, prepare_comparison

    shared, settings = parse([*SHARED[1:], *args, "--out", str(tmp_path / "ab"), "--a", "", "--b", "--threads 2"])
    setup = prepare_comparison(shared, settings)
    assert {opts.worker_priority for opts in setup.options.values()} == {priority}
