"""Where to probe next: the search for the setting (threads, or an arrival
rate) with the highest throughput whose p99 (and error share) stays under
the limits.  Pure logic: it is told each probe's result and never touches
an engine, so simulated systems test it (tests/unit/test_knee_search.py).

1. Bracketing: from the lower bound, multiply by `factor` while the limits
   hold and throughput still grows by `growth` (one flat step is allowed:
   it may be noise; a jump of factor squared when the USL fit is sure the
   target is further).
2. Narrowing: every gap between neighbouring probes that may still hide a
   better feasible setting is a candidate.  A gap's best possible throughput
   is bounded by extending the chords of the probes on either side
   (throughput against concurrency is concave, as the USL is), and by the
   USL fit once it explains the probes; a gap closes when its bound is
   within half the tolerance of the best probe, when it is narrower than
   the tolerance, or when no setting is left inside it.
   The next probe goes into the most promising gap, at the fit's predicted
   peak or limit crossing when that lies inside (kept off the gap's ends),
   else at its middle.
3. Done when no gap is open (or the probe budget is spent).
4. With `confirm_s`, the answer is held that long once more before it is
   given (whether or not the probes around it steadied): a probe of a few
   seconds under the limit at the edge may have had a lucky stretch on a
   busy host (beside a CPU hog, 17,660/s held a 10 ms p99 for 2 s and gave
   13.9 ms over the next 20).  One that breaks a limit closes everything
   from it up, as any probe does, and the best setting below it is held in
   turn (MAX_CONFIRMS settings at most); the first that keeps them is the
   answer.

Latency is assumed to grow with the setting: a probe over the limit closes
everything above it (one that never became steady is measured once more
first; the later measurement of a setting counts).

An answer must have been measured: the leading probe is measured once more
when it never became steady, before the search may end on it, and the best
is the best steady setting (an unsteady one only when none steadied, and
then the reason says so rather than that the bracket closed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from benchtop.knee.usl import UslFit, fit_usl

# a fit explains the probes well enough to place probes with
GOOD_FIT_R2 = 0.9
# a bolder fit may skip a bracketing step
SURE_FIT_R2 = 0.98
# a fit judges gaps once it rests on this many probes (three settle any three-parameter curve)
FIT_BOUND_PROBES = 4
# ... and only gaps whose ends it predicts within this share
FIT_MISS = 0.2
# a fit-placed probe stays this share of the gap away from its ends
KEEP_OFF_ENDS = 0.25
# a fall of more than this share between neighbouring probes is a cliff, not the curve's decline
CLIFF = 0.3
# the highest p99 limit a search takes, milliseconds
MAX_P99_LIMIT_MS = 3_600_000.0
# settings held for confirm_s before the search gives up on a confirmed answer
MAX_CONFIRMS = 3


@dataclass(frozen=True, slots=True)
class Probe:
    """One setting held until its throughput was steady."""

    x: float  # threads, or the arrival rate (transactions/s)
    tps: float
    p99_ms: float
    transactions: int = 0
    errors: int = 0
    time_s: float = 0.0
    cv: float = 0.0  # of the interval TPS over the probe's last window
    steady: bool = True  # False: the probe ran out of time before its TPS and p99 were steady
    # TPS and p99 of the probe's successive parts (how sure its figures are; empty: not measured in parts)
    tps_parts: tuple[float, ...] = ()
    p99_parts: tuple[float, ...] = ()

    @property
    def error_ratio(self) -> float:
        attempts = self.transactions + self.errors
        return self.errors / attempts if attempts else 0.0


@dataclass(frozen=True, slots=True)
class SearchSettings:
    low: float = 1
    high: float = 64
    p99_limit_ms: float | None = None
    error_limit: float | None = None  # share of attempts that failed (0.01 = 1%)
    tolerance: float = 0.10
    factor: float = 2.0
    growth: float = 0.05  # bracketing goes on while a step up gains at least this
    max_probes: int = 24
    rate: bool = False  # the setting is the arrival rate (a real number), not threads
    confirm_s: float = 0.0  # the answer held this long once more before it is given (0: not held)

    def check(self) -> None:
        """ValueError (one line) for settings the search cannot use."""
        if not (math.isfinite(self.low) and math.isfinite(self.high) and 0 < self.low <= self.high):
            raise ValueError(f"the search range must be 0 < low <= high, not {self.low:g}..{self.high:g}")
        if not 0 < self.tolerance < 1:
            raise ValueError(f"the tolerance must be between 0 and 1 (0.1 = 10%), not {self.tolerance:g}")
        # above an hour no probe (6 s by default) could ever exceed it: the search would only run to its top
        if self.p99_limit_ms is not None and not 0 < self.p99_limit_ms <= MAX_P99_LIMIT_MS:
            raise ValueError(f"the p99 limit takes milliseconds from 0 to {MAX_P99_LIMIT_MS:.0f} (an hour), "
                             f"not {self.p99_limit_ms:g}")
        if self.error_limit is not None and not 0 <= self.error_limit < 1:
            raise ValueError(f"the error limit is a share of attempts from 0 to 1, not {self.error_limit:g}")
        if not self.factor > 1:
            raise ValueError(f"the bracketing factor must be above 1, not {self.factor:g}")
        if self.max_probes < 1:
            raise ValueError("the probe budget must be at least 1")
        if not (math.isfinite(self.confirm_s) and self.confirm_s >= 0):
            raise ValueError(f"the answer's confirmation must be 0 or more seconds, not {self.confirm_s:g}")


@dataclass(frozen=True, slots=True)
class Gap:
    low: float  # a probed setting (feasible)
    high: float  # a probed setting, or the unprobed end of the bracketing
    bound: float  # the highest throughput it may hide (inf: unbounded)
    probed_high: bool


@dataclass
class KneeSearch:
    settings: SearchSettings
    probes: list[Probe] = field(default_factory=list)
    fit: UslFit | None = None
    phase: str = "bracket"  # bracket, narrow, confirm, done
    reason: str = ""  # why the search ended
    closed: bool = False  # it ended by its own rules (not a spent budget)
    held: list[float] = field(default_factory=list)  # settings held for confirm_s, in order
    confirmed: set[float] = field(default_factory=set)  # ... those that kept the limits
    unsteady: str = ""  # the probes around the answer that never became steady, said when it ends

    def __post_init__(self) -> None:
        self.settings.check()

    # -- judging probes ---------------------------------------------------
    def why_not(self, p: Probe) -> str:
        """Why a probe's setting is not acceptable ("" when it is)."""
        s = self.settings
        if p.tps <= 0:
            return "no throughput"
        if s.p99_limit_ms is not None and p.p99_ms > s.p99_limit_ms:
            return f"p99 {p.p99_ms:.3g} ms over the limit"
        if s.error_limit is not None and p.error_ratio > s.error_limit:
            return f"errors {100 * p.error_ratio:.2g}% over the limit"
        if s.rate and p.tps < (1 - s.tolerance) * p.x:
            return "the rate was not reached"
        return ""

    def feasible(self, p: Probe) -> bool:
        return not self.why_not(p)

    @property
    def leader(self) -> Probe | None:
        """The feasible setting with the highest throughput, steady or not
        (its latest measurement): where the search looks next."""
        ok = self._acceptable()
        return max(ok, key=lambda p: p.tps) if ok else None

    @property
    def best(self) -> Probe | None:
        """The answer: the setting that kept the limits when held, once one
        did (a steadier short probe below it does not take its place on a
        few more TPS); before that, the best steady feasible setting; the
        leader when none steadied."""
        acceptable = self._acceptable()
        ok = [p for p in acceptable if p.x in self.confirmed] or [p for p in acceptable if p.steady]
        return max(ok, key=lambda p: p.tps) if ok else self.leader

    def _acceptable(self) -> list[Probe]:
        """The settings (latest measurements) below the first one over a
        limit: latency grows with the setting, so one that kept the limit
        above a break had a lucky stretch."""
        pts = self._sorted()
        first_bad = next((i for i, p in enumerate(pts) if not self.feasible(p)), len(pts))
        return pts[:first_bad]

    def _sorted(self) -> list[Probe]:
        by_x: dict[float, Probe] = {}
        for p in self.probes:  # a setting probed again: its latest result
            by_x[p.x] = p
        return [by_x[x] for x in sorted(by_x)]

    @property
    def bracket(self) -> tuple[float, float, float] | None:
        """(below, best, above): the best probe's probed neighbours (its own
        setting where it has none)."""
        best = self.best
        if best is None:
            return None
        xs = [p.x for p in self._sorted()]
        i = xs.index(best.x)
        return (xs[i - 1] if i > 0 else best.x, best.x, xs[i + 1] if i + 1 < len(xs) else best.x)

    # -- the protocol -------------------------------------------------------
    def record(self, probe: Probe) -> None:
        self.probes.append(probe)
        if self.phase == "confirm":
            self.held.append(probe.x)
            if self.feasible(probe):
                self.confirmed.add(probe.x)
        if not self.settings.rate:
            pts = self._sorted()
            self.fit = fit_usl([p.x for p in pts], [p.tps for p in pts], [p.p99_ms for p in pts])

    def next(self) -> float | None:
        """The next setting to probe; None when the search is done (`reason` says why)."""
        if self.phase == "done":
            return None
        if len(self.probes) >= self.settings.max_probes:
            self._done("the probe budget is spent")
            return None
        if self.phase == "confirm":
            return self._confirm()
        retry = self._retry()
        if retry is not None:
            return retry
        if self.phase == "bracket":
            x = self._climb()
            if x is not None:
                return x
            self.phase = "narrow"
        leader = self.leader
        if leader is None:
            self._done("the limit is broken at the lowest setting" if self.probes else "no probe", closed=True)
            return None
        gaps = self.open_gaps()
        if not gaps:
            return self._close()
        gap = max(gaps, key=lambda g: (g.bound, -abs(math.log(g.low / leader.x))))
        x = self._place(gap)
        return x if x is not None else self._close()

    def _retry(self) -> float | None:
        """The last setting again when it broke a limit without ever being
        steady: on a noisy host one bad stretch must not close everything
        above it (once per setting)."""
        last = self.probes[-1] if self.probes else None
        if last is None or last.steady or self.feasible(last):
            return None
        if self._times(last.x) > 1:
            return None
        return last.x

    def _times(self, x: float) -> int:
        """How often setting x was measured."""
        return sum(1 for p in self.probes if p.x == x)

    def _done(self, reason: str, closed: bool = False) -> None:
        self.phase, self.reason, self.closed = "done", reason, closed

    def _close(self) -> float | None:
        """No gap is left: the leader once more if it never became steady
        (once), else the end, saying whether the answer rests on steady probes."""
        leader = self.leader
        if leader is not None and not leader.steady and self._times(leader.x) < 2:
            return leader.x
        # an unsteady probe over the limit twice is a limit break all the same
        unsteady = [p for p in self._around_best() if not p.steady and (self.feasible(p) or self._times(p.x) < 2)]
        if unsteady:
            self.unsteady = (f"the search ended on probes that never became steady "
                             f"({self._settings_text([p.x for p in unsteady])})")
        if self.settings.confirm_s > 0:
            # most of all when the search ended unsure: an answer measured twice may be the lucky one
            self.phase = "confirm"
            return self._confirm()
        self._done(f"{self.unsteady}: the answer is uncertain" if unsteady else "the bracket is within the tolerance",
                   closed=True)
        return None

    def _confirm(self) -> float | None:
        """The best setting to hold for confirm_s, or the end: it held, or
        MAX_CONFIRMS settings did not."""
        best, named, hold = self.best, self._settings_text, self.settings.confirm_s
        also = f"; {self.unsteady}" if self.unsteady else ""
        if best is None:
            self._done(f"no setting kept the limits when held for {hold:g} s ({named(self.held)}){also}", closed=True)
            return None
        if best.x in self.confirmed:
            broke = [x for x in self.held if x not in self.confirmed]
            self._done(f"the answer kept the limits when held for {hold:g} s"
                       + (f" ({named(broke)} did not)" if broke else "") + also, closed=True)
            return None
        if len(self.held) >= MAX_CONFIRMS:
            self._done(f"{named(self.held)} broke the limits when held for {hold:g} s: the answer is uncertain{also}",
                       closed=True)
            return None
        return best.x

    def _settings_text(self, xs: list[float]) -> str:
        return ", ".join(f"{x:g}/s" if self.settings.rate else f"{int(x)} thread{'s' if x != 1 else ''}" for x in xs)

    def _around_best(self) -> list[Probe]:
        """The probes the answer rests on: the best, its probed neighbours
        and the leader."""
        pts = self._sorted()
        best, leader = self.best, self.leader
        if best is None:
            return []
        i = [p.x for p in pts].index(best.x)
        near = pts[max(0, i - 1):i + 2]
        return near + ([leader] if leader is not None and leader not in near else [])

    # -- bracketing ---------------------------------------------------------
    def _climb(self) -> float | None:
        s = self.settings
        if not self.probes:
            return self._value(s.low)
        last = self.probes[-1]
        if not self.feasible(last) or last.x >= s.high:
            return None
        if self._stalled(len(self.probes) - 1):
            # one flat step may be noise: a second one, or a clear fall, ends the climb
            earlier = max(p.tps for p in self._before(len(self.probes) - 1))
            if last.tps < (1 - s.tolerance) * earlier or self._stalled(len(self.probes) - 2):
                return None
        step = s.factor
        target = self._fit_target()
        if target is not None and self.fit is not None and self.fit.r2 >= SURE_FIT_R2 and len(self.probes) >= 4 \
                and target > last.x * s.factor ** 2:
            step = s.factor ** 2  # the fit is sure the answer is far: one probe instead of two
        x = self._value(min(s.high, last.x * step))
        return x if x > last.x and x not in {p.x for p in self.probes} else None

    def _before(self, i: int) -> list[Probe]:
        """The probes before probe i at other settings (a setting measured again is not a step)."""
        return [p for p in self.probes[:i] if p.x != self.probes[i].x]

    def _stalled(self, i: int) -> bool:
        """Whether probe i gained less than `growth` over every probe before it."""
        earlier = self._before(i) if i >= 1 else []
        return bool(earlier) and self.probes[i].tps < (1 + self.settings.growth) * max(p.tps for p in earlier)

    # -- narrowing ----------------------------------------------------------
    def open_gaps(self) -> list[Gap]:
        """The gaps between probes that may still hide a better feasible setting."""
        s, best = self.settings, self.leader
        if best is None:
            return []
        pts = self._sorted()
        # latency grows with the setting: nothing above the first probe over the limit is acceptable
        first_bad = next((i for i, p in enumerate(pts) if not self.feasible(p)), len(pts))
        gaps: list[Gap] = []
        for i in range(first_bad):
            p = pts[i]
            if i + 1 < len(pts):
                q_x, probed = pts[i + 1].x, True
            elif p.x < s.high:
                q_x, probed = self._value(min(s.high, p.x * s.factor)), False
            else:
                continue
            bound = self._bound(pts, i, q_x, probed)
            if not self._room(p.x, q_x):
                continue
            if bound <= best.tps * (1 + s.tolerance / 2):
                continue
            if self._fit_bound(p, pts[i + 1] if probed else None, q_x) <= best.tps * (1 + s.tolerance / 2):
                continue  # a fit that explains the probes expects nothing better in there
            gaps.append(Gap(p.x, q_x, bound, probed))
        return gaps

    def _room(self, a: float, b: float) -> bool:
        """Whether a setting is left strictly between a and b that is worth a probe."""
        if b - a <= self.settings.tolerance * a:
            return False
        return b - a >= 2 if not self.settings.rate else True

    @staticmethod
    def _bound(pts: list[Probe], i: int, q_x: float, probed: bool) -> float:
        """The highest throughput a concave curve through the probes allows
        between pts[i] and q_x.  Any chord of a concave curve, extended past
        its ends, lies above the curve: every chord ending at p extended to
        q bounds the gap, and so does every chord starting at q extended back
        to p; the lowest of them is the bound."""
        p = pts[i]
        width = q_x - p.x
        left = min((p.tps + max(0.0, (p.tps - a.tps) / (p.x - a.x)) * width for a in pts[:i]), default=math.inf)
        right = math.inf
        # a fall past a cliff is not the concave curve: it bounds nothing
        if probed and not _cliff(p, pts[i + 1]):
            q = pts[i + 1]
            right = min((q.tps + max(0.0, -(r.tps - q.tps) / (r.x - q.x)) * width for r in pts[i + 2:]),
                        default=math.inf)
        return max(min(left, right), p.tps, pts[i + 1].tps if probed else 0.0)

    def _fit_bound(self, p: Probe, q: Probe | None, b: float) -> float:
        """The best throughput the fit expects strictly between probe p and
        setting b (probe q when probed) where the limit holds (inf: no fit
        good enough to judge by).  Near its peak the curve is flat, so once
        the fit explains the probes a gap whose expected best is within the
        tolerance needs no probe, however wide it is in threads.  A fit that
        misses either end of the gap (a cliff, a stretch the USL does not
        describe) judges nothing there, nor does it judge a gap that ends in a cliff."""
        fit = self.fit
        if fit is None or fit.r2 < GOOD_FIT_R2 or len(self.probes) < FIT_BOUND_PROBES:
            return math.inf
        a = p.x
        if q is not None and _cliff(p, q):
            return math.inf  # a fall past a cliff: a smooth curve through it says nothing about what lies before
        for end in (p, q):
            if end is not None and abs(fit.throughput(end.x) - end.tps) > FIT_MISS * end.tps:
                return math.inf
        hi = min(b, self._crossing(fit))
        if hi <= a:
            return 0.0
        peak = fit.peak_threads
        n = min(max(peak, a), hi)  # the curve rises to its peak and falls after it
        # what the fit expects there and its uncertainty: a curve resting on few or scattered probes
        # must not close a gap it cannot see into
        return fit.throughput(n) + fit.throughput_err(n)

    def _crossing(self, fit: UslFit) -> float:
        """Where the fit expects the p99 limit to break (inf: no limit, or no crossing it can say)."""
        limit = self.settings.p99_limit_ms
        crossing = fit.limit_threads(limit) if limit is not None else None
        return crossing if crossing is not None else math.inf

    def _fit_target(self) -> float | None:
        """The fit's best setting: its peak, or where the limit breaks when earlier."""
        fit = self.fit
        if fit is None or fit.r2 < GOOD_FIT_R2:
            return None
        target = min(fit.peak_threads, self._crossing(fit))
        return target if math.isfinite(target) and target > 0 else None

    def _place(self, gap: Gap) -> float | None:
        a, b = gap.low, gap.high
        width = b - a
        target = self._fit_target()
        if target is not None and a < target < b:
            x = min(max(target, a + KEEP_OFF_ENDS * width), b - KEEP_OFF_ENDS * width)
        elif b / a >= 2:
            x = math.sqrt(a * b)  # a wide gap (an octave or more): its middle on a log scale
        else:
            x = (a + b) / 2
        x = self._value(x)
        if not self.settings.rate:
            x = min(max(x, a + 1), b - 1)
        if x in {p.x for p in self.probes}:
            # rounding landed on a probed setting: the unprobed end of the bracketing instead
            if not gap.probed_high and b not in {p.x for p in self.probes}:
                return b
            return None
        return x

    def _value(self, x: float) -> float:
        return float(round(x)) if not self.settings.rate else float(f"{x:.4g}")

    # -- results ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        best = self.best
        s = self.settings
        out: dict[str, Any] = {
            "setting": "rate" if s.rate else "threads",
            "range": [s.low, s.high],
            "p99_limit_ms": s.p99_limit_ms,
            "error_limit": s.error_limit,
            "tolerance": s.tolerance,
            "reason": self.reason,
            "best": _probe_dict(best, s.rate) if best is not None else None,
            "bracket": list(self.bracket) if self.bracket else None,
            "usl": self.usl_dict(),
            "probes": [dict(_probe_dict(p, s.rate), feasible=self.feasible(p), why_not=self.why_not(p) or None)
                       for p in self.probes],
            "complete": self.closed,
        }
        if s.confirm_s > 0:
            out["confirm_s"] = s.confirm_s
            out["held"] = [{"rate" if s.rate else "threads": x if s.rate else int(x), "kept": x in self.confirmed}
                           for x in self.held]
            if best is not None and best.x in self.confirmed:
                out["best"].update(confirmed=True, held_s=s.confirm_s)
            elif best is not None:
                out["best"]["confirmed"] = False
        return out

    def usl_dict(self) -> dict[str, Any] | None:
        """The fit as summary.json carries it: its peak and limit break only
        when it explains the probes (r² at least GOOD_FIT_R2), each marked an
        extrapolation when it lies outside the probed settings."""
        fit = self.fit
        if fit is None:
            return None
        d = fit.to_dict(self.settings.p99_limit_ms)
        xs = [p.x for p in self.probes]
        d["probed"] = [min(xs), max(xs)]
        if fit.r2 < GOOD_FIT_R2:
            d["not_used"] = f"a loose fit (r² {fit.r2:.2f} under {GOOD_FIT_R2:g}): no peak or limit break taken from it"
            for key in ("peak_threads", "peak_tps", "limit_threads"):
                if key in d:
                    d[key] = None
            return d
        for key in ("peak_threads", "limit_threads"):
            v = d.get(key)
            if v is not None:
                d[key.replace("_threads", "_extrapolated")] = not min(xs) <= v <= max(xs)
        return d


def _cliff(p: Probe, q: Probe) -> bool:
    """Whether q, the next probe up from p, fell past a cliff (more than CLIFF below p)."""
    return q.tps < (1 - CLIFF) * p.tps


def _probe_dict(p: Probe, rate: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"rate" if rate else "threads": p.x if rate else int(p.x), "tps": round(p.tps, 2),
                         "p99_ms": round(p.p99_ms, 3), "errors": p.errors, "transactions": p.transactions,
                         "time_s": round(p.time_s, 2), "cv": round(p.cv, 4), "steady": p.steady}
    if p.tps_parts:
        d["tps_parts"], d["p99_parts"] = list(p.tps_parts), list(p.p99_parts)
    return d
