"""Errors as users see them: one line.  `one_line` shortens any exception to
its first line; `UsageError` is bad command-line or configuration input; a
`OneLineParser` turns argparse's usage dump into a UsageError."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


def one_line(exc: BaseException) -> str:
    """An error's first line, for the single line a command prints."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
