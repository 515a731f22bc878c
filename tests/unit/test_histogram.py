"""Histogram math: percentiles within 1% of exact ones, exact merges."""

from __future__ import annotations

import math
import random

import pytest

from benchtop.engine.histogram import Histogram, bucket_bounds, bucket_index


def exact_percentile(values: list[int], p: float) -> int:
    s = sorted(values)
    rank = max(1, math.ceil(round(p / 100 * len(s), 6)))
    return s[rank - 1]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("shape", ["lognormal", "uniform", "bimodal"])
def test_percentiles_within_one_percent(seed: int, shape: str) -> None:
    rng = random.Random(seed)
    if shape == "lognormal":
        values = [int(rng.lognormvariate(13, 1.5)) + 1000 for _ in range(20000)]
    elif shape == "uniform":
        values = [rng.randint(1_000, 100_000_000_000) for _ in range(20000)]
    else:
        values = [int(rng.gauss(200_000, 20_000)) if rng.random() < 0.7 else int(rng.gauss(20_000_000, 2_000_000))
                  for _ in range(20000)]
        values = [max(1000, v) for v in values]
    h = Histogram.from_values_ns(values)
    for p in (50, 90, 95, 99, 99.9, 99.99):
        exact = exact_percentile(values, p)
        got = h.percentile_ns(p)
        assert abs(got - exact) / exact <= 0.01, (p, got, exact)
    ms = h.percentiles_ms([50, 99])
    assert ms[50] == pytest.approx(h.percentile_ns(50) / 1e6)


def test_bucket_layout_covers_1us_to_100s() -> None:
    lows, highs = bucket_bounds()
    assert lows[0] == 0 and all(h == l2 for h, l2 in zip(highs, lows[1:]))
    assert highs[-1] > 100 * 10**9
    for v in (1_000, 123_456, 10**9, 99 * 10**9):
        i = bucket_index(v)
        assert lows[i] <= v < highs[i]
        assert (highs[i] - lows[i]) / lows[i] <= 1 / 128


def test_merge_and_difference_are_exact() -> None:
    a = Histogram.from_values_ns([1000, 2000, 3_000_000])
    b = Histogram.from_values_ns([2000, 50_000_000])
    both = a + b
    assert both.total == 5
    assert (both - b) == a
    assert Histogram.from_sparse(both.to_sparse()) == both
    assert (b - both).total == 0  # never negative


def test_empty_histogram() -> None:
    h = Histogram.empty()
    assert h.total == 0 and h.percentile_ns(99) == 0.0 and h.max_ns() == 0.0
    assert h.coarse() == []


def test_coarse_counts_add_up() -> None:
    rng = random.Random(7)
    values = [int(rng.lognormvariate(12, 2)) + 1 for _ in range(5000)]
    h = Histogram.from_values_ns(values)
    assert sum(c for _, c in h.coarse()) == 5000
