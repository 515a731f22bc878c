"""A scenario step's `before` and `after` hooks: SQL on the target
(`SET GLOBAL ...`, `VACUUM ANALYZE`, `CHECKPOINT`) and shell commands with a
timeout (restart the server, drop the OS caches), after which benchtop waits
until the target accepts connections again.

    [[step]]
    before = ["VACUUM ANALYZE", { shell = "sudo systemctl restart mariadb", timeout = "120s" }]
    after = [{ sql = "CHECKPOINT" }]

Hooks never run in monitor mode.  Each run is a `HookResult` for the
timeline and summary.json.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable

from benchtop.engine import ConnSettings, EngineError, exec_sql
from benchtop.errors import one_line
from benchtop.workload.statements import split_at_semicolons

DEFAULT_SHELL_TIMEOUT_S = 300.0
DEFAULT_WAIT_S = 300.0  # for the target to accept connections after a shell hook


class HookError(Exception):
    """A hook failed (or was refused); one line."""


@dataclass(frozen=True, slots=True)
class Hook:
    kind: str  # "sql" or "shell"
    command: str
    timeout_s: float = DEFAULT_SHELL_TIMEOUT_S

    def describe(self) -> str:
        return f"{self.kind}: {self.command}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "command": self.command}
        if self.kind == "shell":
            d["timeout_s"] = self.timeout_s
        return d


@dataclass(frozen=True, slots=True)
class HookResult:
    hook: Hook
    when: str  # before, after, restart
    step: int | None
    seconds: float
    ok: bool
    detail: str = ""

    def text(self) -> str:
        state = "done" if self.ok else f"failed: {self.detail}"
        return f"hook {self.when} ({self.hook.describe()}): {state} in {self.seconds:.1f}s"

    def to_dict(self) -> dict[str, Any]:
        d = {**self.hook.to_dict(), "when": self.when, "step": self.step, "seconds": round(self.seconds, 3),
             "ok": self.ok}
        if self.detail:
            d["detail"] = self.detail
        return d


def parse_hooks(value: Any, parse_duration: Callable[[Any], float]) -> tuple[Hook, ...]:
    """A step's `before`/`after`: a string (SQL), a table ({sql = ...} or
    {shell = ..., timeout = ...}), or a list of those."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, str) and item.strip():
            out.append(Hook("sql", item.strip()))
        elif isinstance(item, dict) and len({"sql", "shell"} & item.keys()) == 1 \
                and set(item) <= {"sql", "shell", "timeout"}:
            kind = "sql" if "sql" in item else "shell"
            command = item[kind]
            if not isinstance(command, str) or not command.strip():
                raise ValueError(f"a {kind} hook needs a non-empty command")
            timeout = parse_duration(item["timeout"]) if "timeout" in item else DEFAULT_SHELL_TIMEOUT_S
            if kind == "sql" and "timeout" in item:
                raise ValueError("timeout is for shell hooks")
            out.append(Hook(kind, command.strip(), timeout))
        else:
            raise ValueError("a hook is SQL text, { sql = \"...\" } or { shell = \"...\", timeout = \"60s\" }")
    return tuple(out)


def split_sql(text: str) -> list[str]:
    """Statements of a hook, split at semicolons outside quotes (VACUUM
    cannot run inside the implicit transaction of a multi-statement string).

    >>> split_sql("ALTER SYSTEM SET x = 'a;b'; SELECT pg_reload_conf();")
    ["ALTER SYSTEM SET x = 'a;b'", 'SELECT pg_reload_conf()']
    """
    pieces = (s.strip() for s in split_at_semicolons(text, quotes="'\"`"))  # MySQL quotes names with backticks
    return [s for s in pieces if s]


class HookRunner:
    """Runs hooks against one target: SQL with `conn` (admin credentials when
    the run has them), and after a shell hook waits until `wait_with` (the
    load's own credentials; default `conn`) connects again."""

    def __init__(self, conn: ConnSettings, *, monitor_mode: bool = False, wait_s: float = DEFAULT_WAIT_S,
                 wait_with: ConnSettings | None = None) -> None:
        self.conn = conn
        self.wait_with = wait_with or conn
        self.monitor_mode = monitor_mode
        self.wait_s = wait_s

    def run(self, hook: Hook, when: str, step: int | None) -> HookResult:
        if self.monitor_mode:
            raise HookError("hooks never run in monitor mode (it changes nothing on the servers it watches)")
        t0 = time.monotonic()
        try:
            if hook.kind == "sql":
                for sql in split_sql(hook.command):
                    exec_sql(self.conn, sql)
            else:
                self._shell(hook)
                self.wait_ready(self.wait_s)
        except (HookError, EngineError) as exc:
            return HookResult(hook, when, step, time.monotonic() - t0, False, one_line(exc))
        return HookResult(hook, when, step, time.monotonic() - t0, True)

    def _shell(self, hook: Hook) -> None:
        try:
            res = subprocess.run(hook.command, shell=True, timeout=hook.timeout_s, capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HookError(f"still running after {hook.timeout_s:g}s (killed)") from None
        except OSError as exc:
            raise HookError(one_line(exc)) from None
        if res.returncode != 0:
            last = (res.stderr or res.stdout).strip().splitlines()
            raise HookError(f"exit status {res.returncode}" + (f": {last[-1]}" if last else ""))

    def wait_ready(self, timeout_s: float) -> float:
        """Seconds until the target accepted a connection and a query."""
        if self.wait_with.driver in ("null", "fileio"):
            return 0.0
        t0 = time.monotonic()
        delay = 0.1
        while True:
            try:
                exec_sql(self.wait_with, "SELECT 1")
                return time.monotonic() - t0
            except EngineError as exc:
                if time.monotonic() - t0 > timeout_s:
                    raise HookError(f"the target did not accept connections within {timeout_s:g}s: "
                                    f"{one_line(exc)}") from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
