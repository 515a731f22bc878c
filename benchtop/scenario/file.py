"""Scenario files: the target and workload at the top, then `[[step]]`s.

    engine = "mysql"
    dsn = "mysql://sbtest@127.0.0.1:3306/sbtest"
    workload = "oltp_read_only"
    table_size = 100000

    [[step]]
    duration = "60s"
    warmup = 10
    threads = "1..1024*2"     # or [1, 2, 4, 8]: one step per value
    stop_if = ["p99>50ms for 10s"]

Top-level keys are the command-line option names with underscores (checked
by the command line's own option table, benchtop.options.run_options, so both accept
the same things).  Step keys: duration, threads, connections,
rate, workload, instrumentation, mark, warmup, repeat, stop_if, name.  A list
(or a "A..B*F" / "A..B+S" range for threads, connections and rate) sweeps;
several sweeps in one step multiply.  Problems are one line: "FILE:LINE: what
is wrong".

Top-level `connections = N` is --connections: the run drives N connections
from event loops, and top-level `threads` is then --threads, the loop threads
(not the steps' default).  In such a run a step's `connections` and, as in
files written before it existed, its `threads` both set the connections.

benchtop/scenario/driver.py runs them.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from benchtop.errors import UsageError, one_line
from benchtop.options.run_options import NUMBER_RANGES, YEAR_S, RunOptions, option_names, options_from_mapping
from benchtop.record.workers import Workers
from benchtop.run.guards import parse_condition
from benchtop.scenario.hooks import Hook, parse_hooks
from benchtop.target.instrumentation import presets_for
from benchtop.target.settings import SettingsError, check_name
from benchtop.workload import WorkloadError
from benchtop.workload.fileio import IO_MODES, TEST_MODES
from benchtop.workload.groups import parse_group_setting

MAX_STEPS = 10_000
STEP_KEYS = ("name", "duration", "threads", "connections", "rate", "workload", "instrumentation", "mark", "warmup", "repeat", "stop_if",
             "settings", "before", "after", "group", "file_test_mode", "file_io_mode")
SWEEP_KEYS = ("threads", "connections", "rate", "workload", "instrumentation", "file_test_mode", "file_io_mode")
# engine = "fileio": a step's test and IO modes travel as its workload, "fileio:TEST/IO"
# (either part empty: the top-level setting), so each combination is its own engine run
FILEIO_KEYS = ("file_test_mode", "file_io_mode")
FILEIO_PREFIX = "fileio:"
# top-level keys that belong to the scenario, not to the run options
SCENARIO_KEYS = ("name", "description", "warmup", "stop_if", "threads", "connections", "rate", "workload", "instrumentation", "restart",
                 "search", "ab")
# run options a scenario decides itself
NOT_AT_TOP = {"time": "step durations", "events": "step durations", "headless": "the command line (--headless)",
              "json": "the command line (--json)", "help": "the command line", "version": "the command line"}
_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


class ScenarioError(ValueError):
    """A scenario file problem: one line naming the file, the line and what is wrong."""


# ------------------------------------------------------------------ the model


@dataclass(frozen=True, slots=True)
class Step:
    index: int  # 0-based position after expansion
    duration: float  # measured seconds, after the warm-up
    warmup: float = 0.0
    threads: int | None = None  # None: keep the current value
    # the same knob, written `connections` in a run on event loops (top-level connections)
    connections: int | None = None
    rate: float | None = None
    workload: str | None = None
    instrumentation: str | None = None
    mark: str | None = None
    name: str | None = None
    stop_if: tuple[str, ...] = ()
    repeat: int = 1  # 1-based index within repeats
    repeats: int = 1
    line: int | None = None  # of its [[step]] header
    settings: tuple[tuple[str, Any], ...] = ()  # server settings this step runs with (name, value)
    before: tuple[Hook, ...] = ()
    after: tuple[Hook, ...] = ()
    group: tuple[str, ...] = ()  # "NAME.threads=N" / "NAME.rate=R" for the workload's thread groups

    @property
    def length(self) -> float:
        return self.warmup + self.duration

    def label(self, total: int | None = None) -> str:
        parts = [f"step {self.index + 1}" + (f"/{total}" if total else "")]
        if self.name:
            parts.append(self.name)
        if self.workload:
            parts.append(self.workload)
        if self.threads is not None:
            parts.append(f"threads {self.threads}")
        if self.connections is not None:
            parts.append(f"connections {self.connections}")
        if self.rate is not None:
            parts.append(f"rate {self.rate:g}/s" if self.rate > 0 else "rate unlimited")
        if self.instrumentation:
            parts.append(f"instrumentation {self.instrumentation}")
        parts += [f"{name}={value}" for name, value in self.settings]
        parts += list(self.group)
        if self.repeats > 1:
            parts.append(f"run {self.repeat}/{self.repeats}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "duration": self.duration, "warmup": self.warmup}
        for key in ("threads", "connections", "rate", "workload", "instrumentation", "mark", "name"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        if self.stop_if:
            d["stop_if"] = list(self.stop_if)
        if self.settings:
            d["settings"] = dict(self.settings)
        if self.before:
            d["before"] = [h.to_dict() for h in self.before]
        if self.after:
            d["after"] = [h.to_dict() for h in self.after]
        if self.group:
            d["group"] = list(self.group)
        if self.repeats > 1:
            d["repeat"] = [self.repeat, self.repeats]
        return d

    @property
    def workers(self) -> int | None:
        """The engine's workers knob this step sets: its threads, or in a
        run on event loops its connections (None: keep the current value)."""
        return self.connections if self.connections is not None else self.threads


@dataclass(frozen=True, slots=True)
class Scenario:
    path: Path | None
    name: str
    description: str
    options: Mapping[str, Any]  # run options (CLI names with underscores), as written
    steps: tuple[Step, ...]
    stop_if: tuple[str, ...] = ()  # for every step
    restart: Hook | None = None  # run when a step's settings need a server restart
    lines: Mapping[tuple[int, str], int] = field(default_factory=dict, repr=False)
    search: Mapping[str, Any] | None = None  # [search]: what `benchtop knee` searches (benchtop.knee.settings)
    ab: Mapping[str, Any] | None = None  # [ab]: what `benchtop ab` compares (benchtop.ab.settings)

    @property
    def filename(self) -> str:
        return str(self.path) if self.path else "<scenario>"

    @property
    def total_s(self) -> float:
        return sum(s.length for s in self.steps)

    @property
    def changes_settings(self) -> bool:
        return any(s.settings or s.before or s.after for s in self.steps)

    @property
    def workloads(self) -> list[str]:
        """The distinct workloads, in order of first use."""
        seen: list[str] = []
        for s in self.steps:
            w = s.workload or str(self.options.get("workload", "oltp_read_write"))
            if w not in seen:
                seen.append(w)
        return seen

    def workload_of(self, step: Step) -> str:
        return step.workload or str(self.options.get("workload", "oltp_read_write"))

    def error(self, problem: str, section: int = -1, key: str | None = None) -> ScenarioError:
        """`FILE:LINE: problem`, LINE being the key's (or the step's) line
        when known, and the key named first when the problem does not name it."""
        line = self.lines.get((section, key or "")) or self.lines.get((section, ""))
        return ScenarioError(_where(self.filename, line) + _naming(key, problem))

    def table_error(self, table: str, problem: str, key: str | None = None) -> ScenarioError:
        """`FILE:LINE: [table]: problem`, LINE being the key's inside the table
        (or the table's header) when known."""
        line = (self.lines.get((-2, key)) if key else None) or self.lines.get((-1, table))
        return ScenarioError(_where(self.filename, line) + f"[{table}]: {_naming(key, problem)}")


def _where(filename: str, line: int | None) -> str:
    return f"{filename}:{line}: " if line else f"{filename}: "


def _naming(key: str | None, problem: str) -> str:
    """The problem with its key first unless it names it already, in the
    file's spelling or the command line's (a value's own check, such as a
    range's or a duration's, does not know which key it checks).

    >>> _naming("threads", "'lots' is not a range"), _naming("stop_if", "--stop-if 'x': expected METRIC")
    ("threads: 'lots' is not a range", "--stop-if 'x': expected METRIC")
    """
    if key is None or re.search(rf"(?<![\w-])(--)?({re.escape(key)}|{re.escape(key.replace('_', '-'))})(?![\w-])",
                                problem):
        return problem
    return f"{key}: {problem}"


# ------------------------------------------------------------------ parsing


_HEADER = re.compile(r"^\s*\[\[\s*step\s*\]\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")
_KEY = re.compile(r"^\s*(?:\"([^\"]+)\"|'([^']+)'|([A-Za-z0-9_-]+))\s*=")


def key_lines(text: str) -> dict[tuple[int, str], int]:
    """(section, key) -> 1-based line; section -1 is the top level, k the
    k-th [[step]] (whose header line is under key "")."""
    out: dict[tuple[int, str], int] = {}
    section, steps = -1, 0
    for n, line in enumerate(text.splitlines(), start=1):
        if _HEADER.match(line):
            section, steps = steps, steps + 1
            out[(section, "")] = n
            continue
        if _TABLE.match(line):
            section = -2  # some other table: not ours, but say where it is
            m = re.match(r"^\s*\[+\s*([A-Za-z0-9_-]+)", line)
            if m:
                out.setdefault((-1, m.group(1)), n)
            continue
        m = _KEY.match(line)
        if m:
            out.setdefault((section, next(g for g in m.groups() if g)), n)
    return out


def _toml_error(filename: str, text: str, exc: tomllib.TOMLDecodeError) -> ScenarioError:
    msg = str(exc)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m:
        body = msg[: m.start()].strip()
        return ScenarioError(f"{filename}:{m.group(1)}: {body[:1].lower() + body[1:]} (column {m.group(2)})")
    if "at end of document" in msg:
        body = msg.replace("(at end of document)", "").strip()
        return ScenarioError(f"{filename}:{max(1, len(text.splitlines()))}: {body[:1].lower() + body[1:]} at the end of the file")
    return ScenarioError(f"{filename}: {msg.splitlines()[0] if msg else 'not valid TOML'}")


def parse_duration(value: Any) -> float:
    """Seconds from 30, 2.5, "30s", "5m", "1h", "500ms".

    >>> parse_duration("5m"), parse_duration(90), parse_duration("1.5s")
    (300.0, 90.0, 1.5)
    """
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string such as \"30s\" or \"5m\"")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", value)
        if not m or (m.group(2) or "s") not in _DURATION_UNITS:
            raise ValueError(f"{value!r} is not a duration (use seconds, or e.g. \"30s\", \"5m\", \"1h\")")
        seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
    else:
        raise ValueError("a duration is a number of seconds or a string such as \"30s\" or \"5m\"")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{value!r} is not a duration")
    if seconds > YEAR_S:  # as --time and --warmup
        raise ValueError(f"{value!r} is longer than a year ({YEAR_S} s), the longest duration a step takes")
    return seconds


