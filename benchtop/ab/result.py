"""What a comparison found: per metric the ratio B/A with its interval and
verdict (benchtop.ab.stats), what limited each side, and ab.json's `ab`
object; the line printed per round and the closing lines."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchtop.ab.rounds import Plan, Round, SideFigures
from benchtop.ab.sides import Side
from benchtop.ab.stats import CONFIDENCE, METHOD, Comparison, Outcome, compare, look_confidence, verdict_text
from benchtop.record.folder import AB_JSON



@dataclass(frozen=True, slots=True)
class Metric:
    key: str
    value: Callable[[SideFigures], float | None]
    higher_is_faster: bool
    counts: bool = False  # a zero is a count measured (errors), not a run that measured nothing


METRICS = (
    Metric("tps", lambda f: f.tps, True),
    Metric("p50_ms", lambda f: f.p50_ms, False),
    Metric("p95_ms", lambda f: f.p95_ms, False),
    Metric("p99_ms", lambda f: f.p99_ms, False),
    Metric("cpu_us_per_txn", lambda f: f.cpu_us_per_txn, False),
    Metric("errors", lambda f: float(f.errors), False, counts=True),
)


def comparisons(rounds: Sequence[Round], resolution: float, confidence: float = CONFIDENCE) -> dict[str, Comparison]:
    """Every metric all rounds measured on both sides (client CPU is not
    measured on every target), B against A, at `confidence`."""
    out = {}
    for m in METRICS:
        a = [m.value(r.a) for r in rounds]
        b = [m.value(r.b) for r in rounds]
        if rounds and all(v is not None for v in (*a, *b)):
            out[m.key] = compare([float(v) for v in a if v is not None], [float(v) for v in b if v is not None],
                                 m.higher_is_faster, resolution, confidence, counts=m.counts)
    tps = out.get("tps")
    if tps is not None and tps.reason:
        # a run that counted no transactions measured no latency and counted no errors: its figures are none
        out.update({m.key: Comparison(None, None, None, None, Outcome.UNDECIDED, len(rounds), None,
                                      m.higher_is_faster, f"tps: {tps.reason}", confidence)
                    for m in METRICS if m.key in out
                    and m.key != "tps"})
    return out


def decided(rounds: Sequence[Round], resolution: float, confidence: float = CONFIDENCE) -> bool:
    """The TPS verdict, at `confidence`, is one that more rounds are not needed for."""
    tps = comparisons(rounds, resolution, confidence).get("tps")
    return tps is not None and tps.verdict is not Outcome.UNDECIDED


def side_verdict(figures: Sequence[SideFigures]) -> dict[str, object]:
    """What limited a side across its rounds: the limit most rounds' steady
    stretch named, how many did, and one of their evidence lines."""
    limits = Counter(f.limit for f in figures if f.limit)
    if not limits:
        return {"limit": None, "rounds": 0, "of": len(figures), "evidence": ""}
    limit, n = limits.most_common(1)[0]
    evidence = next(f.evidence for f in reversed(figures) if f.limit == limit)
    return {"limit": limit, "rounds": n, "of": len(figures), "evidence": evidence,
            "limits": dict(limits.most_common())}


@dataclass(frozen=True, slots=True)
class AbResult:
    sides: Mapping[str, Side]
    plan: Plan
    rounds: Sequence[Round]
    stopped_by: str
    seed: int
    horizon: int | None = None  # --until-confident: the most rounds it could look after (stats.look_confidence)

    @property
    def confidence(self) -> float:
        """Of the intervals: 95%, or higher after a look of --until-confident."""
        return look_confidence(len(self.rounds), self.horizon)

    @property
    def metrics(self) -> dict[str, Comparison]:
        return comparisons(self.rounds, self.plan.resolution, self.confidence)

    def metric(self, key: str) -> Comparison:
        """One metric's comparison (a key of METRICS: "tps", "p99_ms", ...);
        undecided, without a ratio, when not every round measured it."""
        known = {m.key: m for m in METRICS}
        if key not in known:
            raise KeyError(f"no metric {key!r} (have: {', '.join(known)})")
        found = self.metrics.get(key)
        return found if found is not None else Comparison(None, None, None, None, Outcome.UNDECIDED, len(self.rounds),
                                                          None, known[key].higher_is_faster,
                                                          "no round" if not self.rounds else "not every round measured it",
                                                          self.confidence)

    @property
    def tps(self) -> Comparison:
        """B/A of TPS: `result.tps.ci_low`, `result.tps.no_regression_beyond(0.05)`."""
        return self.metric("tps")

    @property
    def p99(self) -> Comparison:
        """B/A of the p99 latency (lower is faster)."""
        return self.metric("p99_ms")

    @property
    def complete(self) -> bool:
        """Every planned round ran (or --until-confident decided, or ran out of time)."""
        return self.stopped_by in ("rounds", "confident", "max-time")

    @property
    def verdict(self) -> Outcome:
        return self.tps.verdict

    def text(self) -> str:
        tps = self.metrics.get("tps")
        if tps is None:
            return "no round finished: nothing to compare"
        return verdict_text(tps, self.plan.resolution)

    def to_dict(self) -> dict[str, object]:
        metrics = self.metrics
        return {"ab": {
            "verdict": self.verdict.value,
            "text": self.text(),
            "method": METHOD,
            "confidence": round(self.confidence, 5),
            "looks_horizon": self.horizon,
            "resolution": self.plan.resolution,
            "round_time_s": self.plan.round_time_s,
            "until_confident": self.plan.until_confident,
            "duet": self.plan.duet,
            "turn_s": self.plan.turn_s,
            "stopped_by": self.stopped_by,
            "complete": self.complete,
            "seed": self.seed,
            "metrics": {k: c.to_dict() for k, c in metrics.items()},
            "sides": {name: {**side.to_dict(),
                             "verdict": side_verdict([getattr(r, name) for r in self.rounds])}
                      for name, side in self.sides.items()},
            "rounds": [r.to_dict() for r in self.rounds],
        }}

    def write(self, folder: Path) -> None:
        """ab.json, replaced whole (a comparison killed mid-write keeps the
        previous rounds' file)."""
        path = folder / AB_JSON
        tmp = folder / f".{AB_JSON}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        tmp.replace(path)


def round_line(r: Round, planned: int | None, duet: bool = False) -> str:
    """e.g. 'round 3/6 (B, A): A 5120.3 tps p99 1.92 ms, B 4210.8 tps p99 2.31 ms: B/A 0.822';
    a duet's sides ran at the same time: '(together)'."""
    of = f"/{planned}" if planned else ""
    sides = ", ".join(f"{s.upper()} {f.tps:.1f} tps p99 {f.p99_ms:.3g} ms" for s, f in (("a", r.a), ("b", r.b)))
    order = "together" if duet else ", ".join(s.upper() for s in r.order)
    return f"round {r.index}{of} ({order}): {sides}: B/A {r.tps_ratio:.3f}"


def closing_lines(result: AbResult) -> list[str]:
    """The comparison, then the other metrics' ratios and what limited each side."""
    lines = [result.text()]
    rest = [f"{k} {c.ratio:.3f}" + (f" ({c.ci_low:.3f} .. {c.ci_high:.3f})" if c.ci_low is not None
                                    and c.ci_high is not None else "")
            for k, c in result.metrics.items() if k != "tps" and c.ratio is not None]
    if rest:
        lines.append("B/A: " + ", ".join(rest))
    for name in result.sides:
        v = side_verdict([getattr(r, name) for r in result.rounds])
        if v["limit"]:
            lines.append(f"what limits {name.upper()}: {v['limit']} in {v['rounds']} of {v['of']} rounds ({v['evidence']})")
    return lines
