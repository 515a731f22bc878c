"""Thread groups of a workload with the run's choices applied: a preset
(`--preset i1.q10`) and then `--group NAME.threads=N` / `NAME.rate=R`
settings, in that order."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

from benchtop.errors import UsageError
from benchtop.workload.program import Group, Program

GROUP_KEYS = ("threads", "rate")


def parse_group_setting(text: str) -> tuple[str, str, float]:
    """`queriers.threads=20` -> ("queriers", "threads", 20.0).

    >>> parse_group_setting("inserters.rate=1000")
    ('inserters', 'rate', 1000.0)
    """
    name, dot, rest = text.strip().partition(".")
    key, eq, value = rest.partition("=")
    key = key.strip()
    if not dot or not eq or not name or key not in GROUP_KEYS:
        raise UsageError(f"--group {text!r}: write NAME.threads=N or NAME.rate=R (0 = closed loop)")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"--group {text!r}: {value.strip()!r} is not a number") from None
    if not math.isfinite(number) or number < 0 or (key == "threads" and number != int(number)):
        raise UsageError(f"--group {text!r}: {key} must be a {'whole ' if key == 'threads' else ''}number >= 0")
    return name.strip(), key, number


def apply_group_settings(groups: Sequence[Group], settings: Sequence[str], what: str = "--group") -> tuple[Group, ...]:
    by_name = {g.name: g for g in groups}
    for text in settings:
        name, key, value = parse_group_setting(text)
        if name not in by_name:
            have = ", ".join(by_name) or "none: the workload declares no [[group]]"
            raise UsageError(f"{what} {text!r}: no thread group {name!r} (groups: {have})")
        g = by_name[name]
        by_name[name] = replace(g, threads=int(value)) if key == "threads" else replace(g, rate=value)
    return tuple(by_name[g.name] for g in groups)


def resolve_groups(program: Program, preset: str | None, settings: Sequence[str]) -> tuple[Group, ...]:
    """The program's groups after the preset and the settings; () without groups.

    >>> from benchtop.workload import builtin_program
    >>> gs = resolve_groups(builtin_program("insert_benchmark", "null"), "i10.q1", ["queriers.threads=2"])
    >>> [(g.name, g.threads, g.rate) for g in gs]
    [('inserters', 10, 0.0), ('queriers', 2, 0.0)]
    """
    if preset:
        if preset not in program.presets:
            have = ", ".join(program.presets) or "none"
            raise UsageError(f"--preset {preset!r}: workload {program.name} has no such preset (presets: {have})")
        groups = apply_group_settings(program.groups, program.presets[preset], f"preset {preset}:")
    else:
        groups = program.groups
    if settings and not groups:
        raise UsageError(f"--group: workload {program.name} declares no thread groups ([[group]])")
    return apply_group_settings(groups, settings)
