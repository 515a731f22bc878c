"""One argument parser behaviour for every benchtop command: a bad option is
a one-line error the command prints (exit code 2), not argparse's usage dump."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


def one_line(exc: BaseException) -> str:
    """An error's first line, for the single line a command prints."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors bad input causes (exit code 1, one line), as opposed to bugs."""
    from benchtop.engine import EngineError
    from benchtop.workload.prepare import PrepareError
    from benchtop.run.results import ResultsError
    from benchtop.target import TargetError
    from benchtop.workload import WorkloadError

    return (WorkloadError, TargetError, ResultsError, PrepareError, EngineError)


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
