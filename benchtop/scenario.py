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

Top-level keys are the command-line option names with underscores (the CLI
parses them, so both accept the same things).  Step keys: duration, threads,
rate, workload, instrumentation, mark, warmup, repeat, stop_if, name.  A list
(or a "A..B*F" / "A..B+S" range for threads and rate) sweeps; several sweeps
in one step multiply.  Problems are one line: "FILE:LINE: what is wrong".

`ScenarioDriver` runs the steps on RunControllers: one engine across steps
whose workload is the same (threads and rate are live knobs), a new one when
the workload changes.  It never samples by itself, so the TUI or the
headless loop keeps ownership of the sampling cadence.
"""

from __future__ import annotations

import itertools
import math
import re
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

MAX_STEPS = 10_000
MAX_THREADS = 100_000
STEP_KEYS = ("name", "duration", "threads", "rate", "workload", "instrumentation", "mark", "warmup", "repeat", "stop_if")
SWEEP_KEYS = ("threads", "rate", "workload", "instrumentation")
# top-level keys that belong to the scenario, not to the run options
SCENARIO_KEYS = ("name", "description", "warmup", "stop_if", "threads", "rate", "workload", "instrumentation")
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
    rate: float | None = None
    workload: str | None = None
    instrumentation: str | None = None
    mark: str | None = None
    name: str | None = None
    stop_if: tuple[str, ...] = ()
    repeat: int = 1  # 1-based index within repeats
    repeats: int = 1
    line: int | None = None  # of its [[step]] header

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
        if self.rate is not None:
            parts.append(f"rate {self.rate:g}/s" if self.rate > 0 else "rate unlimited")
        if self.instrumentation:
            parts.append(f"instrumentation {self.instrumentation}")
        if self.repeats > 1:
            parts.append(f"run {self.repeat}/{self.repeats}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "duration": self.duration, "warmup": self.warmup}
        for key in ("threads", "rate", "workload", "instrumentation", "mark", "name"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        if self.stop_if:
            d["stop_if"] = list(self.stop_if)
        if self.repeats > 1:
            d["repeat"] = [self.repeat, self.repeats]
        return d


@dataclass(frozen=True, slots=True)
class Scenario:
    path: Path | None
    name: str
    description: str
    options: Mapping[str, Any]  # run options (CLI names with underscores), as written
    steps: tuple[Step, ...]
    stop_if: tuple[str, ...] = ()  # for every step
    lines: Mapping[tuple[int, str], int] = field(default_factory=dict, repr=False)

    @property
    def filename(self) -> str:
        return str(self.path) if self.path else "<scenario>"

    @property
    def total_s(self) -> float:
        return sum(s.length for s in self.steps)

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
        """`FILE:LINE: problem`, LINE being the key's (or the step's) line when known."""
        line = self.lines.get((section, key or "")) or self.lines.get((section, ""))
        return ScenarioError(_where(self.filename, line) + problem)


def _where(filename: str, line: int | None) -> str:
    return f"{filename}:{line}: " if line else f"{filename}: "


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
    return seconds


def parse_range(text: str, integer: bool) -> list[float]:
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
            raise ValueError(f"range {text!r} gives fractional thread counts")
        return [int(x) for x in out]
    return out


def _threads(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"threads must be whole numbers, not {value!r}")
    if not 0 <= value <= MAX_THREADS:
        raise ValueError(f"threads {value!r} out of range (0..{MAX_THREADS})")
    return int(value)


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"rate must be a number of transactions/s (0 = unlimited), not {value!r}")
    return float(value)


def _name(key: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{key} must be a non-empty string, not {value!r}")
        return value.strip()

    return check


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "threads": _threads,
    "rate": _rate,
    "workload": _name("workload"),
    "instrumentation": _name("instrumentation"),
}


def _values(key: str, value: Any) -> list[Any]:
    """A sweepable key's value(s): a list, a range string (threads/rate) or one value."""
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{key} = [] sweeps nothing: give at least one value")
        return [_CONVERT[key](v) for v in value]
    if key in ("threads", "rate") and isinstance(value, str):
        return [_CONVERT[key](v) for v in parse_range(value, key == "threads")]
    return [_CONVERT[key](value)]


