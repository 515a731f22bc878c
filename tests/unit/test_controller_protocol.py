"""The controller protocol and what implements it: mypy checks the types
(tests/tui/fakes.py is in its files); this catches a member renamed or
dropped on one side before a screen finds out at run time."""

from __future__ import annotations

from benchtop.options.run_options import options_from_argv
from benchtop.record.controller import Controller, Sample
from benchtop.scenario.controller import ScenarioController
from benchtop.session import RunSession
from tests.tui.fakes import FakeRunController

MEMBERS = sorted(name for name in vars(Controller) if not name.startswith("_"))


def test_the_protocol_has_members() -> None:
    assert {"sample", "stop", "history", "note"} <= set(MEMBERS)


def missing(obj: object) -> list[str]:
    return [name for name in MEMBERS if not hasattr(obj, name)]


def test_the_fake_has_every_member() -> None:
    assert missing(FakeRunController()) == []


def test_the_scenario_controller_has_every_member() -> None:
    # all of them are properties or methods of the class
    assert missing(ScenarioController) == []


def test_the_run_controller_has_every_member() -> None:
    # label, history and others are set in __init__: ask an instance, on the
    # embedded SQLite default (prepared in a temporary folder)
    with RunSession(options_from_argv("run", []), monitor=False, progress=None) as session:
        assert missing(session.controller(results=False)) == []


def test_the_fake_samples_as_the_protocol_says() -> None:
    fake = FakeRunController(preload=0, warmup=1, finish_after=2, error="lost connection")
    first, second = fake.sample(), fake.sample()
    assert isinstance(first, Sample) and not first.counted and not first.finished
    assert second.counted and second.finished and second.failed == "lost connection"
    assert fake.history == [second.interval]
