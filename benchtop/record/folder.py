"""The results folder of a run: written as the run goes, so nothing is lost
if it is interrupted.

    config.json       effective configuration (never a password)
    target.json       server version and settings snapshot (when known)
    settings.json     the server's settings that differ from its defaults, and the host's
    intervals.jsonl   one JSON object per report interval, flushed at once
    timeline.jsonl    changes and marks (threads, rate, pause, instrumentation)
    monitor.jsonl     every monitor snapshot (replayable)
    histogram.json    full latency histograms (sparse bucket counts, mergeable)
    latency.hlog      per-interval latency histograms in the HdrHistogram log format
    summary.json      the summary (per-op costs, sizes, totals, validity), with a `steps` list for scenarios
    hosts.jsonl       a cluster run: each load host's interval lines (and latency-hosts.hlog)

The folder is created readable by the user only (0700).  A run given no
`--out` gets a new one under `default_results_root()`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any, Final, TextIO

from benchtop.record.monitor import is_monitor_record


RESULTS_ENV = "BENCHTOP_RESULTS"

# The folder's files, named here only: writers and readers in every package use these.
CONFIG: Final = "config.json"
TARGET: Final = "target.json"
SETTINGS: Final = "settings.json"
INTERVALS: Final = "intervals.jsonl"
TIMELINE: Final = "timeline.jsonl"
MONITOR: Final = "monitor.jsonl"
HISTOGRAM: Final = "histogram.json"
LATENCY_HLOG: Final = "latency.hlog"
SUMMARY: Final = "summary.json"
HOSTS: Final = "hosts.jsonl"  # a cluster run: each load host's interval lines
HOSTS_HLOG: Final = "latency-hosts.hlog"  # and their latency histograms, tagged by host
AB_JSON: Final = "ab.json"  # a comparison's folder (benchtop ab): its rounds and verdict, beside a folder per run


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
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"results folder {path}: disk full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"results folder {path}: not writable ({exc.strerror})"
    return f"results folder {path}: {exc.strerror or exc}"


# What a run writes, for the free-space check before the load: per report
# interval a line of intervals.jsonl and one of latency.hlog; per monitor poll
# a snapshot per source (the largest seen, PostgreSQL's with its lists, are
# about 20 KB); plus the whole-file results.  Generous: refusing a run costs a
# retry, a full disk mid-run costs the run.
INTERVAL_BYTES = 4096
SNAPSHOT_BYTES = 32 * 1024
FIXED_BYTES = 2 * 1024 * 1024
OPEN_ENDED_S = 3600.0  # a run without --time is budgeted an hour


def expected_bytes(duration_s: float, report_interval_s: float, sources: int, poll_interval_s: float) -> int:
    """About what a run writes into its results folder.

    >>> expected_bytes(60, 1, 0, 2) // 1024
    2288
    """
    seconds = duration_s if duration_s > 0 else OPEN_ENDED_S
    intervals = seconds / (report_interval_s if report_interval_s > 0 else 1.0)
    polls = seconds / poll_interval_s * sources if poll_interval_s > 0 else 0
    return int(FIXED_BYTES + intervals * INTERVAL_BYTES + polls * SNAPSHOT_BYTES)


# held (flock) by the run writing the folder; a second process on the same --out is refused
LOCK_NAME = ".benchtop.lock"


def _lock_folder(folder: Path) -> int:
    """An exclusive lock on the folder (its lock file), or ResultsError naming
    the process that holds it.  Also proves the folder writable."""
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise ResultsError(f"results folder {folder} is being written by another benchtop"
                           f"{f' (pid {holder})' if holder else ''}: choose another --out") from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


class ResultsWriter:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[str, TextIO] = {}
        # files that could not be written, with why: an append-only file stops
        # at its first error (no torn lines after a gap), the run goes on
        self.failures: dict[str, str] = {}
        self._lock: int | None = None
        self._made = not folder.exists()  # removed again at close if nothing was written in it
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(folder, 0o700)
            self._lock = _lock_folder(folder)
        except ResultsError:
            raise
        except OSError as exc:
            raise ResultsError(_describe_oserror(folder, exc)) from None
        held = sorted(p.name for p in folder.iterdir() if p.name != LOCK_NAME)
        if held:
            self._unlock()
            raise ResultsError(f"results folder {folder} already holds {', '.join(held[:3])}"
                               f"{' ...' if len(held) > 3 else ''}: a folder is written by one run only, "
                               "choose a new --out (or leave it out for a new folder)")

    def check_room(self, needed: int) -> None:
        """Refuse before the load when the folder's file system has less room
        than the run will write."""
        try:
            st = os.statvfs(self.folder)
        except OSError:
            return  # cannot tell: the writes themselves will say
        free = st.f_bavail * st.f_frsize
        if free < needed:
            raise ResultsError(
                f"results folder {self.folder}: {free / 2**20:.1f} MiB free, the run needs about "
                f"{needed / 2**20:.1f} MiB: free some space or choose another --out")

    @property
    def failed(self) -> str | None:
        """One line naming every file that could not be written, or None."""
        if not self.failures:
            return None
        names = ", ".join(self.failures)
        return f"could not write {names} in {self.folder}: {next(iter(self.failures.values()))}"

    def _guard(self, name: str, fn: Any) -> None:
        if name in self.failures:
            return
        try:
            fn()
        except OSError as exc:
            why = exc.strerror or str(exc)
            self.failures[name] = "disk full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else why

    def write_json(self, name: str, obj: Any) -> None:
        """Whole-file writes go through a temporary name so a crash never
        leaves a half-written file (nor a full disk a stray temporary).
        Indented for a reader, except the histograms: thousands of bucket
        pairs, for tools, which json's C encoder writes (it does not indent)
        in a seventh of the CPU (0.6 against 4.5 ms at 256 connections)."""
        text = json.dumps(obj, indent=None if name == HISTOGRAM else 2)

        def do() -> None:
            tmp = self.folder / f".{name}.tmp"
            try:
                with open(tmp, "w") as f:
                    f.write(text)
                    f.write("\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.folder / name)
            except OSError:
                tmp.unlink(missing_ok=True)
                raise

        self.failures.pop(name, None)  # a whole file is written anew each time
        self._guard(name, do)

    def append(self, name: str, obj: Any) -> None:
        self.append_lines(name, [json.dumps(obj, separators=(",", ":"))])

    def append_lines(self, name: str, lines: list[str]) -> None:
        """Lines (JSON Lines, the HdrHistogram log), flushed at once."""

        def do() -> None:
            f = self._files.get(name)
            if f is None:
                f = open(self.folder / name, "a", buffering=1)
                self._files[name] = f
            f.write("".join(line + "\n" for line in lines))
            f.flush()

        self._guard(name, do)

    def close(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        self._files.clear()
        self._unlock()
        if self._made:
            # a run refused before it wrote anything (a wrong password, missing tables) leaves no empty folder
            try:
                self.folder.rmdir()
            except OSError:
                pass  # it holds the run's files

    def _unlock(self) -> None:
        if self._lock is None:
            return
        try:  # the lock file goes first, while it is still held: no other run can take it half-removed
            (self.folder / LOCK_NAME).unlink()
        except OSError:
            pass
        os.close(self._lock)
        self._lock = None


# no figure a run writes comes near this (at most 2**62 transactions); -1e308 or 1e400 is a damaged or edited file
MAX_FIGURE = 1e19
# numbers every interval line and summary carries, at their top level (a step's too)
_NUMBERS = ("t", "tps", "qps", "time_s", "transactions", "errors")
_COUNTS = ("threads", "connections")


def figure_problem(record: dict[str, Any]) -> str | None:
    """Why a recorded interval or summary cannot be shown (None when it can):
    a figure that is not a number, a count that is not a whole number, a
    number no run could have measured.

    >>> figure_problem({"t": 1, "tps": "banana"}), figure_problem({"tps": 5.0, "threads": -1e308})
    ("tps is 'banana', not a number", 'threads is -1e+308, not a count')
    >>> figure_problem({"tps": 5.0, "latency_ms": {"p99": float("nan")}}), figure_problem({"tps": 5.0})
    ('latency_ms.p99 is nan, not a figure a run measures', None)
    """
    for key in _NUMBERS:
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"{key} is {value!r}, not a number"
    for key in _COUNTS:
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return f"{key} is {value!r}, not a count"
    for key, value in _numbers(record, ""):
        if not (math.isfinite(value) and abs(value) <= MAX_FIGURE):
            return f"{key} is {value!r}, not a figure a run measures"
    lat = record.get("latency_ms")
    if lat is not None and not (isinstance(lat, dict) and all(isinstance(v, (int, float, type(None)))
                                                               for v in lat.values())):
        return f"latency_ms is {str(lat)[:30]!r}, not latencies"
    return None


def _numbers(value: Any, key: str) -> list[tuple[str, float]]:
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in _numbers(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v, key)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [(key, float(value))]
    return []


def read_jsonl(path: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """The JSON objects of a results file, one a line.  A line that is not a
    JSON object is left out and named, as FILE:LINE, in `problems`; a torn
    last line (a run killed mid-write) too, said as such."""
    return [record for _, record in read_jsonl_lines(path, problems)]


def read_jsonl_lines(path: Path, problems: list[str] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """read_jsonl's objects with their line numbers (from 1)."""
    out: list[tuple[int, dict[str, Any]]] = []
    if not path.is_file():
        return out
    lines = path.read_text(errors="replace").splitlines()
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    for n, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if problems is not None:
                problems.append(f"{path}:{n + 1}: " + ("cut short (the writer was stopped mid-line?), left out"
                                                        if n == last else "not JSON, left out"))
            continue
        if isinstance(record, dict):
            out.append((n + 1, record))
        elif problems is not None:
            problems.append(f"{path}:{n + 1}: not a JSON object ({line[:20]}), left out")
    return out


