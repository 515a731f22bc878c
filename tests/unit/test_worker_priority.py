"""--worker-priority: workers yield the CPU to a server on this host."""

from __future__ import annotations

import pytest

from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.run.controller import idle_workers
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
    assert idle_workers(options_from_argv("run", argv)) is idle


def test_unknown_priority_is_refused() -> None:
    with pytest.raises(UsageError, match="worker-priority"):
        options_from_argv("run", ["--worker-priority", "high"])