def _stop_if(value: Any) -> tuple[str, ...]:
    from benchtop.guards import parse_condition

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ValueError("stop_if is a condition string or a list of them, e.g. [\"p99>50ms for 10s\"]")
    for item in items:
        parse_condition(item)  # GuardError is a ValueError: same one-line path
    return tuple(items)


def run_option_names() -> dict[str, str]:
    """Run-option dest -> its long option (e.g. table_size -> --table-size),
    from the CLI parser itself."""
    return {dest: option for dest, (option, _) in _run_options().items()}


def _run_options() -> dict[str, tuple[str, bool]]:
    """dest -> (long option, whether it may be repeated)."""
    import argparse

    from benchtop.cli import build_parser

    out = {}
    for action in build_parser("run")._actions:  # argparse has no public list of actions
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs:
            out[action.dest] = (longs[0], isinstance(action, argparse._AppendAction))
    return out


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

    known = _run_options()
    options: dict[str, Any] = {}
    for key, value in data.items():
        if key == "step":
            continue
        if key in NOT_AT_TOP:
            raise probe.error(f"{key} is not a scenario setting: it comes from {NOT_AT_TOP[key]}", -1, key)
        if isinstance(value, dict):
            raise probe.error(f"[{key}] is not a scenario table: only [[step]] tables are", -1, key)
        if key in SCENARIO_KEYS:
            continue
        if isinstance(value, list) and not (key in known and known[key][1] and all(isinstance(v, str) for v in value)):
            raise probe.error(f"{key} takes one value (lists sweep only threads, rate, workload and "
                              "instrumentation, inside a [[step]])", -1, key)
        if key not in known and not re.fullmatch(r"[a-z][a-z0-9_]*", key):
            raise probe.error(f"unknown setting {key!r}", -1, key)
        if hasattr(value, "isoformat"):  # TOML dates and times
            raise probe.error(f"{key}: dates and times are not option values", -1, key)
        options[key] = value

    try:
        name = _name("name")(data["name"]) if "name" in data else (path.stem if path else "scenario")
        description = str(data.get("description", ""))
        default_warmup = parse_duration(data.get("warmup", 0))
        stop_if = _stop_if(data.get("stop_if", []))
        defaults = {k: _values(k, data[k]) for k in SWEEP_KEYS if k in data}
    except ValueError as exc:
        key = next((k for k in SCENARIO_KEYS if k in data and k in str(exc)), None)
        raise probe.error(str(exc), -1, key) from None
    for key, vals in defaults.items():
        if len(vals) != 1:
            raise probe.error(f"top-level {key} takes one value: sweep inside a [[step]]", -1, key)
        if key in ("workload",):
            options["workload"] = vals[0]

    raw_steps = data.get("step")
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
    return Scenario(path or probe.path, name, description, options, tuple(steps), stop_if, lines)


def _expand(probe: Scenario, k: int, raw: Mapping[str, Any], defaults: Mapping[str, list[Any]],
            default_warmup: float, first_index: int) -> list[Step]:
    for key in raw:
        if key not in STEP_KEYS:
            raise probe.error(f"unknown key {key!r} in [[step]] {k + 1} (use {', '.join(STEP_KEYS)})", k, key)
    if "duration" not in raw:
        raise probe.error(f"[[step]] {k + 1} has no duration", k)
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
        sweeps: list[tuple[str, list[Any]]] = []
        for key in SWEEP_KEYS:
            if key in raw:
                sweeps.append((key, _values(key, raw[key])))
            elif key in defaults:
                sweeps.append((key, defaults[key]))
    except ValueError as exc:
        raise probe.error(str(exc), k, key) from None
    # sweeps in the order the file wrote them: the first written is the outer loop
    order = {key: i for i, key in enumerate(raw)}
    sweeps.sort(key=lambda kv: order.get(kv[0], -1))
    combos = 1
    for _, vals in sweeps:
        combos *= len(vals)
        if combos * repeats > MAX_STEPS:
            raise probe.error(f"[[step]] {k + 1} expands to more than {MAX_STEPS} steps", k)
    out: list[Step] = []
    for values in itertools.product(*(vals for _, vals in sweeps)):
        chosen = dict(zip((key for key, _ in sweeps), values))
        for r in range(repeats):
            out.append(Step(index=first_index + len(out), duration=duration, warmup=warmup, mark=mark, name=name,
                            stop_if=stop_if, repeat=r + 1, repeats=repeats, line=probe.lines.get((k, "")), **chosen))
    return out


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the scenario ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a text file") from None
    return parse_scenario(text, str(path), path)


