"""TUI or headless is decided once, the same way for `run`, `knee` and
`scenario` (RunOptions.headless: --headless, --json, or stdout not a
terminal), and the Drive that runs all three ends them the same way."""

from __future__ import annotations

import io
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchtop.commands import knee, run, scenario
from benchtop.commands.drive import Drive
from benchtop.commands.exits import EXIT_ERROR, EXIT_FAILED_RUN, EXIT_OK
from benchtop.options.run_options import HEADLESS_TIME_S, RunOptions, options_from_argv


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Decided(Exception):
    """Raised where the run would start: the options it would run with."""

    def __init__(self, options: RunOptions) -> None:
        super().__init__()
        self.options = options


def _run(tmp_path: Path, flags: list[str]) -> int:
    return run.main(["--engine", "null", "--no-monitor", "--out", str(tmp_path / "r"), *flags])


def _knee(tmp_path: Path, flags: list[str]) -> int:
    return knee.main(["--engine", "null", "--no-monitor", "--max-threads", "2", "--out", str(tmp_path / "k"), *flags])


def _scenario(tmp_path: Path, flags: list[str]) -> int:
    toml = tmp_path / "s.toml"
    toml.write_text('engine = "null"\nno_monitor = true\n[[step]]\nthreads = 1\nduration = 1\n')
    return scenario.main([str(toml), "--out", str(tmp_path / "s"), *flags])


@pytest.mark.parametrize("command", [_run, _knee, _scenario], ids=["run", "knee", "scenario"])
@pytest.mark.parametrize("flags, terminal, headless", [
    ([], True, False),  # a terminal: the dashboard
    (["--json"], True, True),  # JSON Lines on a terminal: headless all the same
    (["--headless"], True, True),
    ([], False, True),  # stdout piped or redirected
])
def test_tui_or_headless_is_decided_once_for_every_command(
        command: Callable[[Path, list[str]], int], flags: list[str], terminal: bool, headless: bool,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def decided(self: Drive, *_args: object, **_kw: object) -> None:
        raise Decided(self.session.options)

    monkeypatch.setattr(Drive, "run", decided)
    monkeypatch.setattr(sys, "stdout", Terminal() if terminal else io.StringIO())
    with pytest.raises(Decided) as made:
        command(tmp_path, flags)
    assert made.value.options.headless is headless
    assert made.value.options.json is ("--json" in flags)


def test_a_terminal_run_without_time_lasts_until_q_unless_headless() -> None:
    assert options_from_argv("run", [], terminal=True).time_s == 0
    assert options_from_argv("run", ["--json"], terminal=True).time_s == HEADLESS_TIME_S


class _Writer:
    def __init__(self, folder: Path, failed: str = "") -> None:
        self.folder, self.failed = folder, failed


class _Session:
    def __init__(self, writer: _Writer | None, json_lines: bool = False) -> None:
        self.writer, self.options = writer, RunOptions(json=json_lines)


@pytest.mark.parametrize("json_lines", [False, True])
def test_the_end_names_the_results_folder_where_json_lines_stay_clean(
        json_lines: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    drive = Drive(_Session(_Writer(tmp_path), json_lines), out)  # type: ignore[arg-type]
    assert drive.end(None) == EXIT_OK
    line = f"results: {tmp_path}\n"
    assert (capsys.readouterr().err, out.getvalue()) == ((line, "") if json_lines else ("", line))


def test_a_write_failure_and_a_failed_run_end_with_their_own_codes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    drive = Drive(_Session(_Writer(tmp_path, "disk full")), out, prog="benchtop scenario")  # type: ignore[arg-type]
    assert drive.end(None, printed="answer") == EXIT_ERROR
    assert capsys.readouterr().err == "benchtop scenario: error: disk full (the answer printed above is complete)\n"
    assert drive.end("server gone") == EXIT_FAILED_RUN
    assert capsys.readouterr().err.endswith("benchtop scenario: error: server gone\n")
    assert out.getvalue() == ""


def test_an_answer_a_signal_cut_short_exits_as_the_signal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The knee's search cut short by SIGTERM exits 143 after its answer; cut
    short by its time budget, or finished after a signal came, it exits 0."""
    drive = Drive(_Session(_Writer(tmp_path)), io.StringIO(), prog="benchtop knee")  # type: ignore[arg-type]
    assert drive.end(None, printed="answer", cut_short="the time budget is spent") == EXIT_OK
    drive.stop.set("signal SIGTERM", signal.SIGTERM)
    capsys.readouterr()
    assert drive.end(None, printed="answer", cut_short="signal SIGTERM") == 128 + signal.SIGTERM
    assert capsys.readouterr().err == ("benchtop knee: interrupted (SIGTERM): the answer above is the best so far\n")
    assert drive.end(None, printed="answer") == EXIT_OK  # the search had finished: its answer stands
    assert drive.end(None, printed="answer", cut_short="the time budget is spent") == EXIT_OK
