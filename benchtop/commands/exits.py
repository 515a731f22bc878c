"""Exit codes of every command, and the errors that end a command with one
line instead of a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable

from benchtop.errors import EngineNotBuilt, Interrupted, UsageError, one_line

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAILED_RUN = 0, 1, 2, 3


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors bad input causes (exit code 1, one line), as opposed to bugs.
    Imported here, not above: they load the engine, and a source tree
    without a built engine must still get its one line."""
    from benchtop.engine import EngineError
    from benchtop.record.folder import ResultsError
    from benchtop.target import TargetError
    from benchtop.workload import WorkloadError
    from benchtop.workload.prepare import PrepareError

    return (WorkloadError, TargetError, ResultsError, PrepareError, EngineError)


def reporting_errors(prog: str, work: Callable[[], int], usage: tuple[type[BaseException], ...] = ()) -> int:
    """`work()`'s exit code; a mistake of the user's (bad input: UsageError
    or `usage`, exit 2; a target, workload or results problem, exit 1) or an
    interrupt becomes one line on stderr instead of a traceback."""
    bad_input: tuple[type[BaseException], ...] = (UsageError, *usage)
    try:
        return work()
    except bad_input as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except EngineNotBuilt as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except user_errors() as exc:
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except Interrupted as exc:
        print(f"{prog}: {str(exc) or f'interrupted ({exc.signal_name})'}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
