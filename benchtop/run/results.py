"""The results folder of a run: written as the run goes, so nothing is lost
if it is interrupted.

    config.json       effective configuration (never a password)
    target.json       server version and settings snapshot (when known)
    intervals.jsonl   one JSON object per report interval, flushed at once
    timeline.jsonl    changes and marks (threads, rate, pause, instrumentation)
    monitor.jsonl     every monitor snapshot (replayable)
    histogram.json    full latency histograms (sparse bucket counts, mergeable)
    latency.hlog      per-interval latency histograms in the HdrHistogram log format
    summary.json      the summary, with a `steps` list for scenarios

The folder is created readable by the user only (0700).  A run given no
`--out` gets a new one under `default_results_root()`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import time
from pathlib import Path
from typing import Any, TextIO


RESULTS_ENV = "BENCHTOP_RESULTS"


def default_results_root() -> Path:
    """Where runs without --out are saved: $BENCHTOP_RESULTS, else
    $XDG_DATA_HOME/benchtop/runs (~/.local/share/benchtop/runs)."""
    given = os.environ.get(RESULTS_ENV)
    if given:
        return Path(given).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "benchtop" / "runs"


def default_results_folder(name: str, now: float | None = None) -> Path:
    """A new folder for one run: its start time and what ran, e.g.
    20261123-031502-oltp_read_write (a suffix when that one exists)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(name).stem) or "run"
    base = f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}-{stem}"
    root = default_results_root()
    folder, n = root / base, 1
    while folder.exists():
        n += 1
        folder = root / f"{base}-{n}"
    return folder


class ResultsError(OSError):
    """The results folder cannot be written; one line saying why."""


def _describe_oserror(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return f"results folder {path}: disk full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"results folder {path}: not writable ({exc.strerror})"
    return f"results folder {path}: {exc.strerror or exc}"


class ResultsWriter:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[str, TextIO] = {}
        self.failed: str | None = None  # first write error: later writes are skipped, the run goes on
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(folder, 0o700)
            probe = folder / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise ResultsError(_describe_oserror(folder, exc)) from None

    def _guard(self, fn: Any, *args: Any) -> None:
        if self.failed:
            return
        try:
            fn(*args)
        except OSError as exc:
            self.failed = _describe_oserror(self.folder, exc)

    def write_json(self, name: str, obj: Any) -> None:
        """Whole-file writes go through a temporary name so a crash never
        leaves a half-written file."""

        def do() -> None:
            tmp = self.folder / f".{name}.tmp"
            with open(tmp, "w") as f:
                json.dump(obj, f, indent=2, sort_keys=False)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.folder / name)

        self._guard(do)

    def append(self, name: str, obj: Any) -> None:
        def do() -> None:
            f = self._files.get(name)
            if f is None:
                f = open(self.folder / name, "a", buffering=1)
                self._files[name] = f
            f.write(json.dumps(obj, separators=(",", ":")) + "\n")
            f.flush()

        self._guard(do)

    def append_lines(self, name: str, lines: list[str]) -> None:
        """Plain text lines (the HdrHistogram log), flushed at once."""

        def do() -> None:
            f = self._files.get(name)
            if f is None:
                f = open(self.folder / name, "a", buffering=1)
                self._files[name] = f
            f.write("".join(line + "\n" for line in lines))
            f.flush()

        self._guard(do)

    def close(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        self._files.clear()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not path.is_file():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                # a run killed mid-write leaves at most one torn last line
                continue
    return out
