"""A scenario file's [ab] table: the comparison's settings typed as the
command line's, the top level shared by both sides, the command line over
both; a bad value is one line naming the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchtop.ab.settings import ROUND_TIME_S, ab_settings
from benchtop.commands import main
from benchtop.commands.ab import parse
from benchtop.scenario.file import ScenarioError, parse_scenario

FILE = """\
engine = "sqlite"
workload = "oltp_point_select"
table_size = 500
threads = 2
warmup = 0.2
stop_if = ["errors>5 for 1s"]

[ab]
a = ""
b = "--threads 4 --point-selects 2"
rounds = 6
round_time = "1.5s"
until_confident = true
resolution = "5%"
max_time = "2m"
out = "results/ab"
seed = 7
"""


def test_the_ab_table_is_typed_and_the_top_level_is_shared(tmp_path: Path) -> None:
    sc = parse_scenario(FILE, "ab.toml")
    assert sc.steps == () and sc.ab is not None and sc.ab["rounds"] == 6
    # keys that are the steps' defaults elsewhere are both sides' options in a comparison
    assert sc.options["threads"] == 2 and sc.options["warmup"] == 0.2 and sc.options["stop_if"] == ["errors>5 for 1s"]
    path = tmp_path / "ab.toml"
    path.write_text(FILE)
    shared, s = parse([str(path)])
    assert (s.a, s.b, s.out, s.seed) == ("", "--threads 4 --point-selects 2", "results/ab", 7)
    p = s.plan
    assert (p.rounds, p.round_time_s, p.until_confident, p.resolution, p.max_time_s) == (6, 1.5, True, 0.05, 120.0)
    for option in (["--engine", "sqlite"], ["--threads", "2"], ["--warmup", "0.2"], ["--stop-if", "errors>5 for 1s"],
                   ["--table-size", "500"]):
        assert any(shared[i:i + 2] == option for i in range(len(shared))), (option, shared)
    # the command line wins: over [ab], and over the shared options (a later option wins)
    shared, s = parse([str(path), "--rounds", "8", "--b", "--threads 3", "--threads", "1"])
    assert s.plan.rounds == 8 and s.b == "--threads 3" and shared[-2:] == ["--threads", "1"]


def test_defaults_as_the_command_lines() -> None:
    s = ab_settings({})
    assert (s.a, s.b, s.plan.rounds, s.plan.round_time_s, s.plan.until_confident) == ("", "", 10, ROUND_TIME_S, False)
    assert ab_settings({"until_confident": True}).plan.rounds is None  # no count: until it decides


@pytest.mark.parametrize(("table", "line", "said"), [
    ('rounds = "six"', 9, "[ab]: rounds is a whole number from 1 to 10000, not 'six'"),
    ('round_time = "soon"', 9, "[ab]: round_time is a number of seconds or a duration"),
    ("resolution = 2", 9, "[ab]: resolution is a share from 0.01% to 100%"),
    ("until_confident = 1", 9, "[ab]: until_confident is true or false, not 1"),
    ("a = 3", 9, "[ab]: a is a string of options"),
    ("rounds = 6\nfrobnicate = 1", 10, "[ab]: unknown setting 'frobnicate' (use a, b, rounds"),
])
def test_a_bad_ab_value_is_one_line_naming_its_line(table: str, line: int, said: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ab.toml"
    path.write_text(FILE.split("[ab]")[0] + "[ab]\n" + table + "\n")
    assert main(["ab", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"benchtop: error: {path}:{line}: {said}") and err.count("\n") == 1, err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("text", "said"), [
    ('engine = "sqlite"\n[[step]]\nduration = 1\n', "no [ab] table: benchtop ab takes a scenario file with one"),
    ('engine = "sqlite"\n[ab]\nrounds = 2\n[[step]]\nduration = 1\n', "a scenario with [ab] (benchtop ab) has no [[step]]"),
    ('engine = "sqlite"\nab = 3\n', "ab is a table: [ab] with a, b, rounds"),
    ('engine = "sqlite"\ntable_size = "big"\n[ab]\nrounds = 2\n', "f.toml:2: argument --table-size"),
])
def test_a_file_that_is_no_comparison_is_one_line(text: str, said: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.toml"
    path.write_text(text)
    assert main(["ab", str(path)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and str(path) in err, err


def test_the_scenario_parser_refuses_ab_beside_steps() -> None:
    with pytest.raises(ScenarioError, match="has no"):
        parse_scenario('[ab]\nrounds = 2\n[[step]]\nduration = 1\n', "x.toml")
