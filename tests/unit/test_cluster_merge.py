"""Cluster arithmetic without a cluster: knobs split across hosts, cumulative
readings merge by adding, merged percentiles are those of one histogram fed
every sample, and per-host rows compute percentiles as Histogram does."""

from __future__ import annotations

import random

import pytest

np = pytest.importorskip("numpy")

from benchtop.cluster.loadhost import SparseCounts  # noqa: E402
from benchtop.cluster.merge import Stacked, merge_samples, split_total  # noqa: E402
from benchtop.engine.histogram import Histogram  # noqa: E402
from benchtop.engine.sample import ERROR_KINDS, EngineSample  # noqa: E402
from benchtop.record.samples import IntervalStats  # noqa: E402


def _sample(values_ns: list[int], t: float, threads: int, errors: int = 0) -> EngineSample:
    h = Histogram.from_values_ns(values_ns)
    return EngineSample(
        t=t, state="running", threads_target=threads, threads_running=threads, in_flight=0, unfinished=0, paused=False, rate=0.0,
        transactions=len(values_ns), rollbacks=0, reads=len(values_ns), writes=0, other=0,
        errors={k: (errors if k == "deadlock" else 0) for k in ERROR_KINDS}, retries=0, reconnects=0,
        connects=threads, connect_ns_sum=0, connect_ns_max=0, latency_ns_sum=sum(values_ns),
        latency_ns_min=min(values_ns, default=0), latency_ns_max=max(values_ns, default=0),
        service_ns_sum=sum(values_ns), service_ns_max=max(values_ns, default=0), busy_ns=0, queue_ns=0.0,
        tickets_due=0, txn_by_type=(len(values_ns),), txn_ns_by_type=(sum(values_ns),), rows_loaded=0, error="",
        latency=h, service=h,
    )


def test_threads_and_events_split_over_hosts():
    assert split_total(10, 4) == [3, 3, 2, 2]
    assert split_total(2, 2) == [1, 1]
    assert sum(split_total(1001, 64)) == 1001
    assert split_total(5, 0) == []


def test_merged_counts_are_the_sum_and_percentiles_those_of_one_histogram():
    rng = random.Random(7)
    hosts = [[int(rng.lognormvariate(12 + i, 1.0)) for _ in range(5000 + 1000 * i)] for i in range(3)]
    parts = [_sample(v, t=2.0, threads=i + 1, errors=i) for i, v in enumerate(hosts)]
    lat = parts[0].latency + parts[1].latency + parts[2].latency
    merged = merge_samples(parts, 2.0, lat, lat)
    every = [x for v in hosts for x in v]
    one = Histogram.from_values_ns(every)
    assert merged.latency == one
    assert merged.transactions == len(every) == sum(p.transactions for p in parts)
    assert merged.errors["deadlock"] == 0 + 1 + 2
    assert merged.threads_running == 6
    assert merged.latency_ns_min == min(every) and merged.latency_ns_max == max(every)
    zero = _sample([], t=0.0, threads=0)
    zero = merge_samples([zero, zero, zero], 0.0, Histogram.empty(), Histogram.empty())
    iv = IntervalStats.between(zero, merged)
    ps = [50.0, 95.0, 99.0]
    assert [iv.latency_ms[f"p{p:g}"] for p in ps] == [one.percentiles_ms(ps)[p] for p in ps]


def _sparse(h: Histogram) -> SparseCounts:
    return SparseCounts.of_dense(np.array(h.counts, dtype=np.uint64))


def test_host_rows_compute_percentiles_as_histogram_does():
    rng = random.Random(3)
    hists = [Histogram.from_values_ns([int(rng.expovariate(1 / (2e6 * (i + 1)))) for _ in range(5000 * (i + 1))])
             for i in range(3)] + [Histogram.empty()]
    hists.insert(1, Histogram.empty())
    stacked = Stacked.of([_sparse(h) for h in hists], len(hists[0].counts))
    n, got = stacked.latency_ms()
    for i, h in enumerate(hists):
        want = h.percentiles_ms([50.0, 95.0, 99.0])
        assert [got["p50"][i], got["p95"][i], got["p99"][i]] == [want[50.0], want[95.0], want[99.0]]
        assert got["max"][i] == h.max_ns() / 1e6 and n[i] == h.total
        assert stacked.histogram(i) == h