def parse_range(text: str, integer: bool, counting: str = "thread") -> list[float]:
    """"1..1024*2" (geometric), "10..250+10" (arithmetic), "1..8" (by one).

    >>> parse_range("1..64*2", True)
    [1, 2, 4, 8, 16, 32, 64]
    >>> parse_range("100..400+150", False)
    [100.0, 250.0, 400.0]
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*\.\.\s*(\d+(?:\.\d+)?)\s*(?:([*+])\s*(\d+(?:\.\d+)?))?\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not a range (use e.g. \"1..1024*2\" or \"10..250+10\")")
    lo, hi = float(m.group(1)), float(m.group(2))
    op, by = m.group(3) or "+", float(m.group(4) or 1)
    if hi < lo:
        raise ValueError(f"range {text!r} goes down: write the smaller bound first")
    if (op == "*" and by <= 1) or (op == "+" and by <= 0) or (op == "*" and lo <= 0):
        raise ValueError(f"range {text!r} never ends: use *F with F > 1 from a start above 0, or +S with S > 0")
    out: list[float] = []
    v = lo
    while v <= hi * (1 + 1e-9):
        out.append(v)
        if len(out) > MAX_STEPS:
            raise ValueError(f"range {text!r} has more than {MAX_STEPS} values")
        v = v * by if op == "*" else v + by
    if integer:
        if any(x != int(x) for x in out):
            raise ValueError(f"range {text!r} gives fractional {counting} counts")
        return [int(x) for x in out]
    return out


def _count(what: str, most: int) -> Callable[[Any], int]:
    """A validator of whole counts from 0 to `most` (threads, connections)."""
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value != int(value):
            raise ValueError(f"{what} must be whole numbers, not {value!r}")
        if not 0 <= value <= most:
            raise ValueError(f"{what} {value!r} out of range (0..{most})")
        return int(value)
    return check


# before the engine is known: threads a thread each, connections as many as event loops carry
# (build_options holds the connections of an engine without them to its threads' limit)
_threads = _count("threads", Workers(1).limit)
_connections = _count("connections", Workers(1, loop_threads=1).limit)


MAX_RATE = NUMBER_RANGES["rate"][2]


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"rate must be a number of transactions/s (0 = unlimited), not {value!r}")
    if value > MAX_RATE:  # as --rate
        raise ValueError(f"rate {value!r} out of range (0..{MAX_RATE:.0f} transactions/s)")
    return float(value)


def _name(key: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{key} must be a non-empty string, not {value!r}")
        return value.strip()

    return check


def _choice(key: str, allowed: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"{key} takes {', '.join(allowed)}, not {value!r}")
        return str(value)

    return check


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "threads": _threads,
    "connections": _connections,
    "rate": _rate,
    "workload": _name("workload"),
    "instrumentation": _name("instrumentation"),
    "file_test_mode": _choice("file_test_mode", TEST_MODES),
    "file_io_mode": _choice("file_io_mode", IO_MODES),
}


def _values(key: str, value: Any) -> list[Any]:
    """A sweepable key's value(s): a list, a range string (threads/connections/rate) or one value."""
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{key} = [] sweeps nothing: give at least one value")
        return [_CONVERT[key](v) for v in value]
    if key in ("threads", "connections", "rate") and isinstance(value, str):
        return [_CONVERT[key](v) for v in parse_range(value, key != "rate", key[:-1])]
    return [_CONVERT[key](value)]


