"""A comparison's rounds run to their end, headless or under the TUI (a
benchtop.record.ab.Comparison the screen runs in a thread worker): each
round's line (printed at once headless, kept for the terminal's scrollback
under the TUI) and ab.json rewritten after each round, every side's
settings put back at the end, and what ended it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from benchtop.ab.result import AbResult, round_line
from benchtop.ab.rounds import Round, RoundRunner
from benchtop.ab.view import Progress
from benchtop.commands.ab_runs import RunFailed
from benchtop.record.ab import AbView
from benchtop.stopping import StopFlag
from benchtop.target.settings import SettingsControl, SettingsError


class AbComparison:
    """`runner`'s rounds into `folder`; `controls`: each side's settings
    control (None: it sets none); `progress`: the view kept for the TUI
    (None: headless); `line`: where a round's line goes."""

    def __init__(self, runner: RoundRunner, controls: Mapping[str, SettingsControl | None], folder: Path, seed: int,
                 stop: StopFlag, line: Callable[[str], None], progress: Progress | None = None) -> None:
        self.runner = runner
        self.controls = controls
        self.folder = folder
        self.seed = seed
        self.stop_flag = stop
        self.line = line
        self.progress = progress
        self.failed = ""  # the error that ended it, with any setting that could not be put back
        runner.on_round = self._round_done

    def run(self, publish: Callable[[AbView], None] = lambda view: None) -> None:
        if self.progress is not None:
            self.progress.publish = publish
        failed = ""
        try:
            self.runner.run()
        except (RunFailed, SettingsError) as exc:
            failed = str(exc)
        finally:
            # already restored after each run: this catches a restore that failed there
            self.failed = "; ".join(why for why in [failed, *map(_restore, self.controls.values())] if why)
            if self.progress is not None:
                self.progress.ended(self.stopped_by)

    def stop(self, reason: str) -> None:
        self.stop_flag.set(reason)

    @property
    def stopped_by(self) -> str:
        return self.runner.stopped_by or ("error" if self.failed else "")

    def result(self) -> AbResult:
        r = self.runner
        return AbResult(r.sides, r.plan, r.rounds, self.stopped_by, self.seed, r.horizon)

    def _round_done(self, r: Round) -> None:
        """A round's line, and ab.json rewritten: a comparison killed later keeps what it measured."""
        plan = self.runner.plan
        self.line(round_line(r, plan.rounds if not plan.until_confident else None, plan.duet))
        AbResult(self.runner.sides, plan, list(self.runner.rounds), "", self.seed, self.runner.horizon).write(self.folder)
        if self.progress is not None:
            self.progress.rounds_done(self.runner.rounds, self.runner.horizon)


def _restore(control: SettingsControl | None) -> str:
    """What could not be put back ("" when all was, or nothing was changed)."""
    try:
        if control is not None:
            control.restore()
    except SettingsError as exc:
        return f"{exc}: put them back with `benchtop restore` and the same --dsn and --admin-dsn"
    return ""
