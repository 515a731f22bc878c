"""Exit codes of every command, and the errors that end a command with one
line instead of a traceback."""

from __future__ import annotations

from benchtop.engine import EngineError
from benchtop.run.results import ResultsError
from benchtop.target import TargetError
from benchtop.workload import WorkloadError
from benchtop.workload.prepare import PrepareError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAILED_RUN = 0, 1, 2, 3


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors bad input causes (exit code 1, one line), as opposed to bugs."""
    return (WorkloadError, TargetError, ResultsError, PrepareError, EngineError)
