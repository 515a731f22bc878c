"""What a comparison runs, from its command line or a scenario file's `[ab]`
table (the same names with underscores; the command line wins):

    engine = "mysql"
    dsn = "mysql://sbtest@127.0.0.1:3306/sbtest"
    workload = "oltp_read_only"
    threads = 4

    [ab]
    a = "--point-selects 10"
    b = "--point-selects 14"
    rounds = 6
    round_time = "3s"       # or 3 (seconds)
    # until_confident = true, resolution = "2%", max_time = "10m"
    # duet = true           # a and b name two targets: both run at once (benchtop.ab.duet)
    # turn = "0.1s"         # sides take turns of about 0.1 s within a round (benchtop.ab.turns); 0: whole runs
    out = "results/ab"

The top-level keys are the options both sides share, as in any scenario."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from benchtop.ab.rounds import Plan
from benchtop.ab.turns import TURN_S

KEYS = ("a", "b", "rounds", "round_time", "until_confident", "resolution", "max_time", "duet", "turn", "out", "seed")
ROUNDS = 10
ROUND_TIME_S = 10.0
MAX_TIME_S = 600.0
ROUNDS_RANGE = (1, 10000)
ROUND_TIME_RANGE = (0.1, 86400.0)
MAX_TIME_RANGE = (1.0, 1e7)
TURN_RANGE = (0.05, 3600.0)  # or 0: whole runs; shorter turns would be mostly the paused workers' waking
RESOLUTION_RANGE = (0.0001, 1.0)
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class AbSettings:
    """The sides' option strings, the plan of the rounds, the folder (None:
    a new one) and the seed of their order (None: a new one)."""

    a: str
    b: str
    plan: Plan
    out: str | None = None
    seed: int | None = None


def _seconds(key: str, value: object, least: float, most: float) -> float:
    """3, 2.5, "3s", "500ms", "10m" as seconds within [least, most].

    >>> _seconds("round_time", "500ms", 0.1, 10), _seconds("max_time", "10m", 1, 1e7), _seconds("round_time", 3, 0.1, 10)
    (0.5, 600.0, 3.0)
    """
    v: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*", value)
        if m and (m.group(2) or "s") in _UNITS:
            v = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if v is None or not math.isfinite(v):
        raise ValueError(f"{key} is a number of seconds or a duration such as \"3s\" or \"10m\", not {value!r}")
    if not least <= v <= most:
        raise ValueError(f"{key} takes {least:g} to {most:g} seconds, not {value!r}")
    return v


def turn(value: object) -> float:
    """A side's turn in seconds: 0 (one whole run of each side), or within
    TURN_RANGE.

    >>> turn("250ms"), turn(0), turn("1s")
    (0.25, 0.0, 1.0)
    >>> turn(0.01)
    Traceback (most recent call last):
    ValueError: turn takes 0 (one whole run of each side) or 0.05 to 3600 seconds, not 0.01
    """
    v = _seconds("turn", value, 0.0, TURN_RANGE[1])
    if 0 < v < TURN_RANGE[0]:
        raise ValueError(f"turn takes 0 (one whole run of each side) or {TURN_RANGE[0]:g} to {TURN_RANGE[1]:g} "
                         f"seconds, not {value!r}")
    return v


def resolution(value: object) -> float:
    """ "2%", 2% as text, or 0.02: the share.

    >>> resolution("2%"), resolution(0.05), resolution("0.5%")
    (0.02, 0.05, 0.005)
    """
    text = str(value).strip() if isinstance(value, (int, float, str)) and not isinstance(value, bool) else ""
    pct = text.endswith("%")
    try:
        v = float(text.rstrip("%")) / (100 if pct else 1)
    except ValueError:
        v = math.nan
    low, high = RESOLUTION_RANGE
    if not (math.isfinite(v) and low <= v <= high):
        raise ValueError(f"resolution is a share from {100 * low:g}% to {100 * high:g}% (\"2%\" or 0.02), not {value!r}")
    return v


def _whole(key: str, value: object, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ValueError(f"{key} is a whole number from {least} to {most}, not {value!r}")
    return value


def _text(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} is a string of options, e.g. {key} = \"--threads 8\", not {value!r}")
    return value


def ab_settings(values: Mapping[str, object]) -> AbSettings:
    """AbSettings from names with underscores (a command line's given
    options over an [ab] table's); ValueError (one line) naming the key when
    one is wrong or unknown.

    >>> s = ab_settings({"a": "", "b": "--threads 2", "rounds": 6, "round_time": "1s"})
    >>> s.b, s.plan.rounds, s.plan.round_time_s, s.plan.resolution
    ('--threads 2', 6, 1.0, 0.02)
    >>> ab_settings({"rounds": "six"})
    Traceback (most recent call last):
    ValueError: rounds is a whole number from 1 to 10000, not 'six'
    """
    unknown = [k for k in values if k not in KEYS]
    if unknown:
        raise ValueError(f"unknown setting {unknown[0]!r} (use {', '.join(KEYS)})")
    until, duet = values.get("until_confident", False), values.get("duet", False)
    for key, flag in (("until_confident", until), ("duet", duet)):
        if not isinstance(flag, bool):
            raise ValueError(f"{key} is true or false, not {flag!r}")
    rounds = _whole("rounds", values["rounds"], *ROUNDS_RANGE) if "rounds" in values else None
    out = values.get("out")
    if out is not None and (not isinstance(out, str) or not out.strip()):
        raise ValueError(f"out is a folder's path, not {out!r}")
    seed = values.get("seed")
    if seed is not None:
        seed = _whole("seed", seed, -2 ** 63, 2 ** 63)
    plan = Plan(
        rounds if rounds is not None or until else ROUNDS,
        _seconds("round_time", values.get("round_time", ROUND_TIME_S), *ROUND_TIME_RANGE),
        bool(until),
        resolution(values.get("resolution", 0.02)),
        _seconds("max_time", values.get("max_time", MAX_TIME_S), *MAX_TIME_RANGE),
        bool(duet),
        turn(values.get("turn", TURN_S)),
    )
    return AbSettings(_text("a", values.get("a", "")), _text("b", values.get("b", "")), plan, out, seed)
