"""A comparison's folder (`benchtop ab --out DIR`: ab.json and a results
folder per round and side) in the report: the verdict, a table of the
rounds, and the per-round ratios B/A of TPS and p99 drawn with the
comparison's estimate and its 95% interval as a band."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchtop.ab.stats import CONFIDENCE
from benchtop.record.folder import AB_JSON
from benchtop.report.data import ReportError
from benchtop.report.plots import Plot, Series
from benchtop.report.tables import Table


def is_ab_folder(folder: Path) -> bool:
    return (folder / AB_JSON).is_file()


@dataclass(frozen=True, slots=True)
class AbRound:
    index: int
    order: str  # "A, B": A ran first
    a_tps: float
    b_tps: float
    a_p99: float
    b_p99: float

    @property
    def tps_ratio(self) -> float | None:
        return self.b_tps / self.a_tps if self.a_tps > 0 else None

    @property
    def p99_ratio(self) -> float | None:
        return self.b_p99 / self.a_p99 if self.a_p99 > 0 else None


@dataclass(frozen=True, slots=True)
class AbMetric:
    """One metric's B/A over the rounds, as ab.json says it."""

    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str
    confidence: float = CONFIDENCE  # of the interval (higher when --until-confident judged after every round)

    @property
    def level(self) -> str:
        """
        >>> AbMetric(1.0, 0.9, 1.1, "undecided", 0.99617).level
        '99.6%'
        """
        return f"{100 * self.confidence:.3g}%"


@dataclass(frozen=True, slots=True)
class AbData:
    folder: Path
    name: str
    verdict: str  # b_faster, b_slower, no_difference, undecided
    text: str  # the verdict's line
    sides: Mapping[str, str]  # "a"/"b" -> its options ("" : the shared options)
    rounds: tuple[AbRound, ...]
    metrics: Mapping[str, AbMetric]
    stopped_by: str
    complete: bool


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _figure(side: object, key: str) -> float:
    if not isinstance(side, Mapping):
        raise ValueError("a round without its sides' figures")
    v = _number(side.get(key))
    if v is None or v < 0:
        raise ValueError(f"a round whose {key} is {side.get(key)!r}")
    return v


def load_ab(folder: Path) -> AbData:
    """The comparison in `folder`/ab.json; ReportError (one line) when it
    cannot be read or holds what no comparison writes."""
    path = folder / AB_JSON
    try:
        ab = json.loads(path.read_text()).get("ab")
        if not isinstance(ab, Mapping):
            raise ValueError("no 'ab' object")
        rounds = []
        for r in ab.get("rounds") or []:
            order = ", ".join(str(s).upper() for s in r.get("order") or [])
            rounds.append(AbRound(int(r["round"]), order, _figure(r.get("a"), "tps"), _figure(r.get("b"), "tps"),
                                  _figure(r.get("a"), "p99_ms"), _figure(r.get("b"), "p99_ms")))
        metrics = {str(k): AbMetric(_number(m.get("ratio")), _number(m.get("ci_low")), _number(m.get("ci_high")),
                                    str(m.get("verdict", "")), _number(m.get("confidence")) or CONFIDENCE)
                   for k, m in (ab.get("metrics") or {}).items() if isinstance(m, Mapping)}
        sides = {name: str((side or {}).get("options", "")) for name, side in (ab.get("sides") or {}).items()}
        return AbData(folder, folder.resolve().name, str(ab.get("verdict", "undecided")), str(ab.get("text", "")),
                      sides, tuple(rounds), metrics, str(ab.get("stopped_by", "")), bool(ab.get("complete")))
    except OSError as exc:
        raise ReportError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReportError(f"{path}: not a comparison benchtop ab wrote ({exc}): fix or remove it") from None


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _interval(m: AbMetric | None) -> str:
    """'1.041 (95% CI 1.023 .. 1.059)'."""
    if m is None or m.ratio is None:
        return "-"
    ci = (f" ({m.level} CI {m.ci_low:.3f} .. {m.ci_high:.3f})" if m.ci_low is not None and m.ci_high is not None
          else "")
    return f"{m.ratio:.3f}{ci}"


def ab_lines(ab: AbData) -> list[str]:
    """The comparison's verdict, what each side was, and B/A of TPS and p99."""
    what = {name: text.strip() or "the shared options" for name, text in ab.sides.items()}
    lines = [f"{ab.name}: {ab.text}",
             f"{ab.name}: verdict {ab.verdict}; A = {what.get('a', '?')}; B = {what.get('b', '?')}; "
             f"{len(ab.rounds)} round{'' if len(ab.rounds) == 1 else 's'}"
             + ("" if ab.complete else f" (stopped by {ab.stopped_by or 'an error'})"),
             f"{ab.name}: B/A tps {_interval(ab.metrics.get('tps'))}, p99 {_interval(ab.metrics.get('p99_ms'))}"]
    return lines


def rounds_table(ab: AbData) -> Table:
    rows = tuple((str(r.index), r.order, f"{r.a_tps:.1f}", f"{r.b_tps:.1f}", _ratio(r.tps_ratio), f"{r.a_p99:.3f}",
                  f"{r.b_p99:.3f}", _ratio(r.p99_ratio)) for r in ab.rounds)
    return Table(f"Rounds of {ab.name}", ("round", "order", "A tps", "B tps", "B/A tps", "A p99 ms", "B p99 ms",
                                          "B/A p99"), rows)


def ab_plots(comparisons: Sequence[AbData]) -> list[Plot]:
    """Per comparison, the rounds' B/A of TPS and of p99 against the round,
    with the estimate over all rounds and its 95% interval as a band."""
    plots = []
    for ab in comparisons:
        suffix = "" if len(comparisons) == 1 else "_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", ab.name)
        for key, metric, what, ratio in (("tps", "tps", "throughput", lambda r: r.tps_ratio),
                                         ("p99", "p99_ms", "p99 latency", lambda r: r.p99_ratio)):
            pts = [(float(r.index), ratio(r)) for r in ab.rounds]
            shown = [(x, y) for x, y in pts if y is not None]
            m = ab.metrics.get(metric)
            hlines: tuple[tuple[float, str], ...] = ()
            bands: tuple[tuple[float, float, str], ...] = ()
            if m is not None and m.ratio is not None:
                hlines = ((m.ratio, f"B/A {m.ratio:.3f} (all rounds)"),)
                if m.ci_low is not None and m.ci_high is not None:
                    bands = ((m.ci_low, m.ci_high, f"{m.level} CI {m.ci_low:.3f} .. {m.ci_high:.3f}"),)
            plots.append(Plot(f"ab_{key}{suffix}", f"{ab.name}: B/A {what} per round ({ab.verdict})", "ab", "round",
                              f"B/A {what}", (Series(f"{ab.name}: B/A per round", tuple(x for x, _ in shown),
                                                     tuple(y for _, y in shown)),),
                              hlines=hlines, bands=bands))
    return plots