def _stop_if(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ValueError("stop_if is a condition string or a list of them, e.g. [\"p99>50ms for 10s\"]")
    for item in items:
        parse_condition(item)  # GuardError is a ValueError: same one-line path
    return tuple(items)


def parse_scenario(text: str, filename: str = "<scenario>", path: Path | None = None) -> Scenario:
    """A Scenario from TOML text, or ScenarioError (one line)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(filename, text, exc) from None
    lines = key_lines(text)
    probe = Scenario(path, "", "", {}, (), lines=lines)
    if path is None:
        probe = replace(probe, path=Path(filename)) if filename != "<scenario>" else probe

    known = option_names("run")
    options: dict[str, Any] = {}
    for key, value in data.items():
        if key == "step":
            continue
        if key in NOT_AT_TOP:
            raise probe.error(f"{key} is not a scenario setting: it comes from {NOT_AT_TOP[key]}", -1, key)
        if isinstance(value, dict) and key not in ("restart", "search", "ab"):
            raise probe.error(f"[{key}] is not a scenario table: only [[step]], [search] and [ab] tables are", -1, key)
        if key in SCENARIO_KEYS:
            continue
        if isinstance(value, list) and not (key in known and known[key][1] and all(isinstance(v, str) for v in value)):
            raise probe.error(f"{key} takes one value (lists sweep only threads, connections, rate, "
                              "workload and instrumentation, inside a [[step]])", -1, key)
        if key not in known and not re.fullmatch(r"[a-z][a-z0-9_]*", key):
            raise probe.error(f"unknown setting {key!r}", -1, key)
        if hasattr(value, "isoformat"):  # TOML dates and times
            raise probe.error(f"{key}: dates and times are not option values", -1, key)
        options[key] = value

    key = "name"
    try:
        name = _name("name")(data["name"]) if "name" in data else (path.stem if path else "scenario")
        description = str(data.get("description", ""))
        key = "warmup"
        default_warmup = parse_duration(data.get("warmup", 0))
        key = "stop_if"
        stop_if = _stop_if(data.get("stop_if", []))
        key = "restart"
        restart_hooks = parse_hooks(data["restart"], parse_duration) if "restart" in data else ()
        if len(restart_hooks) > 1 or any(h.kind != "shell" for h in restart_hooks):
            raise ValueError("restart is one shell hook: { shell = \"...\", timeout = \"120s\" }")
        defaults: dict[str, list[Any]] = {}
        for key in SWEEP_KEYS:
            if key in data and key not in FILEIO_KEYS:
                defaults[key] = _values(key, data[key])
    except ValueError as exc:
        raise probe.error(str(exc), -1, key) from None
    for key, vals in defaults.items():
        if len(vals) != 1:
            raise probe.error(f"top-level {key} takes one value: sweep inside a [[step]]", -1, key)
        if key in ("workload",):
            options["workload"] = vals[0]
    if "connections" in defaults:
        # --connections N --threads J: the run's starting connections on J
        # loop threads, as on the command line; neither is a step default
        # (steps that set neither keep the connections they find)
        if defaults["connections"][0] < 1:
            raise probe.error("top-level connections must be at least 1 (the run's starting connections)",
                              -1, "connections")
        options["connections"] = defaults.pop("connections")[0]
        if "threads" in defaults:
            options["threads"] = defaults.pop("threads")[0]

    probe = replace(probe, options=options)
    raw_steps = data.get("step")
    ab = data.get("ab")
    if ab is not None:
        # a comparison runs each side for its rounds' time: it has no steps
        if not isinstance(ab, dict):
            raise probe.error("ab is a table: [ab] with a, b, rounds, round_time, ...", -1, "ab")
        if raw_steps is not None or "search" in data:
            raise probe.error("a scenario with [ab] (benchtop ab) has no [[step]] or [search] tables", -1, "ab")
        # the keys that are steps' defaults elsewhere are both sides' options here
        shared: dict[str, Any] = {k: defaults[k][0] for k in ("threads", "rate", "instrumentation") if k in defaults}
        if "warmup" in data:
            shared["warmup"] = default_warmup
        if stop_if:
            shared["stop_if"] = list(stop_if)
        return Scenario(path or probe.path, name if "name" in data or path else "ab", description,
                        {**options, **shared}, (), (), None, lines, ab=dict(ab))
    search = data.get("search")
    if search is not None:
        # a search decides its own settings and durations: it has no steps
        if not isinstance(search, dict):
            raise probe.error("search is a table: [search] with min_threads, max_threads, p99_limit, ...", -1, "search")
        if raw_steps is not None:
            raise probe.error("a scenario with [search] (benchtop knee) has no [[step]] tables", -1, "search")
        return Scenario(path or probe.path, data.get("name", path.stem if path else "knee"), str(data.get("description", "")),
                        options, (), (), None, lines, dict(search))
    if raw_steps is None:
        raise probe.error("no [[step]] tables: add at least one with a duration")
    if not isinstance(raw_steps, list) or not all(isinstance(s, dict) for s in raw_steps):
        raise probe.error("step must be written as [[step]] tables", -1, "step")

    steps: list[Step] = []
    for k, raw in enumerate(raw_steps):
        steps.extend(_expand(probe, k, raw, defaults, default_warmup, len(steps)))
        if len(steps) > MAX_STEPS:
            raise probe.error(f"more than {MAX_STEPS} steps after expanding sweeps", k)
    if not steps:
        raise probe.error("no [[step]] tables: add at least one with a duration")
    return Scenario(path or probe.path, name, description, options, tuple(steps), stop_if,
                    restart_hooks[0] if restart_hooks else None, lines)


def _expand(probe: Scenario, k: int, raw: Mapping[str, Any], defaults: Mapping[str, list[Any]],
            default_warmup: float, first_index: int) -> list[Step]:
    for key in raw:
        if key not in STEP_KEYS:
            raise probe.error(f"unknown key {key!r} in [[step]] {k + 1} (use {', '.join(STEP_KEYS)})", k, key)
    if "duration" not in raw:
        raise probe.error(f"[[step]] {k + 1} has no duration", k)
    if "connections" in raw and "connections" not in probe.options:
        raise probe.error(f"[[step]] {k + 1} sets connections in a run without event loops: add connections = N "
                          "at the top level (and threads = loop threads), or set threads", k, "connections")
    if "connections" in raw and "threads" in raw:
        raise probe.error(f"[[step]] {k + 1} sets both threads and connections: in a run on event loops both mean "
                          "its connections, so set connections only", k, "connections")
    key = "duration"
    try:
        duration = parse_duration(raw["duration"])
        if duration <= 0:
            raise ValueError("duration must be more than 0 seconds")
        key = "warmup"
        warmup = parse_duration(raw["warmup"]) if "warmup" in raw else default_warmup
        key = "repeat"
        repeats = raw.get("repeat", 1)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_STEPS:
            raise ValueError(f"repeat must be a whole number from 1 to {MAX_STEPS}, not {repeats!r}")
        key = "stop_if"
        stop_if = _stop_if(raw.get("stop_if", []))
        key = "mark"
        mark = raw.get("mark")
        if mark is not None and not isinstance(mark, str):
            raise ValueError(f"mark must be a string, not {mark!r}")
        key = "name"
        name = _name("name")(raw["name"]) if "name" in raw else None
        key = "before"
        before = parse_hooks(raw["before"], parse_duration) if "before" in raw else ()
        key = "after"
        after = parse_hooks(raw["after"], parse_duration) if "after" in raw else ()
        key = "group"
        group, group_sweeps = _group_settings(raw.get("group", []))
        key = "settings"
        setting_sweeps = _settings(raw.get("settings", {}))
        sweeps: list[tuple[str, list[Any]]] = []
        for key in SWEEP_KEYS:
            if key in raw:
                sweeps.append((key, _values(key, raw[key])))
            elif key in defaults:
                sweeps.append((key, defaults[key]))
    except (ValueError, SettingsError) as exc:
        raise probe.error(str(exc), k, key) from None
    # sweeps in the order the file wrote them: the first written is the outer loop
    order = {key: i for i, key in enumerate(raw)}
    sweeps.sort(key=lambda kv: order.get(kv[0], -1))
    # settings sweep inside the others, in the order the table wrote them
    sweeps += [(f"setting:{n}", vals) for n, vals in setting_sweeps]
    sweeps += [(f"group:{n}", vals) for n, vals in group_sweeps]
    combos = 1
    for _, vals in sweeps:
        combos *= len(vals)
        if combos * repeats > MAX_STEPS:
            raise probe.error(f"[[step]] {k + 1} expands to more than {MAX_STEPS} steps", k)
    if any(key in FILEIO_KEYS for key, _ in sweeps):
        if probe.options.get("engine") != "fileio":
            raise probe.error("file_test_mode and file_io_mode in a [[step]] need engine = \"fileio\"", k)
        if any(key == "workload" for key, _ in sweeps):
            raise probe.error("engine = \"fileio\" has no workload: sweep file_test_mode and file_io_mode", k)
    out: list[Step] = []
    for values in itertools.product(*(vals for _, vals in sweeps)):
        chosen = dict(zip((key for key, _ in sweeps), values, strict=True))
        settings = tuple((key[8:], chosen.pop(key)) for key in list(chosen) if key.startswith("setting:"))
        swept = tuple(chosen.pop(key) for key in list(chosen) if key.startswith("group:"))
        if any(key in chosen for key in FILEIO_KEYS):
            test, io = chosen.pop("file_test_mode", ""), chosen.pop("file_io_mode", "")
            chosen["workload"] = f"{FILEIO_PREFIX}{test}/{io}"
        for r in range(repeats):
            out.append(Step(index=first_index + len(out), duration=duration, warmup=warmup, mark=mark, name=name,
                            stop_if=stop_if, repeat=r + 1, repeats=repeats, line=probe.lines.get((k, "")),
                            settings=settings, before=before, after=after, group=group + swept, **chosen))
    return out


def _settings(value: Any) -> list[tuple[str, list[Any]]]:
    """`settings = { sync_binlog = [0, 1], innodb_buffer_pool_size = "1G" }`:
    (name, values) per setting; a list sweeps."""
    if not isinstance(value, dict):
        raise ValueError("settings is a table: settings = { sync_binlog = [0, 1] }")
    out = []
    for name, vals in value.items():
        check_name(name)
        items = vals if isinstance(vals, list) else [vals]
        if not items:
            raise ValueError(f"settings: {name} = [] sweeps nothing")
        for v in items:
            if isinstance(v, (dict, list)) or hasattr(v, "isoformat"):
                raise ValueError(f"settings: {name} takes numbers, strings or true/false, not {v!r}")
        out.append((name, items))
    return out


def _group_settings(value: Any) -> tuple[tuple[str, ...], list[tuple[str, list[str]]]]:
    """`group = ["inserters.rate=1000", "queriers.threads=1..64*2"]`: the fixed
    settings, and (NAME.key, one setting per value) for each range, which sweeps
    as `threads` ranges do."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ValueError("group is a list of \"NAME.threads=N\" / \"NAME.rate=R\" strings")
    fixed: list[str] = []
    sweeps: list[tuple[str, list[str]]] = []
    for item in items:
        target, _, spec = item.partition("=")
        try:
            if ".." in spec:
                values = parse_range(spec, target.strip().endswith(".threads"))
                settings = [f"{target.strip()}={v:g}" for v in values]
                for setting in settings:
                    parse_group_setting(setting)
                sweeps.append((target.strip(), settings))
            else:
                parse_group_setting(item)
                fixed.append(item)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
    return tuple(fixed), sweeps


