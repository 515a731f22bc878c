"""Errors as users see them: one line.  `one_line` shortens any exception to
its first line; `UsageError` is bad command-line or configuration input; a
`OneLineParser` turns argparse's usage dump into a UsageError."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, NoReturn


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


def bounded(least: float, most: float, unit: str, *, integer: bool = False) -> Callable[[str], Any]:
    """An argparse `type`: a finite number from `least` to `most`, else one
    line naming the range (`float("nan")` would pass every comparison).

    >>> bounded(0.001, 1e6, "a factor")("2"), bounded(1, 500, "columns", integer=True)("80")
    (2.0, 80)
    >>> bounded(0.001, 1e6, "a factor")("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: takes a factor from 0.001 to 1e+06, not 'nan'
    """

    def convert(text: str) -> float | int:
        try:
            value: float | int = int(text) if integer else float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and least <= value <= most):
            raise argparse.ArgumentTypeError(f"takes {unit} from {least:g} to {most:g}, not {text!r}")
        return value

    return convert


class Interrupted(KeyboardInterrupt):
    """A stop signal in the main thread, raised so that cleanups run (a
    temporary database's folder, a half-done prepare's report) instead of
    the process dying where it stood.  `str()` is what the command left, if
    it says; the exit code is the shell's for the signal (143 for SIGTERM)."""

    def __init__(self, signum: int, what: str = "") -> None:
        super().__init__(what)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        import signal

        return signal.Signals(self.signum).name


def raise_on_sigterm() -> None:
    """SIGTERM raises Interrupted in the main thread from now on (a run's
    own stop handling replaces this while it runs)."""
    import signal

    def handler(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        pass


@contextmanager
def caller_signal_handlers() -> Iterator[None]:
    """SIGINT's and SIGTERM's handlers as they were before the block, back
    after it: a command run in-process (a library caller, a test) installs
    its own stop handling, which must not outlive it."""
    import signal

    saved = [(sig, signal.getsignal(sig)) for sig in (signal.SIGINT, signal.SIGTERM)]
    try:
        yield
    finally:
        for sig, handler in saved:
            try:
                signal.signal(sig, handler)
            except (ValueError, TypeError):  # not the main thread; a handler not set from Python
                pass
