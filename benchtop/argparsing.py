"""One argument parser behaviour for every benchtop command: a bad option is
a one-line error the command prints (exit code 2), not argparse's usage dump."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
