"""What `benchtop knee` searches, from its command line or a scenario file's
`[search]` table (the same names with underscores):

    [search]
    min_threads = 1
    max_threads = 64
    p99_limit = "20ms"      # or 20 (milliseconds)
    error_limit = "1%"
    tolerance = "10%"
    probe_min = "1s"        # a probe's shortest and longest counted time
    probe_max = "6s"
    probe_cv = "5%"         # steady: interval TPS varies less than this (and the
                            # p99s of the probe's parts within the tolerance)

A rate search gives min_rate / max_rate instead of threads."""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from benchtop.knee.probe import ProbeTiming
from benchtop.knee.search import SearchSettings

DEFAULT_TOLERANCE = 0.10
# rate probes: a queue that builds slowly shows in the p99 only over seconds, and a low rate needs
# seconds for the 5,000 transactions a p99 stands on (500/s: 10 s)
RATE_MIN_S, RATE_MAX_S = 2.0, 15.0
# the default range of threads: up to four per CPU of this host
THREADS_PER_CPU = 4
KEYS = ("min_threads", "max_threads", "min_rate", "max_rate", "p99_limit", "error_limit", "tolerance",
        "probe_min", "probe_max", "probe_cv", "probe_interval", "settle", "max_probes", "confirm")


class SearchSettingError(ValueError):
    """A bad search setting, one line; `key` is the one it is about (its
    name with underscores; None: no one setting)."""

    def __init__(self, problem: str, key: str | None = None) -> None:
        super().__init__(problem)
        self.key = key


@dataclass(frozen=True, slots=True)
class KneeOptions:
    search: SearchSettings
    timing: ProbeTiming

    @property
    def rate(self) -> bool:
        return self.search.rate


def add_knee_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("the search (or a scenario file's [search] table)")
    g.add_argument("--min-threads", dest="min_threads", type=int, metavar="N", help="lowest threads (default 1)")
    g.add_argument("--max-threads", dest="max_threads", type=int, metavar="N",
                   help=f"highest threads (default {THREADS_PER_CPU} per CPU of this host)")
    g.add_argument("--min-rate", dest="min_rate", type=float, metavar="TPS",
                   help="search the arrival rate instead of threads, from this rate (with --max-rate; "
                        "--threads workers serve it)")
    g.add_argument("--max-rate", dest="max_rate", type=float, metavar="TPS", help="highest arrival rate")
    g.add_argument("--p99-limit", dest="p99_limit", metavar="MS",
                   help="the highest acceptable p99 latency, milliseconds (e.g. 20 or 20ms)")
    g.add_argument("--error-limit", dest="error_limit", metavar="PCT",
                   help="the highest acceptable share of failed attempts (e.g. 1%% or 0.01)")
    g.add_argument("--tolerance", metavar="PCT",
                   help="stop when the bracket is this narrow, and how far the p99s of a probe's parts may differ "
                        "for it to be steady (default 10%%)")
    g.add_argument("--probe-min", dest="probe_min", metavar="S",
                   help="a probe's shortest counted time (default 1 s; 2 s for a rate)")
    g.add_argument("--probe-max", dest="probe_max", metavar="S",
                   help="a probe's longest counted time (default 6 s; 15 s for a rate): one whose TPS and p99 are "
                        "not steady by then is marked not steady")
    g.add_argument("--probe-cv", dest="probe_cv", metavar="PCT",
                   help="steady when interval TPS varies less than this (coefficient of variation, default 5%%)")
    g.add_argument("--probe-interval", dest="probe_interval", metavar="S",
                   help="readings within a probe (default 0.25 s)")
    g.add_argument("--settle", metavar="S", help="not counted after each change (default 0.25 s)")
    g.add_argument("--max-probes", dest="max_probes", type=int, metavar="N", help="probe budget (default 24)")
    g.add_argument("--confirm", metavar="S",
                   help="hold the answer this long once more before giving it; 0: do not (default: as long as the "
                        "longest probe)")


def namespace_values(ns: argparse.Namespace) -> dict[str, Any]:
    """The search options given on a command line (None: not given)."""
    return {k: getattr(ns, k) for k in KEYS if getattr(ns, k, None) is not None}


def share(value: Any, what: str) -> float:
    """10%, "10%", 0.1 -> 0.1.

    >>> share("10%", "tolerance"), share(0.25, "tolerance"), share("0.05", "tolerance")
    (0.1, 0.25, 0.05)
    """
    if isinstance(value, bool):
        raise ValueError(f"{what} is a share such as 10% or 0.1, not {value!r}")
    text = str(value).strip()
    try:
        v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{what} is a share such as 10% or 0.1, not {value!r}") from None
    if not math.isfinite(v) or not 0 <= v < 1:
        raise ValueError(f"{what} is a share from 0 to 100%, not {value!r}")
    return v