# ------------------------------------------------------------------ run configs


def scenario_argv(scenario: Scenario, workload: str | None = None, out: str | None = None) -> list[str]:
    """The command line a scenario's top-level settings stand for (no --time:
    steps decide how long the load runs)."""
    names = run_option_names()
    argv: list[str] = []
    opts = dict(scenario.options)
    if workload is not None:
        opts["workload"] = workload
    if out is not None:
        opts["out"] = out
    wl = opts.get("workload")
    if isinstance(wl, str) and wl.endswith(".toml") and scenario.path and not Path(wl).is_absolute():
        candidate = scenario.path.parent / wl  # relative to the scenario file, as users expect
        if candidate.is_file():
            opts["workload"] = str(candidate)
    for key, value in opts.items():
        option = names.get(key, "--" + key.replace("_", "-"))
        if isinstance(value, bool):
            if value:
                argv.append(option)
            elif key not in names:  # a workload switch such as skip_trx = false
                argv += [option, "off"]
            continue
        for item in value if isinstance(value, list) else [value]:  # --pgbouncer A --pgbouncer B
            argv += [option, str(item)]
    argv += ["--time", "0"]
    return argv


def build_config(scenario: Scenario, workload: str | None = None, out: str | None = None) -> Any:
    """The RunConfig for one workload of the scenario, through the CLI's own
    option handling; problems come back as ScenarioError naming the key."""
    return parse_options(scenario, workload, out)[0]