class UnreadableFile(ValueError):
    """A whole-file result (summary.json, config.json, ...) that cannot be
    read: FILE[:LINE] and why, on one line."""


def read_json(path: Path) -> Any:
    """A whole-file result's value; None when the file is not there."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableFile(f"{path}: unreadable ({exc.strerror})") from None
    try:
        return json.loads(data.decode())
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UnreadableFile(f"{path}:{line}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UnreadableFile(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def read_object(path: Path, problems: list[str] | None = None) -> dict[str, Any] | None:
    """A results file holding one JSON object; another shape is named in
    `problems` and left out (None), as a missing file is."""
    value = read_json(path)
    if value is None or isinstance(value, dict):
        return value
    if problems is not None:
        problems.append(f"{path}:1: not a JSON object ({json.dumps(value)[:20]}), left out")
    return None


class FolderReader:
    """One results folder read back: each file by its name here, the lines
    and files that are not records named (FILE:LINE) in `problems`.  A
    whole file that cannot be read at all raises UnreadableFile."""

    def __init__(self, folder: Path, problems: list[str] | None = None) -> None:
        self.folder = folder
        self.problems: list[str] = [] if problems is None else problems

    def path(self, name: str) -> Path:
        return self.folder / name

    def object(self, name: str) -> dict[str, Any] | None:
        return read_object(self.folder / name, self.problems)

    def summary(self) -> dict[str, Any] | None:
        return self.object(SUMMARY)

    def config(self) -> dict[str, Any]:
        return self.object(CONFIG) or {}

    def lines(self, name: str) -> list[tuple[int, dict[str, Any]]]:
        """A JSON Lines file's objects with their line numbers."""
        return read_jsonl_lines(self.folder / name, self.problems)

    def records(self, name: str) -> list[dict[str, Any]]:
        return read_jsonl(self.folder / name, self.problems)

    def intervals(self) -> list[dict[str, Any]]:
        return self.records(INTERVALS)

    def timeline(self) -> list[dict[str, Any]]:
        return self.records(TIMELINE)

    def monitor(self) -> list[dict[str, Any]]:
        """monitor.jsonl's snapshot records (the lines with sources)."""
        return [r for r in self.records(MONITOR) if is_monitor_record(r)]
