"""The knee's settings: the command line's and a scenario file's [search]
table read the same way; bad values are one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchtop.commands import main
from benchtop.knee.settings import knee_options
from benchtop.scenario.file import ScenarioError, load_scenario, parse_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_the_example_search_file() -> None:
    sc = load_scenario(SCENARIOS / "knee.toml")
    assert sc.steps == () and sc.search is not None
    knee = knee_options(sc.search, 4096)
    s, t = knee.search, knee.timing
    assert (s.low, s.high, s.p99_limit_ms, s.error_limit, s.tolerance) == (1, 256, 20.0, 0.01, 0.1)
    assert (t.min_s, t.max_s, t.cv) == (3.0, 15.0, 0.05)
    assert not knee.rate


def test_defaults_and_a_rate_search() -> None:
    knee = knee_options({}, 4096, cpus=2)
    assert (knee.search.low, knee.search.high, knee.search.p99_limit_ms) == (1, 8, None)
    rate = knee_options({"min_rate": 100.0, "max_rate": 5000.0, "p99_limit": "5ms"}, 4096)
    assert rate.rate and (rate.search.low, rate.search.high, rate.search.p99_limit_ms) == (100.0, 5000.0, 5.0)
    assert knee_options({"p99_limit": "0.5s"}, 4096).search.p99_limit_ms == 500.0


def test_the_answer_is_held_as_long_as_the_longest_probe_unless_told() -> None:
    assert knee_options({}, 4096).search.confirm_s == 6.0
    assert knee_options({"min_rate": 100.0, "max_rate": 5000.0}, 4096).search.confirm_s == 15.0
    assert knee_options({"probe_max": "2s"}, 4096).search.confirm_s == 2.0
    assert knee_options({"confirm": "0"}, 4096).search.confirm_s == 0.0
    assert knee_options({"confirm": "500ms", "probe_max": "2s"}, 4096).search.confirm_s == 0.5


@pytest.mark.parametrize("values,message", [
    ({"min_threads": 0}, "threads range"),
    ({"max_threads": 10_000}, "threads range"),
    ({"min_threads": 2.5}, "whole number"),
    ({"p99_limit": "soon"}, "milliseconds"),
    ({"p99_limit": 0}, "the p99 limit takes milliseconds from 0 to 3600000"),
    ({"p99_limit": "1e308"}, r"not 1e\+308"),
    ({"p99_limit": "nan"}, "p99"),
    ({"tolerance": "0%"}, "tolerance"),
    ({"error_limit": "200%"}, "share from 0 to 100%"),
    ({"min_rate": 10.0}, "both"),
    ({"min_rate": 10.0, "max_rate": 20.0, "max_threads": 4}, "not both"),
    ({"probe_min": "10s", "probe_max": "2s"}, "shorter"),
    ({"probe_cv": "0%"}, "positive"),
    ({"thread": 4}, "unknown search setting 'thread'"),
])
def test_bad_values_are_one_line(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        knee_options(values, 4096)


def test_search_and_steps_do_not_mix() -> None:
    with pytest.raises(ScenarioError, match=r"has no \[\[step\]\]"):
        parse_scenario("[search]\nmax_threads = 4\n[[step]]\nduration = 1\n", "x.toml")
    with pytest.raises(ScenarioError, match="search is a table"):
        parse_scenario("search = 4\n", "x.toml")


def test_rate_probes_hold_longer_and_the_tolerance_judges_the_p99() -> None:
    rate = knee_options({"min_rate": 500, "max_rate": 8000, "tolerance": "20%"}, 4096)
    assert (rate.timing.min_s, rate.timing.max_s, rate.timing.tolerance) == (2.0, 15.0, 0.2)
    assert knee_options({"min_rate": 500, "max_rate": 8000, "probe_max": 1}, 4096).timing.min_s == 1.0
    threads = knee_options({}, 4096, cpus=2).timing
    assert (threads.min_s, threads.max_s, threads.tolerance, threads.min_transactions) == (1.0, 6.0, 0.1, 5000)


KNEE_FILE = 'engine = "sqlite"\nworkload = "oltp_point_select"\n{top}\n\n[search]\nmax_threads = 4\n{search}\n'


@pytest.mark.parametrize(("top", "search", "said"), [
    # the top level, as any scenario's (a traceback before)
    ('threads = "lots"', "", ":3: threads: 'lots' is not a range"),
    ("threads = -3", "", ":3: threads -3 out of range (0..4096)"),
    ("warmup = true", "", ":3: warmup: a duration is a number of seconds"),
    ('stop_if = "p99 is big"', "", ":3: --stop-if 'p99 is big': expected METRIC OP VALUE"),
    ("bogus = 3", "", ":3: unknown option --bogus"),
    ('table_size = "big"', "", ":3: argument --table-size: invalid int value: 'big'"),
    # the [search] table (no line before)
    ("", 'max_threads = "many"', ":6: [search]: max_threads is a whole number, not 'many'"),
    ("", "min_threads = 0", ":7: [search]: the threads range must be 1 <= --min-threads"),
    ("", "p99_limit = 0", ":7: [search]: p99_limit: the p99 limit takes milliseconds from 0 to 3600000"),
    ("", 'tolerance = "500%"', ":7: [search]: --tolerance is a share from 0 to 100%, not '500%'"),
    ("", 'probe_min = "10s"', ":7: [search]: probe_min: the longest probe (6 s) is shorter than the shortest"),
    ("", "frobnicate = 1", ":7: [search]: unknown search setting 'frobnicate'"),
])
def test_a_bad_value_in_a_knee_file_is_one_line_naming_its_line(top: str, search: str, said: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "knee.toml"
    path.write_text(KNEE_FILE.format(top=top, search=search).replace("max_threads = 4\nmax_threads", "max_threads"))
    for argv, prog in ((["knee", str(path)], "benchtop"), (["scenario", str(path)], "benchtop scenario")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{prog}: error: {path}{said}") and err.count("\n") == 1, err
    assert not (tmp_path / "results").exists()


def test_the_command_line_over_a_file_says_its_own_problem(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "knee.toml"
    path.write_text(KNEE_FILE.format(top="", search="p99_limit = 5"))
    assert main(["knee", str(path), "--p99-limit", "soon"]) == 2
    assert capsys.readouterr().err == "benchtop: error: --p99-limit takes a number of milliseconds, not 'soon'\n"