def parse_options(scenario: Scenario, workload: str | None = None, out: str | None = None) -> tuple[Any, Any]:
    """(RunConfig, the CLI's argparse namespace) for one workload: the
    namespace holds what RunConfig does not (monitor sources, --admin-dsn)."""
    from benchtop import cli
    from benchtop.workload import WorkloadError

    argv = scenario_argv(scenario, workload, out)
    try:
        ns, extra = cli.build_parser("run").parse_known_args(argv)
        cfg = cli._run_config(ns, extra)
    except (cli.UsageError, WorkloadError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        m = re.search(r"--([a-z][a-z0-9-]*)", msg)
        key = m.group(1).replace("-", "_") if m else None
        section = -1
        if workload is not None and (key == "workload" or key is None):
            section = next((s for s in range(len(scenario.steps)) if (s, "workload") in scenario.lines), -1)
        raise scenario.error(msg, section, key) from None
    if scenario.stop_if or any(s.stop_if for s in scenario.steps):
        cfg = replace(cfg, stop_if=tuple(scenario.stop_if))
    return cfg, ns


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
    from benchtop.instrumentation import presets_for

    names = presets_for(engine)
    for step, preset in wanted:
        if preset not in names:
            raise scenario.error(f"unknown instrumentation preset {preset!r} in {step.label()} "
                                 f"(for {engine}: {', '.join(names)})", section, "instrumentation")


# ------------------------------------------------------------------ running


@dataclass(slots=True)
class _StepState:
    step: Step
    seg: int  # which engine run
    start: Any  # EngineSample at the step's start
    measured_from: Any = None  # EngineSample at the warm-up's end
    end: Any = None
    intervals: list[dict[str, Any]] = field(default_factory=list)
    t_start: float = 0.0  # scenario seconds
    t_measure: float | None = None
    t_end: float | None = None
    stopped_by: str = ""


class ScenarioDriver:
    """Runs a scenario's steps on RunControllers.

    `make_controller(workload)` returns a new, not yet started RunController
    (without a results writer: the driver writes the folder, on one clock).
    The owner samples the current controller (`driver.controller.sample()`)
    on its own cadence and calls `tick()` after each sample; `tick()` moves
    through warm-ups and steps and returns a status line.  When `done` is
    true, call `finish()` (also the way to end early, with a reason).
    """

    def __init__(self, scenario: Scenario, make_controller: Callable[[str], Any], writer: Any | None = None,
                 validity: Any | None = None, percentile: float = 95.0,
                 on_controller: Callable[[Any], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        from benchtop.guards import Guard

        self.scenario = scenario
        self.make_controller = make_controller
        self.writer = writer
        self.validity = validity
        self.percentile = percentile
        self.on_controller = on_controller
        self.clock = clock
        self.controller: Any = None
        self.done = False
        self.stopped_by = ""
        self.results: list[dict[str, Any]] = []
        self.segments: list[Any] = []  # every controller, in order
        self.on_step_done: Callable[[dict[str, Any]], None] | None = None
        self._global_guard = Guard.parse(scenario.stop_if, sources=None)
        self._guard = self._global_guard
        self._latest: dict[str, Any] = {}  # source name -> its latest snapshot, for new steps' guards
        self._seg_offsets: list[float] = []  # scenario seconds at each engine's t = 0
        self._t0 = 0.0
        self.started_at = 0.0
        self._cur: _StepState | None = None
        self._seen = 0  # intervals of the current controller already taken
        self._instrumentation: Any = None
        self._own_instrumentation = False
        self._summaries: list[Any] = []
        self._measured: list[dict[str, Any]] = []  # every step's intervals after its warm-up
        self.summary: Any = None

    # -- time
    @property
    def elapsed(self) -> float:
        return self.clock() - self._t0 if self._t0 else 0.0

    @property
    def step_index(self) -> int:
        return self._cur.step.index if self._cur else len(self.scenario.steps)

    def _scenario_t(self, local_t: float) -> float:
        return self._seg_offsets[-1] + local_t

    def scenario_t(self, local_t: float) -> float:
        """A time of the current engine (EngineSample.t) in scenario seconds."""
        return self._scenario_t(local_t) if self._seg_offsets else local_t

    # -- lifecycle
    def start(self) -> None:
        self._t0 = self.clock()
        self.started_at = time.time()
        if self.writer:
            self.writer.write_json("config.json", self._config_dict())
            if self.validity is not None:
                self.writer.write_json("target.json", {"validity": self.validity.to_dict()})
        self._begin(0)

    def _config_dict(self) -> dict[str, Any]:
        cfg = self.controller.cfg if self.controller else None
        return {
            "scenario": self.scenario.name,
            "file": self.scenario.filename,
            "description": self.scenario.description,
            "options": {k: v for k, v in self.scenario.options.items() if "password" not in k},
            "stop_if": list(self.scenario.stop_if),
            "steps": [s.to_dict() for s in self.scenario.steps],
            "run": cfg.to_dict() if cfg is not None else None,
        }

    def _new_controller(self, workload: str) -> None:
        if self.controller is not None:
            self.controller.stop("scenario: next workload")
        ctl = self.make_controller(workload)
        previous = ctl.on_event

        def on_event(ev: Any) -> None:
            if self.writer:
                d = ev.to_dict()
                d["t"] = round(self._scenario_t(ev.t), 3)
                self.writer.append("timeline.jsonl", d)
            if previous:
                previous(ev)

        ctl.on_event = on_event
        ctl.start()
        # map the new engine's clock (0 at its start) onto the scenario's
        self._seg_offsets.append(self.elapsed - ctl.engine.snapshot().t)
        self.controller = ctl
        self.segments.append(ctl)
        self._seen = 0
        if len(self.segments) == 1 and self.writer:
            self.writer.write_json("config.json", self._config_dict())
        if self.on_controller:
            self.on_controller(ctl)

    def _begin(self, i: int) -> None:
        from benchtop.guards import Guard

        step = self.scenario.steps[i]
        workload = self.scenario.workload_of(step)
        if self.controller is None or self.controller.workload != _program_name(workload):
            self._new_controller(workload)
        ctl = self.controller
        if step.threads is not None and step.threads != ctl.threads:
            ctl.set_threads(step.threads)
        if step.rate is not None and step.rate != ctl.rate:
            ctl.set_rate(step.rate)
        if step.instrumentation:
            self._apply_instrumentation(step.instrumentation)
        ctl.mark(step.mark or step.label(len(self.scenario.steps)))
        start = ctl.engine.snapshot()
        self._cur = _StepState(step, len(self.segments) - 1, start, t_start=self._scenario_t(start.t))
        guard = Guard([*self._global_guard.conditions, *Guard.parse(step.stop_if, sources=None).conditions])
        for snap in list(self._latest.values()):
            guard.observe(snap)
        self._guard = guard
        if step.warmup <= 0:
            self._cur.measured_from = start
            self._cur.t_measure = self._cur.t_start

    def _apply_instrumentation(self, preset: str) -> None:
        ctl = self.controller
        control = getattr(ctl, "instrumentation", None)
        if control is None or not hasattr(control, "apply"):
            if self._instrumentation is None:
                if ctl.cfg.engine not in ("mysql", "postgresql"):
                    raise ScenarioError("instrumentation needs --engine mysql/postgres")
                from benchtop.instrumentation import InstrumentationControl

                self._instrumentation = InstrumentationControl(ctl.cfg.target)
                self._own_instrumentation = True
            control = self._instrumentation
        control.apply(preset)
        self._instrumentation = control
        ctl.note("instrumentation", f"instrumentation {preset}")

    def observe(self, snap: Any) -> None:
        """Feed a monitor source snapshot (for pool_wait, replica_lag and
        checkpoint_age conditions); safe to call from a poller thread."""
        self._latest[snap.name] = snap
        self._guard.observe(snap)

    def deadline(self) -> float | None:
        """Clock time when the current phase (warm-up or step) ends."""
        cur = self._cur
        if cur is None or self.done:
            return None
        offset = self._t0 + self._seg_offsets[cur.seg]
        if cur.measured_from is None:
            return offset + cur.start.t + cur.step.warmup
        return offset + cur.measured_from.t + cur.step.duration

    def tick(self) -> str | None:
        """Take the intervals sampled since the last tick, move through the
        steps; returns the status line (None once done)."""
        if self.done or self._cur is None:
            return None
        ctl, cur = self.controller, self._cur
        new = ctl.history[self._seen:]
        self._seen = len(ctl.history)
        for iv in new:
            d = iv.to_dict()
            d["t"] = round(self._scenario_t(iv.t), 3)
            d["dt"] = round(iv.dt, 3)
            d["step"] = cur.step.index
            if cur.measured_from is None or iv.t - iv.dt < cur.measured_from.t - 1e-3:
                d["warmup"] = True
            else:
                cur.intervals.append(d)
            if self.writer:
                self.writer.append("intervals.jsonl", d)
            why = self._guard.check(iv)
            if why:
                self.finish(f"stop-if: {why} ({cur.step.label()})")
                return None
        if ctl.finished:
            failed = ctl.failed_error
            self.finish(f"error: {failed}" if failed else "engine stopped")
            return None
        snap = ctl.engine.snapshot()
        tol = 0.005
        if cur.measured_from is None and snap.t >= cur.start.t + cur.step.warmup - tol:
            cur.measured_from = snap
            cur.t_measure = self._scenario_t(snap.t)
            ctl.note("note", f"step {cur.step.index + 1} warm-up over")
        if cur.measured_from is not None and snap.t >= cur.measured_from.t + cur.step.duration - tol:
            self._close_step(snap, "")
            nxt = cur.step.index + 1
            if nxt >= len(self.scenario.steps):
                self.finish("scenario done")
                return None
            self._begin(nxt)
        return self.status()

    def status(self) -> str:
        cur = self._cur
        if cur is None or self.done:
            return f"scenario {self.scenario.name}: {self.stopped_by or 'done'}"
        now = self.clock()
        dl = self.deadline() or now
        phase = "warm-up" if cur.measured_from is None else "measuring"
        left = max(0.0, dl - now) + (cur.step.duration if cur.measured_from is None else 0.0)
        return f"{cur.step.label(len(self.scenario.steps))}: {phase}, {left:.0f}s left"

    def _close_step(self, last: Any, stopped_by: str) -> None:
        from benchtop.analysis import analyse
        from benchtop.snapshots import RunSummary

        cur = self._cur
        assert cur is not None
        ctl = self.segments[cur.seg]
        cur.end = last
        cur.t_end = self._scenario_t(last.t)
        cur.stopped_by = stopped_by
        if cur.measured_from is None or last.t <= cur.measured_from.t:
            self._cur = None
            return  # ended during its warm-up: no figures
        pcts = (self.percentile,) if self.percentile > 0 else ()
        summary = RunSummary.between(cur.measured_from, last, pcts, ctl.program.txn_names, stopped_by)
        self._summaries.append((cur.step, summary))
        result = step_result(cur.step, summary, cur.t_start, cur.t_measure or cur.t_start, cur.t_end,
                             self.scenario.workload_of(cur.step))
        result.update(analyse(cur.intervals))
        self._measured.extend(cur.intervals)
        if stopped_by:
            result["stopped_by"] = stopped_by
        self.results.append(result)
        self._cur = None
        if self.on_step_done:
            self.on_step_done(result)

    def finish(self, reason: str = "") -> Any:
        """Stop the load (now, if steps remain), write summary.json and the
        histograms; returns the whole scenario's RunSummary (None if no step
        got past its warm-up)."""
        if self.done:
            return self.summary
        self.done = True
        self.stopped_by = reason
        ctl = self.controller
        if ctl is not None:
            if self._cur is not None:
                last = ctl.engine.snapshot()
                self._close_step(last, reason if reason != "scenario done" else "")
            stopped = ctl.stop(reason)
            if stopped.stopped_by.startswith("error:"):
                self.stopped_by = stopped.stopped_by
        if self._instrumentation is not None:
            try:
                self._instrumentation.restore()
            finally:
                if self._own_instrumentation:
                    self._instrumentation.close()
        self.summary = merge_summaries([s for _, s in self._summaries], self.stopped_by, self.percentile)
        if self.writer:
            self._write_results()
        return self.summary

    def summary_dict(self) -> dict[str, Any]:
        from benchtop.analysis import steady_state

        s = self.summary
        d: dict[str, Any] = s.to_dict() if s is not None else {"type": "summary", "transactions": 0}
        d["stopped_by"] = self.stopped_by
        d["scenario"] = self.scenario.name
        d["workload"] = ", ".join(self.scenario.workloads)
        d["target"] = self.segments[0].target if self.segments else ""
        d["started_at"] = round(self.started_at, 3)
        d["steps"] = self.results
        tps = [float(iv["tps"]) for iv in self._measured]
        if tps:
            d["steady_state"] = steady_state(tps).to_dict()
        d["stalls"] = [dict(stall, step=r["index"]) for r in self.results for stall in r.get("stalls", [])]
        if self.validity is not None:
            d["validity"] = self.validity.to_dict()
        return d

    def _write_results(self) -> None:
        assert self.writer is not None
        self.writer.write_json("summary.json", self.summary_dict())
        hist: dict[str, Any] = {"unit": "ns", "layout": "benchtop-loglinear-128"}
        if self.summary is not None:
            hist["latency"] = self.summary.latency.to_sparse()
            hist["service"] = self.summary.service.to_sparse()
        hist["steps"] = [{"index": step.index, "latency": s.latency.to_sparse(), "service": s.service.to_sparse()}
                         for step, s in self._summaries]
        self.writer.write_json("histogram.json", hist)

    def close(self) -> None:
        for ctl in self.segments:
            ctl.close()


def _program_name(workload: str) -> str:
    """The name a RunController reports for a workload argument (a path's stem)."""
    return Path(workload).stem if workload.endswith(".toml") else workload


def step_result(step: Step, s: Any, t_start: float, t_measure: float, t_end: float, workload: str) -> dict[str, Any]:
    return {
        "index": step.index,
        "label": step.label(),
        "name": step.name,
        "mark": step.mark,
        "workload": workload,
        "instrumentation": step.instrumentation,
        "repeat": step.repeat,
        "threads": s.threads,
        "rate": s.rate,
        "tps": round(s.tps, 2),
        "qps": round(s.qps, 2),
        "transactions": s.transactions,
        "latency_ms": {k: round(v, 3) for k, v in s.latency_ms.items()},
        "errors": s.error_count,
        "time_s": round(s.time_s, 3),
        "warmup_s": step.warmup,
        "t_start": round(t_start, 3),
        "t_measure": round(t_measure, 3),
        "t_end": round(t_end, 3),
    }


def merge_summaries(summaries: Sequence[Any], stopped_by: str = "", percentile: float = 95.0) -> Any:
    """Several steps' RunSummary as one (counts and histograms added)."""
    if not summaries:
        return None
    from benchtop.snapshots import DEFAULT_PERCENTILES, RunSummary, _pct_key

    first = summaries[0]
    lat, svc = first.latency, first.service
    for s in summaries[1:]:
        lat, svc = lat + s.latency, svc + s.service
    n = lat.total
    ps = sorted(set(DEFAULT_PERCENTILES) | {99.9} | ({percentile} if percentile > 0 else set()))

    def figures(h: Any, key: str) -> dict[str, float]:
        p = h.percentiles_ms(ps)
        d = {_pct_key(x): p[x] for x in ps}
        d["min"] = min((getattr(s, key)["min"] for s in summaries if s.transactions), default=0.0)
        d["max"] = max((getattr(s, key)["max"] for s in summaries), default=0.0)
        d["avg"] = sum(getattr(s, key)["avg"] * s.transactions for s in summaries) / n if n else 0.0
        return d

    connects = sum(s.connects for s in summaries)
    types: dict[str, int] = {}
    errors: dict[str, int] = {}
    for s in summaries:
        for k, v in s.txn_types.items():
            types[k] = types.get(k, 0) + v
        for k, v in s.errors.items():
            errors[k] = errors.get(k, 0) + v
    last = summaries[-1]
    return RunSummary(
        time_s=sum(s.time_s for s in summaries), threads=last.threads, rate=last.rate,
        transactions=sum(s.transactions for s in summaries), rollbacks=sum(s.rollbacks for s in summaries),
        reads=sum(s.reads for s in summaries), writes=sum(s.writes for s in summaries),
        other=sum(s.other for s in summaries), errors=errors, reconnects=sum(s.reconnects for s in summaries),
        connects=connects,
        connect_ms_avg=sum(s.connect_ms_avg * s.connects for s in summaries) / connects if connects else 0.0,
        latency_ms=figures(lat, "latency_ms"), service_latency_ms=figures(svc, "service_latency_ms"),
        latency=lat, service=svc, txn_types=types, stopped_by=stopped_by,
    )


def iter_step_lines(results: Iterable[Mapping[str, Any]], percentile: float = 95.0) -> Iterable[str]:
    """A text table of step results."""
    from benchtop.snapshots import _pct_key

    key = _pct_key(percentile)
    yield f"{'step':>4} {'threads':>7} {'rate':>8} {'tps':>10} {'qps':>11} {'p' + f'{percentile:g}':>8} {'p99':>8} {'errors':>6}  label"
    for r in results:
        rate = f"{r['rate']:g}" if r.get("rate") else "-"
        lat = r["latency_ms"]
        yield (f"{r['index'] + 1:>4} {r['threads']:>7} {rate:>8} {r['tps']:>10.2f} {r['qps']:>11.2f} "
               f"{lat.get(key, 0.0):>8.3f} {lat.get('p99', 0.0):>8.3f} {r['errors']:>6}  {r['label']}"
               + (f"  [{r['stopped_by']}]" if r.get("stopped_by") else ""))