def load_scenario(path: Path) -> Scenario:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the scenario ({exc.strerror or exc})") from None
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ScenarioError(f"{path}:{line}: not a text file (not UTF-8)") from None
    return parse_scenario(text, str(path), path)


# ------------------------------------------------------------------ run configs


def scenario_values(scenario: Scenario, workload: str | None = None, out: str | None = None) -> dict[str, Any]:
    """The run options a scenario's top-level settings stand for (time 0:
    steps decide how long the load runs)."""
    values = dict(scenario.options)
    if workload is not None and workload.startswith(FILEIO_PREFIX):
        test, _, io = workload[len(FILEIO_PREFIX):].partition("/")
        values.update({k: v for k, v in (("file_test_mode", test), ("file_io_mode", io)) if v})
    elif workload is not None:
        values["workload"] = workload
    if out is not None:
        values["out"] = out
    wl = values.get("workload")
    if isinstance(wl, str) and wl.endswith(".toml") and scenario.path and not Path(wl).is_absolute():
        candidate = scenario.path.parent / wl  # relative to the scenario file, as users expect
        if candidate.is_file():
            values["workload"] = str(candidate)
    values["time"] = 0
    return values


def build_options(scenario: Scenario, workload: str | None = None, out: str | None = None) -> RunOptions:
    """The RunOptions of one workload of the scenario, checked as the command
    line's are; problems come back as ScenarioError naming the key's line."""
    try:
        opts = options_from_mapping(scenario_values(scenario, workload, out))
    except (UsageError, WorkloadError, ValueError) as exc:
        msg = one_line(exc)
        m = re.search(r"--([a-z][a-z0-9-]*)", msg)
        key = m.group(1).replace("-", "_") if m else None
        section = -1
        if workload is not None and (key == "workload" or key is None):
            section = next((s for s in range(len(scenario.steps)) if (s, "workload") in scenario.lines), -1)
        raise scenario.error(msg, section, key) from None
    for step in scenario.steps:
        # SQLite and fileio keep a thread per connection: the thread cap holds
        problem = opts.workers.with_connections(step.connections or 0).problem(least=0)
        if problem:
            raise ScenarioError(_where(scenario.filename, step.line) + f"connections {step.connections} with engine "
                                f"{opts.engine}: {problem}")
    if scenario.stop_if or any(s.stop_if for s in scenario.steps):
        opts = replace(opts, stop_if=tuple(scenario.stop_if))
    return opts


def all_conditions(scenario: Scenario) -> list[str]:
    """Every stop_if of the scenario (top level and steps), once each."""
    out = list(scenario.stop_if)
    for step in scenario.steps:
        out += [c for c in step.stop_if if c not in out]
    return out


def check_instrumentation(scenario: Scenario, engine: str) -> None:
    """Every step's preset exists for this engine (no server contact)."""
    wanted = [(s, s.instrumentation) for s in scenario.steps if s.instrumentation]
    if not wanted:
        return
    section = next((k for k in range(len(scenario.steps)) if (k, "instrumentation") in scenario.lines), -1)
    if engine not in ("mysql", "postgresql"):
        raise scenario.error("instrumentation needs --engine mysql/postgres (engine = \"mysql\" or \"postgres\")",
                             section, "instrumentation")
    names = presets_for(engine)
    for step, preset in wanted:
        if preset not in names:
            raise scenario.error(f"unknown instrumentation preset {preset!r} in {step.label()} "
                                 f"(for {engine}: {', '.join(names)})", section, "instrumentation")