def seconds(value: Any, what: str, unit: str = "s") -> float:
    """20, "20", "20ms" (unit ms) / 2, "2s", "500ms" (unit s) as a number in `unit`.

    >>> seconds("20ms", "p99", "ms"), seconds(2, "probe"), seconds("500ms", "probe")
    (20.0, 2.0, 0.5)
    """
    if isinstance(value, bool):
        raise ValueError(f"{what} takes a number, not {value!r}")
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?(?:e[+-]?\d+)?)\s*(ms|s)?\s*", str(value))
    if not m:
        raise ValueError(f"{what} takes a number of {'milliseconds' if unit == 'ms' else 'seconds'}, not {value!r}")
    v = float(m.group(1))
    given = m.group(2) or unit
    v = v * (1000.0 if given == "s" else 1.0) if unit == "ms" else v / (1000.0 if given == "ms" else 1.0)
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, not {value!r}")
    return v


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} is a whole number, not {value!r}")
    try:
        v = float(value)
    except ValueError:
        raise ValueError(f"{what} is a whole number, not {value!r}") from None
    if not math.isfinite(v) or v != int(v):
        raise ValueError(f"{what} is a whole number, not {value!r}")
    return int(v)


def knee_options(values: Mapping[str, Any], max_threads_limit: int, cpus: int | None = None) -> KneeOptions:
    """KneeOptions from option names with underscores (a command line's,
    over a [search] table's); SearchSettingError (one line, naming the key
    it is about) when one is wrong."""
    unknown = [k for k in values if k not in KEYS]
    if unknown:
        raise SearchSettingError(f"unknown search setting {unknown[0]!r} (use {', '.join(KEYS)})", unknown[0])
    cpus = cpus or os.cpu_count() or 1
    rate = "min_rate" in values or "max_rate" in values
    key: str | None = None
    try:
        if rate:
            key = "max_rate" if "min_rate" in values else "min_rate"
            if "min_rate" not in values or "max_rate" not in values:
                raise ValueError("a rate search needs both --min-rate and --max-rate")
            key = next((k for k in ("min_threads", "max_threads") if k in values), None)
            if key is not None:
                raise ValueError("search threads or a rate, not both (--min-threads/--max-threads or "
                                 "--min-rate/--max-rate)")
            key = "min_rate"
            low = float(values["min_rate"])
            key = "max_rate"
            high = float(values["max_rate"])
            key = "min_rate" if not 0 < low <= 1e9 else "max_rate"
            if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high <= 1e9):
                raise ValueError(f"the rate range must be 0 < --min-rate <= --max-rate <= 1e9, not {low:g}..{high:g}")
        else:
            key = "min_threads"
            low = _whole(values.get("min_threads", 1), "min_threads")
            key = "max_threads"
            high = _whole(values.get("max_threads", max(low, THREADS_PER_CPU * cpus)), "max_threads")
            if not 1 <= low <= high <= max_threads_limit:
                key = "min_threads" if "min_threads" in values and (low < 1 or "max_threads" not in values) \
                    else "max_threads"
                raise ValueError(f"the threads range must be 1 <= --min-threads <= --max-threads <= "
                                 f"{max_threads_limit}, not {low}..{high}")
        search = SearchSettings(low=low, high=high, rate=rate)
        # each checked as it is set, so a problem names the key that caused it
        for key, convert in (("p99_limit", lambda v: {"p99_limit_ms": seconds(v, "--p99-limit", "ms")}),
                             ("error_limit", lambda v: {"error_limit": share(v, "--error-limit")}),
                             ("tolerance", lambda v: {"tolerance": share(v, "--tolerance")}),
                             ("max_probes", lambda v: {"max_probes": _whole(v, "--max-probes")}),
                             ("confirm", lambda v: {"confirm_s": seconds(v, "--confirm")})):
            if key in values:
                search = replace(search, **convert(values[key]))
                search.check()
        # an arrival rate's p99 may drift as a queue builds: rate probes hold longer before they may end
        timing = ProbeTiming(tolerance=search.tolerance)
        if rate:
            timing = replace(timing, min_s=RATE_MIN_S, max_s=RATE_MAX_S)
        for key, field in (("probe_min", "min_s"), ("probe_max", "max_s"), ("probe_interval", "interval_s"),
                           ("settle", "settle_s"), ("probe_cv", "cv")):
            if key in values:
                value = share(values[key], "--probe-cv") if key == "probe_cv" \
                    else seconds(values[key], "--" + key.replace("_", "-"))
                timing = replace(timing, **{field: value})  # type: ignore[arg-type]  # every one of them a float
                if key == "probe_max" and "probe_min" not in values:
                    # a shorter longest probe given alone shortens the shortest with it
                    timing = replace(timing, min_s=min(timing.min_s, timing.max_s))
                # the longest shorter than the shortest is said below, when both are known
                replace(timing, max_s=max(timing.min_s, timing.max_s)).check()
        key = "probe_max" if "probe_max" in values else "probe_min"
        timing.check()
        if "confirm" not in values:
            # the answer held once more for the longest a probe may run: a few seconds at the edge may
            # have been a lucky stretch (search.py)
            search = replace(search, confirm_s=timing.max_s)
    except ValueError as exc:
        raise SearchSettingError(str(exc), key) from None
    return KneeOptions(search, timing)
