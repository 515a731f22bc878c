"""--worker-priority: workers yield the CPU to a server on this host."""

from __future__ import annotations

import pytest

from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.run.controller import idle_workers, worker_priority
from benchtop.target import Target
from benchtop.target.locality import server_on_this_host


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]", "0.0.0.0"])
def test_loopback_is_this_host(host: str) -> None:
    assert server_on_this_host(Target(kind="mysql", host=host))


@pytest.mark.parametrize("host", ["203.0.113.7", "db.example.com", "2001:db8::1"])
def test_other_addresses_and_names_are_remote(host: str) -> None:
    assert not server_on_this_host(Target(kind="postgresql", host=host))


def test_a_socket_is_this_host() -> None:
    assert server_on_this_host(Target(kind="mysql", host="db.example.com", socket="/run/mysqld/mysqld.sock"))


@pytest.mark.parametrize(("argv", "idle"), [
    (["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:3306/d"], True),
    (["--engine", "postgres", "--dsn", "postgresql://u@localhost/d"], True),
    (["--engine", "mysql", "--dsn", "mysql://u@203.0.113.7:3306/d"], False),
    (["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:3306/d", "--worker-priority", "normal"], False),
    (["--engine", "mysql", "--dsn", "mysql://u@203.0.113.7:3306/d", "--worker-priority", "idle"], True),
    (["--engine", "sqlite"], False),
    (["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:3306/d", "--cluster", "auto"], False),
])
def test_auto_is_idle_only_for_a_server_on_this_host(argv: list[str], idle: bool) -> None:
    assert idle_workers(options_from_argv("run", argv), others_busy=lambda: 0.0) is idle


def test_auto_is_normal_beside_busy_processes_and_says_why() -> None:
    """Idle workers beside a CPU hog wait behind it: their latencies would be the neighbour's."""
    opts = options_from_argv("run", ["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:3306/d"])
    idle, why = worker_priority(opts, others_busy=lambda: 1.02)
    assert not idle and why.startswith("workers at normal priority: other processes kept 1.02 cores busy")
    assert worker_priority(opts, others_busy=lambda: 0.1) == (True, "")
    assert worker_priority(opts, others_busy=lambda: None) == (True, "")  # /proc unreadable: as before
    # asked for, the priority is the one asked for
    idle_asked = options_from_argv("run", ["--engine", "mysql", "--dsn", "mysql://u@127.0.0.1:3306/d",
                                           "--worker-priority", "idle"])
    assert worker_priority(idle_asked, others_busy=lambda: 1.5) == (True, "")


def test_other_processes_busy_cores_leave_out_this_ones_own(tmp_path) -> None:
    """Over a window where the host's counters grow by half a second of CPU
    and this process spins for 0.2 s of it, the others kept 0.3 s busy: 1.5
    cores over 0.2 s."""
    import time

    from benchtop.sources.os import others_busy_cores
    from benchtop.sources.process import clock_ticks

    hz = clock_ticks()
    (tmp_path / "stat").write_text("cpu  100 0 100 1000 0 0 0 0 0 0\nctxt 1\n")

    def spin(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        (tmp_path / "stat").write_text(f"cpu  {100 + hz // 4} 0 {100 + hz // 4} 1000 0 0 0 0 0 0\nctxt 2\n")

    busy = others_busy_cores(0.2, proc=tmp_path, sleep=spin)
    # 2.5 cores if this process's own spinning were counted too
    assert busy is not None and 1.0 < busy < 2.2, busy
    assert others_busy_cores(0.0, proc=tmp_path / "none") is None
