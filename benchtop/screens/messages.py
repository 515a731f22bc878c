"""App-wide messages, each a past-tense fact.

Thread workers only ever post these; handlers on the screens turn them into
widget updates, so no widget is touched from a worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from benchtop.record.controller import Sample
    from benchtop.record.samples import RunSummary
    from benchtop.sources.base import SourceSnapshot


class EngineSampled(Message):
    """The run was read: one more interval, whether it counts (not warm-up),
    and whether the run is over."""

    def __init__(self, sample: Sample) -> None:
        super().__init__()
        self.sample = sample


class SettingsApplied(Message):
    """A knob (threads, rate, pause, mark) reached the controller."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what


class InstrumentationCycled(Message):
    """`i` was applied; `preset` is None when the target has no presets."""

    def __init__(self, preset: str | None) -> None:
        super().__init__()
        self.preset = preset


class ResultsSaved(Message):
    """The results so far were written (`s`)."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths


class RunFinished(Message):
    """The run stopped (time limit, failure or quit) and was summarised."""

    def __init__(self, summary: RunSummary | None, reason: str) -> None:
        super().__init__()
        self.summary = summary
        self.reason = reason


class SourcePolled(Message):
    """A source answered a poll."""

    def __init__(self, source: str, snapshot: SourceSnapshot) -> None:
        super().__init__()
        self.source = source
        self.snapshot = snapshot


class SourceLost(Message):
    """A poll failed as a whole; the poller keeps trying to reconnect."""

    def __init__(self, source: str, error: str) -> None:
        super().__init__()
        self.source = source
        self.error = error
