"""Several load hosts' readings as one: thread and event shares, merged
counters, and every host's interval histograms stacked in one array so
that a gather of many hosts costs a few array operations, not a few per
host.  Histograms merge exactly (bucket counts add), so merged percentiles
are those of one histogram fed every transaction."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import zip_longest
from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from benchtop.cluster.loadhost import SparseCounts
from benchtop.engine.histogram import Histogram, bucket_bounds, rank
from benchtop.engine.sample import ERROR_KINDS, EngineSample
from benchtop.record.samples import pct_key

ROW_PERCENTILES = (50.0, 95.0, 99.0)  # what each host's row shows


def split_total(total: int, parts: int) -> list[int]:
    """`total` threads (or events) over `parts` hosts, the first ones taking
    the remainder.

    >>> split_total(10, 4), split_total(1, 3), split_total(0, 2)
    ([3, 3, 2, 2], [1, 0, 0], [0, 0])
    """
    if parts <= 0:
        return []
    base, extra = divmod(max(0, total), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def merge_samples(parts: Sequence[EngineSample], t: float, latency: Histogram,
                  service: Histogram, live: Sequence[bool] | None = None) -> EngineSample:
    """Several hosts' cumulative readings as one: counters add, maxima are
    the largest, minima the smallest of the hosts that ran anything; `t` is
    the merged clock.  Gauges (threads, work in flight, rate, paused) are
    those of the `live` hosts only (default: all): a lost host's counts stay
    in the totals, its threads do not."""
    ran = [p for p in parts if p.transactions]
    now = list(parts) if live is None else [p for p, alive in zip(parts, live) if alive]

    def total(name: str) -> Any:
        return sum(map(attrgetter(name), parts))

    def gauge(name: str) -> Any:
        return sum(map(attrgetter(name), now))

    def by_type(name: str) -> tuple[int, ...]:
        return tuple(map(sum, zip_longest(*map(attrgetter(name), parts), fillvalue=0)))

    errors = dict.fromkeys(ERROR_KINDS, 0)
    for p in parts:
        for k, v in p.errors.items():
            if k in errors:
                errors[k] += v

    return EngineSample(
        t=t, state="running", threads_target=gauge("threads_target"), threads_running=gauge("threads_running"),
        in_flight=gauge("in_flight"), unfinished=total("unfinished"), paused=bool(now) and all(p.paused for p in now), rate=gauge("rate"),
        transactions=total("transactions"), rollbacks=total("rollbacks"), reads=total("reads"),
        writes=total("writes"), other=total("other"),
        errors=errors,
        retries=total("retries"), reconnects=total("reconnects"), connects=total("connects"),
        connect_ns_sum=total("connect_ns_sum"), connect_ns_max=max(map(attrgetter("connect_ns_max"), parts), default=0),
        latency_ns_sum=total("latency_ns_sum"), latency_ns_min=min(map(attrgetter("latency_ns_min"), ran), default=0),
        latency_ns_max=max(map(attrgetter("latency_ns_max"), parts), default=0), service_ns_sum=total("service_ns_sum"),
        service_ns_max=max(map(attrgetter("service_ns_max"), parts), default=0), busy_ns=total("busy_ns"),
        queue_ns=total("queue_ns"), tickets_due=total("tickets_due"), txn_by_type=by_type("txn_by_type"),
        txn_ns_by_type=by_type("txn_ns_by_type"), svc_ns_by_type=by_type("svc_ns_by_type"), rows_loaded=total("rows_loaded"), error="",
        latency=latency, service=service,
    )


@lru_cache(maxsize=1)
def _bucket_ms() -> tuple[np.ndarray, np.ndarray]:
    """Each bucket's midpoint and top, in ms: what Histogram reports."""
    lows, highs = bucket_bounds()
    low, high = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    return (low + high - 1) / 2.0 / 1e6, (high - 1) / 1e6


@dataclass(frozen=True)
class Stacked:
    """Several hosts' non-empty buckets in one sorted array: key = host's
    position x buckets + bucket.  Every host's interval is a few array
    operations over all of them, not a few per host."""

    key: np.ndarray  # int64, ascending
    count: np.ndarray  # int64
    hosts: int
    nb: int

    @classmethod
    def of(cls, parts: Sequence[SparseCounts], nb: int) -> Stacked:
        lengths = [len(p.index) for p in parts]
        if not sum(lengths):
            return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), len(parts), nb)
        key = np.concatenate([p.index for p in parts]).astype(np.int64)
        key += np.repeat(np.arange(len(parts), dtype=np.int64) * nb, lengths)
        return cls(key, np.concatenate([p.count for p in parts]).astype(np.int64), len(parts), nb)

    def minus(self, prev: Stacked) -> Stacked:
        """self - prev per bucket, both cumulative, never negative (a torn
        read can lag one bucket); empty buckets left out."""
        count = self.count.copy()
        if len(prev.key) and len(self.key):
            at = np.minimum(np.searchsorted(self.key, prev.key), len(self.key) - 1)
            hit = self.key[at] == prev.key
            count[at[hit]] -= prev.count[hit]
        keep = count > 0
        return Stacked(self.key[keep], count[keep], self.hosts, self.nb)

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        host = self.key // self.nb
        every = np.arange(self.hosts)
        return np.searchsorted(host, every), np.searchsorted(host, every, side="right")

    def latency_ms(self, percentiles: Sequence[float] = ROW_PERCENTILES) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Each host's count, and its percentiles (keyed as pct_key names
        them: p50, p95, p99, p999) and max in ms as Histogram.percentiles_ms
        and max_ns give them (0 for a host with none)."""
        zeros = np.zeros(self.hosts)
        if not len(self.key):
            return np.zeros(self.hosts, dtype=np.int64), {**{pct_key(p): zeros for p in percentiles}, "max": zeros}
        mid, top = _bucket_ms()
        bucket = self.key % self.nb
        starts, ends = self._bounds()
        cum = np.cumsum(self.count)
        before = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0)
        n = np.where(ends > starts, cum[np.maximum(ends - 1, 0)] - before, 0)
        has = n > 0
        out = {}
        for p in percentiles:
            # the first bucket of each host whose running count covers its rank
            ranks = np.array([rank(p, int(t)) if t else 1 for t in n], dtype=np.int64)
            at = np.minimum(np.searchsorted(cum, before + ranks), len(cum) - 1)
            out[pct_key(p)] = np.where(has, mid[bucket[at]], 0.0)
        out["max"] = np.where(has, top[bucket[np.maximum(ends - 1, 0)]], 0.0)
        return n, out

    def histogram(self, position: int) -> Histogram:
        """One host's buckets as a Histogram."""
        lo, hi = np.searchsorted(self.key // self.nb, [position, position + 1])
        return dense(self.key[lo:hi] % self.nb, self.count[lo:hi], self.nb)


def dense(index: np.ndarray, count: np.ndarray, nb: int) -> Histogram:
    """Non-empty buckets (numbers and counts) as a Histogram of `nb` buckets."""
    row = np.zeros(nb, dtype=np.uint64)
    row[index] = count
    return Histogram(tuple(row.tolist()))


