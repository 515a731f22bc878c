"""Drive a terminal program inside a detached tmux session: start it at a
given size, send keys, read the screen as text, wait for text to appear.
Used by the end-to-end TUI tests."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


# A server of our own: never touches the user's (or another test run's) sessions.
SOCKET = f"benchtop-tests-{uuid.uuid4().hex[:8]}"


def _tmux(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", SOCKET, *args], check=check, capture_output=True, text=True, timeout=10)


@dataclass
class TmuxSession:
    name: str

    def send_keys(self, *keys: str, literal: bool = False) -> None:
        """tmux key names ("Enter", "Escape", "Space", "C-c") or, with
        literal=True, text typed as is."""
        _tmux("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def capture(self) -> str:
        """The visible pane as plain text (no colours)."""
        return _tmux("capture-pane", "-p", "-t", self.name).stdout

    def wait_for(self, text: str, timeout: float = 10.0, interval: float = 0.1) -> str:
        """The pane once it contains `text`; TimeoutError with the last
        screen when it never does."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return screen
            if not self.alive():
                break
            time.sleep(interval)
        raise TimeoutError(f"{text!r} did not appear within {timeout:g}s; screen was:\n{screen}")

    def wait_gone(self, text: str, timeout: float = 10.0, interval: float = 0.1) -> str:
        """The pane once `text` has left it (a dialog closed...)."""
        deadline = time.monotonic() + timeout
        screen = self.capture()
        while text in screen:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{text!r} still on screen after {timeout:g}s:\n{screen}")
            time.sleep(interval)
            screen = self.capture()
        return screen

    def alive(self) -> bool:
        return _tmux("has-session", "-t", self.name, check=False).returncode == 0

    def wait_exit(self, timeout: float = 10.0) -> bool:
        """Whether the program (and so the session) ended within `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(0.1)
        return False

    def kill(self) -> None:
        _tmux("kill-session", "-t", self.name, check=False)


def start(
    command: Sequence[str] | str,
    width: int = 80,
    height: int = 24,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    keep_open: bool = False,
) -> TmuxSession:
    """Run `command` in a new detached session of width x height.

    With keep_open the pane stays after the program exits (so its last
    output, e.g. a printed summary, can still be captured)."""
    name = f"bt-{uuid.uuid4().hex[:10]}"
    cmd = command if isinstance(command, str) else shlex.join(command)
    args = ["new-session", "-d", "-s", name, "-x", str(width), "-y", str(height)]
    if cwd:
        args += ["-c", cwd]
    for key, value in (env or {}).items():
        args += ["-e", f"{key}={value}"]
    args += ["sh", "-c", cmd + ("; sleep 3600" if keep_open else "")]
    for attempt in range(3):
        # the server exits with its last session; a start racing that exit fails once
        done = _tmux(*args, check=False)
        if done.returncode == 0:
            break
        if attempt == 2:
            raise RuntimeError(f"tmux new-session failed: {done.stderr.strip()}")
        time.sleep(0.2)
    # a session's size follows its clients; pin it for the detached case
    _tmux("set-option", "-t", name, "window-size", "manual", check=False)
    _tmux("resize-window", "-t", name, "-x", str(width), "-y", str(height), check=False)
    return TmuxSession(name)
