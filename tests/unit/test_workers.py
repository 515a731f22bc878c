"""`Workers`: connections and the threads that carry them, with one word, one
limit and one check; the two keys every results file writes with it; and the
readers of folders written before, when an interval's (and a step's)
`threads` counted the connections under --connections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchtop.commands.replay import interval_text
from benchtop.engine import MAX_CONNECTIONS, MAX_THREADS
from benchtop.engine.histogram import Histogram, bucket_index, nbuckets
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.record.analysis import analyse, analysis_text
from benchtop.record.formats import summary_text
from benchtop.record.samples import ERROR_KINDS, EngineSample, IntervalStats, RunSummary
from benchtop.record.workers import Workers, workers_of
from benchtop.report.data import load_run, table_rows
from benchtop.report.plots import build_plots
from benchtop.scenario.driver import iter_step_lines


def test_a_thread_per_connection_counts_threads_up_to_the_thread_cap() -> None:
    w = Workers(8)
    assert (w.connections, w.threads, w.event_loops) == (8, 8, False)
    assert (w.word, w.limit) == ("threads", MAX_THREADS)
    assert w.header() == "threads: 8" and w.header(connected=5) == "threads: 5/8 connected"
    assert w.setting == "threads 8"
    assert w.to_dict() == {"connections": 8, "threads": 8}
    assert w.problem() is None
    assert Workers(MAX_THREADS + 1).problem() == f"threads must be between 1 and {MAX_THREADS}, not {MAX_THREADS + 1}"
    assert Workers(0).problem() == f"threads must be between 1 and {MAX_THREADS}, not 0"
    assert Workers(0).problem(least=0) is None


def test_event_loops_count_connections_up_to_the_connection_cap() -> None:
    w = Workers(20, loop_threads=2)
    assert (w.connections, w.threads, w.event_loops) == (20, 2, True)
    assert (w.word, w.limit) == ("connections", MAX_CONNECTIONS)
    assert w.header() == "connections: 20 on 2 threads"
    assert w.header(connected=9) == "connections: 9/20 connected on 2 threads"
    assert w.setting == "connections 20 on 2 threads"
    assert w.to_dict() == {"connections": 20, "threads": 2}
    assert w.with_connections(6000) == Workers(6000, 2) and Workers(6000, 2).problem() is None
    assert Workers(MAX_CONNECTIONS + 1, 2).problem() == (f"connections must be between 1 and {MAX_CONNECTIONS}, "
                                                         f"not {MAX_CONNECTIONS + 1}")


def test_options_decide_the_workers_once() -> None:
    opts = options_from_argv("run", ["--engine", "postgres", "--dsn", "postgresql://u@h/db", "--connections", "20",
                                     "--threads", "2"], terminal=False)
    assert opts.workers == Workers(20, 2)
    # SQLite keeps a thread per connection
    opts = options_from_argv("run", ["--connections", "20", "--threads", "2"], terminal=False)
    assert opts.workers == Workers(20)
    with pytest.raises(UsageError, match=f"^--connections with --engine sqlite: threads must be between 1 and "
                                         f"{MAX_THREADS}, not 5000$"):
        options_from_argv("run", ["--connections", "5000"], terminal=False)
    with pytest.raises(UsageError, match=f"^--connections with --engine postgresql: connections must be between 1 "
                                         f"and {MAX_CONNECTIONS}, not 70000$"):
        options_from_argv("run", ["--engine", "postgres", "--dsn", "postgresql://u@h/db", "--connections", "70000"],
                          terminal=False)


def _sample(t: float, n: int, connections: int, loop_threads: int) -> EngineSample:
    counts = [0] * nbuckets()
    counts[bucket_index(1_000_000)] = n
    h = Histogram(tuple(counts))
    return EngineSample(
        t=t, state="running", threads_target=connections, threads_running=connections, in_flight=0, unfinished=0,
        paused=False, rate=0.0, transactions=n, rollbacks=0, reads=n, writes=0, other=0,
        errors={k: 0 for k in ERROR_KINDS}, retries=0, reconnects=0, connects=connections, connect_ns_sum=0,
        connect_ns_max=0, latency_ns_sum=n * 1_000_000, latency_ns_min=1_000_000, latency_ns_max=1_000_000,
        service_ns_sum=n * 1_000_000, service_ns_max=1_000_000, busy_ns=0, queue_ns=0.0, tickets_due=0,
        txn_by_type=(n,), txn_ns_by_type=(0,), rows_loaded=0, error="", latency=h, service=h,
        loop_threads=loop_threads, connections_served=connections,
    )


@pytest.mark.parametrize(("loop_threads", "threads"), [(2, 2), (0, 20)])
def test_intervals_and_summaries_write_connections_and_the_threads_that_carry_them(loop_threads: int,
                                                                                   threads: int) -> None:
    first, last = _sample(0.0, 0, 20, loop_threads), _sample(1.0, 500, 20, loop_threads)
    iv = IntervalStats.between(first, last)
    s = RunSummary.between(first, last)
    assert iv.workers == s.workers == Workers(20, loop_threads)
    for d in (iv.to_dict(), s.to_dict()):
        assert (d["connections"], d["threads"]) == (20, threads), d
        assert "loop_threads" not in d
    text = summary_text(s, 95.0, False)
    assert ("event loops: 20 connections on 2 threads, 20 served" in text) == bool(loop_threads)


def _folder(root: Path, name: str, summary: dict, intervals: list[dict]) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "intervals.jsonl").write_text("".join(json.dumps(iv) + "\n" for iv in intervals))
    return folder


def _sweep(root: Path, name: str, old: bool) -> Path:
    """A scenario of two steps (10, then 40 connections on 2 loop threads), as
    benchtop wrote it before (`threads` counted connections in steps and
    intervals, steps said `loop_threads`) or now."""
    def step(i: int, n: int) -> dict:
        keys = {"threads": n, "connections": n, "loop_threads": 2} if old else {"connections": n, "threads": 2}
        return {"index": i, "label": f"step {i + 1}", **keys, "rate": 0.0, "tps": 100.0 * n, "qps": 100.0 * n,
                "errors": 0, "latency_ms": {"p95": 1.0, "p99": 2.0}}

    def interval(t: int, i: int, n: int) -> dict:
        keys = {"threads": n} if old else {"connections": n, "threads": 2}
        return {"type": "interval", "t": float(t), "dt": 1.0, "tps": 100.0 * n + t, "step": i, **keys}

    intervals = [interval(t, 0, 10) for t in range(1, 5)] + [interval(t, 1, 40) for t in range(5, 9)]
    summary = {"type": "summary", "tps": 2500.0, "threads": 2, "connections": 40, "steps": [step(0, 10), step(1, 40)]}
    return _folder(root, name, summary, intervals)


def test_report_reads_a_connections_sweep_written_before_as_one_written_now(tmp_path: Path) -> None:
    for old in (True, False):
        run = load_run(_sweep(tmp_path, f"old-{old}", old))
        assert run.is_sweep
        assert [r.threads for r in table_rows([run])] == [10, 40]
        sweep = {p.name: p for p in build_plots([run])}["sweep_tps"].series[0]
        assert sweep.x == (10.0, 40.0)
        segments = run.summary["segments"]  # steady state computed from the interval lines
        assert [seg["connections"] for seg in segments] == [10, 40]
        assert [line.split()[1] for line in list(iter_step_lines(run.steps))[1:]] == ["10", "40"]
        assert interval_text(run.intervals[-1]).split("thds: ")[1].startswith("40 ")


def test_stretches_say_connections_on_threads() -> None:
    def ivs(ts: range, **keys: int) -> list[dict]:
        return [{"t": float(t), "dt": 1.0, "tps": 500.0 + t % 2, **keys} for t in ts]

    knob = [{"t": 4.5, "kind": "threads"}]
    now = analyse(ivs(range(1, 5), connections=20, threads=2) + ivs(range(6, 10), connections=40, threads=2),
                  events=knob)
    assert [(seg["connections"], seg["threads"]) for seg in now["segments"]] == [(20, 2), (40, 2)]
    text = analysis_text(now)
    assert "(connections 20 on 2 threads)" in text and "(connections 40 on 2 threads)" in text, text
    # a run written before: an interval's `threads` was its count of workers
    before = analyse(ivs(range(1, 5), threads=8) + ivs(range(6, 10), threads=16), events=knob)
    assert [(seg["connections"], seg["threads"]) for seg in before["segments"]] == [(8, 8), (16, 16)]
    assert "(threads 8)" in analysis_text(before)


def test_workers_of_reads_every_version() -> None:
    assert workers_of({"connections": 20, "threads": 2}) == Workers(20, 2)
    assert workers_of({"connections": 8, "threads": 8}) == Workers(8)
    assert workers_of({"threads": 20}) == Workers(20)  # an interval line written before
    assert workers_of({"threads": 20, "connections": 20, "loop_threads": 2}) == Workers(20, 2)  # a step before
    assert workers_of(Workers(3).to_dict()) == Workers(3)
