"""The comparison of paired rounds: per metric, the ratio B/A as the
Hodges-Lehmann estimate of the rounds' log-ratios (the median of their
pairwise means), its 95% confidence interval by inverting the Wilcoxon
signed-rank test (exact: the interval's ends are the Walsh averages the
test's critical value picks), and the test's p-value from scipy.  Both are
distribution-free: one round disturbed by a neighbour moves them little,
where a mean and a t interval would follow it.

A 95% interval needs at least 6 rounds (with fewer, even all of them on
one side has a two-sided p above 0.05): before that the interval is None
and the verdict undecided.  A comparison that looks after every round and
stops at the first decision (--until-confident) judges each look at a
higher confidence (`look_confidence`), so that all its looks together
claim a difference that is not there no more often than one fixed count
of rounds would."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

CONFIDENCE = 0.95
METHOD = ("Hodges-Lehmann estimate of the paired log-ratios B/A, 95% interval from the exact Wilcoxon "
          "signed-rank test, p-value from scipy.stats.wilcoxon")


class Outcome(str, Enum):
    B_FASTER = "b_faster"
    B_SLOWER = "b_slower"
    NO_DIFFERENCE = "no_difference"
    UNDECIDED = "undecided"


@dataclass(frozen=True, slots=True)
class Comparison:
    """One metric's ratio B/A over the rounds.  `ci_low`/`ci_high` are None
    with fewer than 6 rounds; `ratio` and `p_value` None when a round had a
    zero (errors: then `ratio` is of the totals, when A's is not zero).
    `reason`: why it is undecided whatever more rounds show, when that is
    not just too few or too spread rounds (a round that measured nothing)."""

    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: Outcome
    rounds: int
    more_rounds: int | None  # about this many more would decide it (None: decided, or no estimate)
    higher_is_faster: bool = True  # TPS; latency and CPU per transaction: lower is faster
    reason: str = ""
    confidence: float = CONFIDENCE  # of the interval: higher at a look of --until-confident

    def no_regression_beyond(self, share: float) -> bool:
        """Whether the 95% interval rules out B being more than `share`
        slower than A (0.05: 5%): TPS's low end at least 1 - share, a
        latency's high end at most 1 + share.  False without an interval
        (fewer than 6 rounds, or a round that measured 0): nothing is ruled out.

        >>> Comparison(0.99, 0.97, 1.01, 0.4, Outcome.UNDECIDED, 8, 3).no_regression_beyond(0.05)
        True
        >>> Comparison(1.02, 0.99, 1.07, 0.4, Outcome.UNDECIDED, 8, 3, False).no_regression_beyond(0.05)
        False
        >>> Comparison(1.0, None, None, 0.9, Outcome.UNDECIDED, 3, 5).no_regression_beyond(0.05)
        False
        """
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low >= 1.0 - share if self.higher_is_faster else self.ci_high <= 1.0 + share

    def to_dict(self) -> dict[str, object]:
        def r(x: float | None, digits: int = 4) -> float | None:
            return None if x is None else round(x, digits)

        return {"ratio": r(self.ratio), "ci_low": r(self.ci_low), "ci_high": r(self.ci_high),
                "p_value": r(self.p_value, 5), "verdict": self.verdict.value, "rounds": self.rounds,
                "more_rounds": self.more_rounds, "reason": self.reason or None,
                "confidence": r(self.confidence, 5)}


def walsh_averages(x: Sequence[float]) -> np.ndarray:
    """The pairwise means (x_i + x_j) / 2, i <= j, sorted.

    >>> walsh_averages([1.0, 3.0]).tolist()
    [1.0, 2.0, 3.0]
    """
    a = np.asarray(x, dtype=float)
    i, j = np.triu_indices(len(a))
    return np.sort((a[i] + a[j]) / 2)


def hodges_lehmann(x: Sequence[float]) -> float:
    """The median of the Walsh averages: the location the signed-rank test
    is centred on.

    >>> hodges_lehmann([1.0, 2.0, 3.0, 10.0])
    2.75
    """
    return float(np.median(walsh_averages(x)))


def signed_rank_counts(n: int) -> np.ndarray:
    """How many of the 2**n sign patterns of n ranks give each sum W+
    (index 0 .. n(n+1)/2): the exact null distribution, by adding one rank
    at a time.

    >>> signed_rank_counts(3).astype(int).tolist()
    [1, 1, 1, 2, 1, 1, 1]
    """
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts


def critical_rank(n: int, confidence: float = CONFIDENCE) -> int:
    """The k whose k-th smallest and k-th largest Walsh averages bound the
    interval: the largest k with P(W+ <= k - 1) <= alpha/2; 0 when even
    k = 1 is too likely (n < 6 at 95%).

    >>> critical_rank(5), critical_rank(6), critical_rank(10)
    (0, 1, 9)
    """
    if n < 1:
        return 0
    cdf = np.cumsum(signed_rank_counts(n)) / 2.0 ** n
    alpha = 1.0 - confidence
    return int(np.count_nonzero(cdf <= alpha / 2 + 1e-12))


def shift_interval(x: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The confidence interval of the location of `x` (the shifts d the
    two-sided signed-rank test of x - d does not reject); None when the
    rounds are too few for one."""
    k = critical_rank(len(x), confidence)
    if k == 0:
        return None
    w = walsh_averages(x)
    return float(w[k - 1]), float(w[len(w) - k])


def look_confidence(n: int, horizon: int | None, confidence: float = CONFIDENCE) -> float:
    """The confidence of the interval judged after round `n` of a
    comparison that looks after every round and stops at the first decision
    (--until-confident), of at most `horizon` rounds; `horizon` None: the
    rounds were counted in advance, one look at `confidence`.  The error
    allowed, 1 - `confidence`, is spent across the looks by the Lan-DeMets
    Pocock-type function alpha * ln(1 + (e - 1) * n / horizon), each look
    spending only when its rounds can give an interval at all.  Judged at
    95% after every round instead, an A/A comparison of up to 30 rounds
    with 4% noise per round claimed a difference in 1 of 5 (simulated); so
    judged, in 1 of 100, and a true 5% difference was found in 299 of 300,
    after 11 rounds on average rather than 7.

    >>> look_confidence(6, None), round(look_confidence(7, 30), 4), round(look_confidence(8, 30), 4)
    (0.95, 0.9831, 0.998)
    """
    if horizon is None:
        return confidence
    alpha, used, level = 1.0 - confidence, 0.0, confidence
    for m in range(1, n + 1):
        allowed = alpha * math.log1p((math.e - 1.0) * min(m / horizon, 1.0)) - used
        level = 1.0 - max(allowed, 0.0)
        if allowed > 0 and critical_rank(m, level) > 0:
            used += allowed
    return level


def signed_rank_p(x: Sequence[float]) -> float:
    """scipy's two-sided Wilcoxon signed-rank p-value of `x` against 0 (1.0
    when every value is 0: no evidence of any shift)."""
    # imported here: scipy.stats takes 1-2 s to import on a busy host, which `benchtop ab --help` and a
    # refused command line should not wait for
    from scipy import stats

    a = np.asarray(x, dtype=float)
    if not np.any(a != 0):
        return 1.0
    with warnings.catch_warnings():  # few rounds, or ties: scipy warns of its approximation
        warnings.simplefilter("ignore")
        return float(stats.wilcoxon(a).pvalue)


def compare(a: Sequence[float], b: Sequence[float], higher_is_faster: bool, resolution: float,
            confidence: float = CONFIDENCE, counts: bool = False) -> Comparison:
    """B against A from paired rounds (a[i], b[i]).  `higher_is_faster`:
    TPS (else latency, CPU per transaction: lower is faster).  The verdict:
    faster or slower when the interval excludes 1, no_difference when it
    lies within 1 +- `resolution`, else undecided.  `counts`: a zero is a
    count the round measured (errors); else a zero is a round that measured
    nothing, and no rounds or such a round leave the metric undecided."""
    n = len(a)
    if n == 0:
        return Comparison(None, None, None, None, Outcome.UNDECIDED, 0, None, higher_is_faster, "no rounds")
    if any(v <= 0 for v in (*a, *b)):
        if counts:
            return _with_zeros(a, b, n, higher_is_faster)
        empty = [f"round {i + 1} {side}" for i in range(n) for side, v in (("A", a[i]), ("B", b[i])) if v <= 0]
        ta, tb = float(sum(a)), float(sum(b))
        return Comparison(tb / ta if ta > 0 and tb > 0 else None, None, None, None, Outcome.UNDECIDED, n, None,
                          higher_is_faster, f"{len(empty)} of {2 * n} runs measured 0 ({', '.join(empty[:4])}"
                                            f"{', ...' if len(empty) > 4 else ''}): no ratio to compare")
    logs = np.log(np.asarray(b, dtype=float) / np.asarray(a, dtype=float))
    centre = hodges_lehmann(logs)
    bounds = shift_interval(logs, confidence)
    p = signed_rank_p(logs)
    if bounds is None:
        return Comparison(math.exp(centre), None, None, p, Outcome.UNDECIDED, n, _more_rounds(logs, None, resolution),
                          higher_is_faster, confidence=confidence)
    lo, hi = math.exp(bounds[0]), math.exp(bounds[1])
    if lo > 1.0 or hi < 1.0:
        up = lo > 1.0
        outcome = Outcome.B_FASTER if up == higher_is_faster else Outcome.B_SLOWER
    elif lo >= 1.0 - resolution and hi <= 1.0 + resolution:
        outcome = Outcome.NO_DIFFERENCE
    else:
        outcome = Outcome.UNDECIDED
    more = _more_rounds(logs, bounds, resolution) if outcome is Outcome.UNDECIDED else None
    return Comparison(math.exp(centre), lo, hi, p, outcome, n, more, higher_is_faster, confidence=confidence)


def _with_zeros(a: Sequence[float], b: Sequence[float], n: int, higher_is_faster: bool) -> Comparison:
    """A count some round counted none of (errors): no log-ratio, so no
    interval; the ratio of the totals, and no difference when both sides
    counted none."""
    ta, tb = float(sum(a)), float(sum(b))
    if ta == 0 and tb == 0:
        return Comparison(None, None, None, None, Outcome.NO_DIFFERENCE, n, None, higher_is_faster)
    return Comparison(tb / ta if ta > 0 else None, None, None, None, Outcome.UNDECIDED, n, None, higher_is_faster)


def _more_rounds(logs: np.ndarray, bounds: tuple[float, float] | None, resolution: float) -> int | None:
    """About how many more rounds would decide: the interval's half-width
    shrinks as 1/sqrt(rounds), and it decides once it is narrower than the
    distance from 1 (a difference) or fits within the resolution (none).
    Before there is an interval, its width is guessed from the spread."""
    n = len(logs)
    if bounds is not None:
        half = (bounds[1] - bounds[0]) / 2
    elif n >= 2:
        half = 2.0 * float(np.std(logs, ddof=1)) / math.sqrt(n)
    else:
        return None
    centre = abs(float(np.median(logs)))
    room = max(centre, math.log1p(resolution) - centre)
    if half <= 0:
        return max(0, 6 - n) or None
    needed = max(6, math.ceil(n * (half / room) ** 2))
    return max(1, needed - n)


def verdict_text(c: Comparison, resolution: float) -> str:
    """The comparison's line, e.g. 'B is 4.1% faster (95% CI +2.3% .. +5.9%,
    10 rounds)', for TPS (the CI is of the change B/A - 1).

    >>> verdict_text(Comparison(1.041, 1.023, 1.059, 0.002, Outcome.B_FASTER, 10, None), 0.02)
    'B is 4.1% faster (95% CI +2.3% .. +5.9%, 10 rounds)'
    >>> verdict_text(Comparison(1.0, 0.968, 1.029, 0.8, Outcome.UNDECIDED, 6, 14), 0.02)
    'no difference detectable: B/A 1.00 (95% CI -3.2% .. +2.9%, 6 rounds); about 14 more rounds would resolve 2%'
    >>> verdict_text(Comparison(1.01, None, None, 0.5, Outcome.UNDECIDED, 3, 5), 0.02)
    'no difference detectable: B/A 1.01 (3 rounds: a 95% interval needs 6); about 5 more rounds would resolve 2%'
    >>> verdict_text(Comparison(None, None, None, None, Outcome.UNDECIDED, 2, None, reason="no transactions"), 0.02)
    'undecided: no transactions (2 rounds)'
    >>> verdict_text(Comparison(0.95, 0.93, 0.97, 0.001, Outcome.B_SLOWER, 11, None, confidence=0.9962), 0.02)
    'B is 5.0% slower (99.6% CI -7.0% .. -3.0%, 11 rounds, judged after each)'
    """
    def pct(x: float) -> str:
        return f"{100 * (x - 1):+.1f}%"

    ratio = c.ratio if c.ratio is not None else 1.0
    rounds = f"{c.rounds} round{'' if c.rounds == 1 else 's'}"
    level = f"{100 * c.confidence:.3g}%"
    looked = "" if c.confidence == CONFIDENCE else ", judged after each"
    ci = (f"{level} CI {pct(c.ci_low)} .. {pct(c.ci_high)}, {rounds}{looked}" if c.ci_low is not None
          and c.ci_high is not None else
          f"{rounds}: a 95% interval needs 6" if c.confidence == CONFIDENCE else
          f"{rounds}: too few for a {level} interval")
    if c.verdict in (Outcome.B_FASTER, Outcome.B_SLOWER):
        word = "faster" if c.verdict is Outcome.B_FASTER else "slower"
        return f"B is {abs(100 * (ratio - 1)):.1f}% {word} ({ci})"
    if c.reason:
        return f"undecided: {c.reason} ({rounds})"
    if c.verdict is Outcome.NO_DIFFERENCE:
        return f"no difference beyond {100 * resolution:g}%: B/A {ratio:.2f} ({ci})"
    more = f"; about {c.more_rounds} more rounds would resolve {100 * resolution:g}%" if c.more_rounds else ""
    return f"no difference detectable: B/A {ratio:.2f} ({ci}){more}"
