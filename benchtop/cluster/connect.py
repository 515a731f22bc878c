"""Reaching Ray: the extra that installs it, the address, Ray's own lines
kept off the terminal, and why a load host did not start, each in one line."""

from __future__ import annotations

import io
import logging
import os
import re
import socket
import sys
import tempfile
from contextlib import contextmanager
from typing import Any, Iterator

from benchtop.errors import UsageError, one_line


def ray_module() -> Any:
    """Ray, or a one-line error naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise UsageError("--cluster needs the cluster extra: pip install 'benchtop[cluster]'") from None
    return ray


def reachable(address: str, timeout: float = 5.0) -> None:
    """A one-line error now when HOST:PORT or ray://HOST:PORT does not
    answer (Ray itself retries for minutes); `auto` is Ray's to resolve."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UsageError(f"--cluster {address}: cannot reach the Ray cluster: "
                         f"{exc.strerror or type(exc).__name__}") from None


class RayLinesToLog:
    """Ray's C++ core writes lines of its own to file descriptor 2 (the log
    level it read, internal errors as actors go, at any time while it is
    attached), under benchtop's lines and the TUI.  While this is open, fd
    2 is `path` (the results folder's ray.log, or /dev/null) and Python's
    sys.stderr and sys.__stderr__ write to the terminal on a descriptor of
    their own, so benchtop's own lines still reach it, and so does the TUI:
    Textual draws on sys.__stderr__, which on fd 2 put every frame of a
    --cluster dashboard into ray.log and left the terminal blank."""

    def __init__(self, path: str) -> None:
        sys.stderr.flush()
        self._terminal = os.dup(2)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError:
            fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 2)
        os.close(fd)
        self._python = sys.stderr
        self._original = sys.__stderr__
        self._ours = io.TextIOWrapper(io.FileIO(os.dup(self._terminal), "w"), encoding=sys.stderr.encoding,
                                      errors="backslashreplace", line_buffering=True)
        sys.stderr = self._ours
        sys.__stderr__ = self._ours  # type: ignore[misc]  # Final in typeshed; Textual reads it to draw

    def close(self) -> None:
        if self._terminal < 0:
            return
        self._ours.flush()
        if sys.__stderr__ is self._ours:
            sys.__stderr__ = self._original  # type: ignore[misc]
        if sys.stderr is self._ours:  # else someone (a TUI) swapped it since and puts it back itself
            sys.stderr = self._python
            self._ours.close()
        os.dup2(self._terminal, 2)
        os.close(self._terminal)
        self._terminal = -1


@contextmanager
def _in_empty_folder() -> Iterator[None]:
    """Ray puts the driver's working folder first on every worker's import
    path: started from benchtop's own source tree, the load hosts would
    import that tree (whose engine is not built) instead of the installed
    package.  Ray reads the folder while it connects, so it connects from an
    empty one."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="benchtop-ray-") as empty:
        os.chdir(empty)
        try:
            yield
        finally:
            os.chdir(here)


def join_ray(ray: Any, address: str, ray_log: str) -> RayLinesToLog | None:
    """Connects this process to the Ray cluster at `address` unless Ray is
    already initialised (a test, a notebook, which keep their own stderr);
    when this call did, what keeps Ray's lines in `ray_log` until the
    caller has shut Ray down and closes it."""
    if ray.is_initialized():
        return None
    reachable(address)
    # Ray's C++ core logs warnings to stderr: keep them to errors
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
    quiet = RayLinesToLog(ray_log)
    try:
        # log_to_driver=False: the actors' output stays in Ray's logs, off the TUI
        with _in_empty_folder():
            ray.init(address=address, namespace="benchtop", log_to_driver=False, logging_level=logging.ERROR)
    except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError, ...
        quiet.close()
        raise UsageError(f"--cluster {address}: cannot connect to the Ray cluster: {one_line(exc)}") from None
    return quiet


_ERROR_LINE = re.compile(r"^\s*(\w+(?:Error|Exception)): .+$")


def why_not_started(exc: BaseException) -> str:
    """One line for an actor that died starting: Ray's message holds the
    actor's whole traceback, whose last `SomethingError: ...` line is the
    cause ("The actor died unexpectedly" alone says nothing)."""
    causes = [m.group(0).strip() for line in str(exc).splitlines() if (m := _ERROR_LINE.match(line))]
    return causes[-1] if causes else one_line(exc)
