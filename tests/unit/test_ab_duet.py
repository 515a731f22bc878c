"""`benchtop ab --duet`: refused in one line unless A and B are two
targets; each side runs with half its threads, said in the banner; a
round is one pair run together, both sides' settings applied around it."""

from __future__ import annotations

import random

import pytest

from benchtop.ab.duet import halved
from benchtop.ab.rounds import Plan, RoundRunner, SideFigures
from benchtop.ab.sides import parse_side
from benchtop.commands import main
from benchtop.options.run_options import options_from_argv
from benchtop.stopping import StopFlag

MY = "mysql://u@127.0.0.1:1/sbtest"
SHARED = ["ab", "--headless", "--workload", "oltp_point_select", "--rounds", "2", "--round-time", "1", "--duet"]


@pytest.mark.parametrize(("args", "said"), [
    (["--a", "", "--b", "--threads 4"],
     "benchtop: error: --duet runs A and B at the same time on two targets, and both are sqlite: give --b its own "
     "--dsn (another server or database), or leave out --duet to alternate them"),
    (["--engine", "mysql", "--dsn", MY, "--a", "", "--b", f"--dsn {MY}"],
     "benchtop: error: --duet runs A and B at the same time on two targets, and both are mysql://u@127.0.0.1:1/sbtest"),
    (["--engine", "mysql", "--dsn", MY, "--admin-dsn", "mysql://root@127.0.0.1:1/", "--a", "",
      "--b", "--dsn mysql://u@127.0.0.1:1/sbtest2 --set sync_binlog=0"],
     "benchtop: error: --duet: A and B are on one server (127.0.0.1:1) and --b sets its settings"),
    (["--engine", "mysql", "--dsn", MY, "--metrics-listen", "127.0.0.1:9187", "--a", "",
      "--b", "--dsn mysql://u@127.0.0.1:2/sbtest"],
     "benchtop: error: --duet runs two loads at once, and --metrics-listen serves one"),
])
def test_duet_needs_two_targets(args: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main([*SHARED, "--out", str(tmp_path / "ab"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err
    assert not (tmp_path / "ab").exists()  # refused before anything ran


def test_two_databases_on_one_server_are_two_targets() -> None:
    from benchtop.ab.duet import duet_refusal

    sides = {"a": parse_side("a", ""), "b": parse_side("b", "--dsn mysql://u@127.0.0.1:1/other")}
    options = {name: options_from_argv("run", ["--engine", "mysql", "--dsn", MY, *side.argv, "--headless"])
               for name, side in sides.items()}
    assert duet_refusal(options, sides) is None


def test_each_side_gets_half_its_threads() -> None:
    opts = options_from_argv("run", ["--threads", "9", "--headless"])
    assert halved(opts).threads == 4
    conns = options_from_argv("run", ["--engine", "mysql", "--dsn", MY, "--connections", "64", "--threads", "4",
                                      "--headless"])
    assert (halved(conns).threads, halved(conns).loop_threads) == (32, 2)


def _figures(name: str, tps: float) -> SideFigures:
    return SideFigures(name, tps, 1.0, 2.0, 3.0, None, 0)


class _Settings:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def apply(self, settings: dict[str, object]) -> list[str]:
        self.log.append(f"apply {self.name}")
        return []

    def restore(self) -> list[str]:
        self.log.append(f"restore {self.name}")
        return []


def test_a_duet_round_is_one_pair_with_both_sides_settings_around_it() -> None:
    sides = {"a": parse_side("a", "--set x=1"), "b": parse_side("b", "--set y=2")}
    log: list[str] = []
    pairs = []

    def run_pair(pair, index: int) -> dict[str, SideFigures]:
        log.append(f"pair {index}")
        pairs.append(tuple(s.name for s in pair))
        return {s.name: _figures(s.name, 100.0 + index) for s in pair}

    def one(side, index: int) -> SideFigures:
        raise AssertionError("a duet runs no side alone")

    controls = {name: _Settings(name, log) for name in sides}
    runner = RoundRunner(sides, Plan(6, 1.0, duet=True), one, lambda side: controls[side.name], StopFlag(),
                         rng=random.Random(7), run_pair=run_pair)
    rounds = runner.run()
    assert [r.index for r in rounds] == list(range(1, 7)) and runner.stopped_by == "rounds"
    assert [r.order for r in rounds] == pairs and set(pairs) == {("a", "b"), ("b", "a")}
    assert all(r.a.tps == r.b.tps == 100.0 + r.index for r in rounds)
    for index in range(1, 7):
        i = log.index(f"pair {index}")
        assert sorted(log[i - 2:i]) == ["apply a", "apply b"] and sorted(log[i + 1:i + 3]) == ["restore a", "restore b"]


def test_a_stopped_duet_round_does_not_count_and_restores() -> None:
    sides = {"a": parse_side("a", "--set x=1"), "b": parse_side("b", "")}
    log: list[str] = []
    stop = StopFlag()

    def run_pair(pair, index: int) -> dict[str, SideFigures] | None:
        if index == 2:
            stop.set("quit")
            return None
        return {s.name: _figures(s.name, 10.0) for s in pair}

    runner = RoundRunner(sides, Plan(5, 1.0, duet=True), lambda s, i: None, lambda side: _Settings(side.name, log),
                         stop, run_pair=run_pair)
    assert len(runner.run()) == 1 and runner.stopped_by == "quit"
    assert log == ["apply a", "restore a"] * 2


def test_a_scenarios_ab_table_takes_duet() -> None:
    from benchtop.ab.settings import ab_settings

    assert ab_settings({"a": "", "b": "", "duet": True}).plan.duet
    assert not ab_settings({"a": "", "b": ""}).plan.duet
    with pytest.raises(ValueError, match="duet is true or false, not 'yes'"):
        ab_settings({"duet": "yes"})
