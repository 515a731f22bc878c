"""Errors as users see them: one line.  `one_line` shortens any exception to
its first line; `UsageError` is bad command-line or configuration input; a
`OneLineParser` turns argparse's usage dump into a UsageError."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


class EngineNotBuilt(ImportError):
    """The native engine is missing or from another version (a source tree
    never built, a stale build): one line saying how to build it."""


def one_line(exc: BaseException) -> str:
    """An error's first line, for the single line a command prints; a client
    library's (code, message) pair reads as the server wrote it.

    >>> one_line(Exception(1045, "Access denied for user 'x'"))
    "Access denied for user 'x' (1045)"
    >>> one_line(ValueError("bad  value\\nsecond line"))
    'bad value'
    """
    args = exc.args
    # an OSError's str() also names the file: keep it
    if len(args) >= 2 and isinstance(args[0], int) and isinstance(args[1], str) and not isinstance(exc, OSError):
        return f"{args[1]} ({args[0]})"
    lines = str(exc).strip().splitlines()
    return " ".join(lines[0].split()) if lines else type(exc).__name__


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