def test_a_hosts_interval_is_the_difference_of_its_cumulative_readings():
    rng = random.Random(5)
    firsts = [[int(rng.expovariate(1 / 2e6)) for _ in range(3000)], []]
    thens = [[int(rng.expovariate(1 / 9e6)) for _ in range(2000)], [5000]]
    nb = len(Histogram.empty().counts)
    before = Stacked.of([_sparse(Histogram.from_values_ns(f)) for f in firsts], nb)
    after = Stacked.of([_sparse(Histogram.from_values_ns(f + t)) for f, t in zip(firsts, thens)], nb)
    delta = after.minus(before)
    assert [delta.histogram(i) for i in range(2)] == [Histogram.from_values_ns(t) for t in thens]
    assert len(after.minus(after).key) == 0
    lagging = Stacked(before.key, before.count + 1, 2, nb)  # a torn read
    assert int(before.minus(lagging).count.sum()) == 0  # never negative
    assert Stacked.of([], nb).latency_ms()[0].tolist() == []


def test_a_reading_crosses_the_network_as_its_non_empty_buckets():
    h = Histogram.from_values_ns([1000, 1000, 2_000_000, 3_000_000_000])
    sc = SparseCounts.of_dense(np.array(h.counts, dtype=np.uint64))
    assert len(sc.index) == 3 and int(sc.count.sum()) == 4
    assert sc.index.dtype == np.uint16
    dense = np.zeros(len(h.counts), dtype=np.uint64)
    dense[sc.index] = sc.count
    assert dense.tolist() == list(h.counts)


def test_cluster_options_are_checked_before_anything_starts():
    from benchtop.errors import UsageError
    from benchtop.options.run_options import options_from_argv

    opts = options_from_argv("run", ["--cluster", "auto", "--load-hosts", "4", "--engine", "null"])
    assert (opts.cluster, opts.load_hosts) == ("auto", 4)
    assert options_from_argv("run", ["--engine", "null"]).cluster is None
    with pytest.raises(UsageError, match="--load-hosts N needs --cluster"):
        options_from_argv("run", ["--load-hosts", "2", "--engine", "null"])
    with pytest.raises(UsageError, match="fileio"):
        options_from_argv("run", ["--cluster", "auto", "--engine", "fileio"])


def test_an_unreachable_cluster_is_one_line_at_once():
    import socket

    from benchtop.cluster.connect import reachable
    from benchtop.errors import UsageError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UsageError, match=f"--cluster ray://127.0.0.1:{port}: cannot reach the Ray cluster"):
        reachable(f"ray://127.0.0.1:{port}", timeout=2)
    reachable("auto")  # Ray's own to find


def test_a_lost_hosts_counts_stay_but_not_its_threads():
    a, b = _sample([1000] * 10, t=1.0, threads=3), _sample([2000] * 5, t=1.0, threads=4)
    merged = merge_samples([a, b], 1.0, a.latency + b.latency, a.service + b.service, live=[True, False])
    assert merged.transactions == 15 and merged.latency.total == 15
    assert merged.threads_running == 3 and merged.threads_target == 3


def test_thread_groups_are_refused_on_a_cluster_before_any_host_starts():
    from benchtop.cluster.controller import ClusterController
    from benchtop.errors import UsageError
    from benchtop.options.run_options import options_from_argv
    from benchtop.workload import load_program

    opts = options_from_argv("run", ["--cluster", "auto", "--engine", "null", "--workload", "insert_benchmark",
                                     "--preset", "i1.q10"])
    program = load_program(opts.workload, opts.engine, opts.workload_options)
    with pytest.raises(UsageError, match="thread groups .* do not run on --cluster"):
        ClusterController(opts, program, opts.conn_settings())


def test_a_load_host_that_cannot_start_says_why_in_one_line():
    from benchtop.cluster.connect import why_not_started

    died = RuntimeError("The actor died unexpectedly before finishing this task.\n"
                        "\tclass_name: LoadHost\n  File \"loadhost.py\", line 97, in __init__\n"
                        "    self.engine = Engine(conn, settings, program)\n"
                        "benchtop.errors.TargetError: cannot connect to 127.0.0.1:3306\n"
                        "ImportError: the engine is not built\n")
    assert why_not_started(died) == "ImportError: the engine is not built"
    assert why_not_started(ValueError("one\nline")) == "one"
