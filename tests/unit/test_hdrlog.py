"""The HdrHistogram log export decodes, with HdrHistogram's own Python
implementation, to the same counts and percentiles."""

from __future__ import annotations

import random

import pytest

from benchtop.engine.histogram import Histogram
from benchtop.run.hdrlog import encode, header_lines, interval_line

hdrh = pytest.importorskip("hdrh.histogram")


def test_encoded_histogram_decodes_to_the_same_counts() -> None:
    rng = random.Random(3)
    values = [int(rng.lognormvariate(12, 2)) + 1 for _ in range(20000)] + [0, 1, 255, 256, 10**11]
    h = Histogram.from_values_ns(values)
    decoded = hdrh.HdrHistogram.decode(encode(h))
    assert decoded.get_total_count() == h.total
    for p in (50, 90, 99, 99.9):
        ours = h.percentile_ns(p)
        theirs = decoded.get_value_at_percentile(p)
        assert abs(theirs - ours) / ours < 0.01, (p, ours, theirs)


def test_log_lines() -> None:
    h = Histogram.from_values_ns([1_000_000, 2_000_000])
    head = header_lines(1_700_000_000.0)
    assert head[0] == "#[Histogram log format version 1.3]" and head[-1].startswith('"StartTimestamp"')
    start, length, mx, blob = interval_line(1.0, 1.0, h).split(",")
    assert (start, length) == ("1.000", "1.000") and abs(float(mx) - 2.0) < 0.03
    assert hdrh.HdrHistogram.decode(blob).get_total_count() == 2
