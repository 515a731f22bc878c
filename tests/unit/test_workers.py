"""`Workers`: connections and the threads that carry them, with one word, one
limit and one check."""

from __future__ import annotations

import pytest

from benchtop.engine import MAX_CONNECTIONS, MAX_THREADS
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.record.workers import Workers


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
                                     "--threads", "2"], interactive=False)
    assert opts.workers == Workers(20, 2)
    # SQLite keeps a thread per connection
    opts = options_from_argv("run", ["--connections", "20", "--threads", "2"], interactive=False)
    assert opts.workers == Workers(20)
    with pytest.raises(UsageError, match=f"^--connections with --engine sqlite: threads must be between 1 and "
                                         f"{MAX_THREADS}, not 5000$"):
        options_from_argv("run", ["--connections", "5000"], interactive=False)
    with pytest.raises(UsageError, match=f"^--connections with --engine postgresql: connections must be between 1 "
                                         f"and {MAX_CONNECTIONS}, not 70000$"):
        options_from_argv("run", ["--engine", "postgres", "--dsn", "postgresql://u@h/db", "--connections", "70000"],
                          interactive=False)
