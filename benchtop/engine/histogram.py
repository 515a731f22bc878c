"""Latency histograms as the engine records them (log-linear buckets in ns,
see native/histogram.h), with exact merge/difference and percentiles.

Counts are plain tuples so a histogram is an immutable value: intervals are
`later - earlier`, whole runs and hosts merge with `+`.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from benchtop.engine.pickling import pickled_by_fields


@lru_cache(maxsize=1)
def bucket_bounds() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(low, high) nanosecond edges of every bucket, read from the engine so
    the layout has one definition."""
    from benchtop.engine._native import lib

    n = lib.bt_hist_nbuckets()
    lows = tuple(lib.bt_hist_bucket_low(i) for i in range(n))
    highs = tuple(lib.bt_hist_bucket_high(i) for i in range(n))
    return lows, highs


def nbuckets() -> int:
    return len(bucket_bounds()[0])


def bucket_index(ns: int) -> int:
    lows, _ = bucket_bounds()
    return max(0, bisect.bisect_right(lows, ns) - 1)


@lru_cache(maxsize=1)
def _empty() -> "Histogram":
    """One shared empty histogram (it is immutable)."""
    return Histogram((0,) * nbuckets())


def rank(p: float, total: int) -> int:
    """Nearest rank: the smallest count that covers p% (rounded first so
    99.9% of 20000 is 19980, not 19981 through float error).

    >>> rank(99.9, 20000), rank(50, 3), rank(100, 7), rank(0, 7)
    (19980, 2, 7, 1)
    """
    import math

    return max(1, min(total, math.ceil(round(p * total / 100.0, 6))))


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class Histogram:
    counts: tuple[int, ...]

    @classmethod
    def empty(cls) -> "Histogram":
        return _empty()

    @classmethod
    def from_values_ns(cls, values: list[int]) -> "Histogram":
        counts = [0] * nbuckets()
        for v in values:
            counts[bucket_index(int(v))] += 1
        return cls(tuple(counts))

    @classmethod
    def from_sparse(cls, items: list[list[int]] | list[tuple[int, int]]) -> "Histogram":
        """From [[bucket_index, count], ...] as results folders store it."""
        counts = [0] * nbuckets()
        for i, c in items:
            counts[int(i)] += int(c)
        return cls(tuple(counts))

    def to_sparse(self) -> list[list[int]]:
        counts = self.counts
        return [[i, counts[i]] for i in itertools.compress(range(len(counts)), counts)]

    @property
    def total(self) -> int:
        return sum(self.counts)

    # map(operator...) walks the 4,736 buckets in C: a cluster run takes two
    # differences per interval, and a Python loop made them most of its gather
    def __add__(self, other: "Histogram") -> "Histogram":
        return Histogram(tuple(map(operator.add, self.counts, other.counts)))

    def __sub__(self, other: "Histogram") -> "Histogram":
        d = list(map(operator.sub, self.counts, other.counts))
        if d and min(d) < 0:
            # Counters only grow; a torn read can make a bucket look one
            # behind, so never let an interval go negative.
            d = [x if x > 0 else 0 for x in d]
        return Histogram(tuple(d))

    # accumulate, bisect and compress walk the 4,736 buckets in C, not in a Python loop
    def _cumulative(self) -> list[int]:
        return list(itertools.accumulate(self.counts))

    @staticmethod
    def _mid_ns(cum: list[int], p: float) -> float:
        """The midpoint of the bucket holding the nearest rank of p% (cum: a non-empty histogram's _cumulative)."""
        lows, highs = bucket_bounds()
        i = bisect.bisect_left(cum, rank(p, cum[-1]))
        return (lows[i] + highs[i] - 1) / 2.0

    def percentile_ns(self, p: float) -> float:
        """Nearest-rank percentile, reported at the bucket's midpoint (within
        0.4% of the true value for any bucket above 256 ns)."""
        cum = self._cumulative()
        return self._mid_ns(cum, p) if cum and cum[-1] else 0.0

    def percentiles_ms(self, ps: list[float]) -> dict[float, float]:
        """Several percentiles from one accumulation, in milliseconds."""
        cum = self._cumulative()
        return {p: self._mid_ns(cum, p) / 1e6 if cum and cum[-1] else 0.0 for p in ps}

    def last_index(self) -> int:
        """The last non-empty bucket's index (-1: none)."""
        cum = self._cumulative()
        return bisect.bisect_left(cum, cum[-1]) if cum and cum[-1] else -1

    def max_ns(self) -> float:
        i = self.last_index()
        return float(bucket_bounds()[1][i] - 1) if i >= 0 else 0.0

    def min_ns(self) -> float:
        cum = self._cumulative()
        return float(bucket_bounds()[0][bisect.bisect_right(cum, 0)]) if cum and cum[-1] else 0.0

    def nonzero(self) -> Iterator[tuple[int, int, int]]:
        """(low_ns, high_ns, count) of every non-empty bucket."""
        lows, highs = bucket_bounds()
        counts = self.counts
        for i in itertools.compress(range(len(counts)), counts):
            yield lows[i], highs[i], counts[i]

    def coarse(self, per_decade: int = 10) -> list[tuple[float, int]]:
        """Counts regrouped on a log scale: [(upper edge in ms, count)], for
        display and for the JSON summary (`le_ms`)."""
        import math

        groups: dict[int, int] = {}
        for low, high, c in self.nonzero():
            mid = max((low + high) / 2.0, 1.0)
            g = math.ceil(math.log10(mid / 1e6) * per_decade - 1e-9)
            groups[g] = groups.get(g, 0) + c
        return [(round(10 ** (g / per_decade), 6), groups[g]) for g in sorted(groups)]
