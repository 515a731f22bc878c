"""The local socket between a node's agent and its load hosts: typed
requests reach the host and answers come back by host, anything else is
refused, a call that raises leaves the host alive, a host whose process
is gone is Lost, a slow one is left waiting (a cluster run's agent asks it
again later, not twice)."""

from __future__ import annotations

import os
import stat
import threading
from typing import Any, cast

from benchtop.cluster.hostlink import Failed, HostLinks, HostServer, Lost
from benchtop.cluster.loadhost import NodeAgent
from benchtop.cluster.messages import Join, SetRate, SetThreads


class Target:
    def __init__(self) -> None:
        self.threads = 0
        self.release = threading.Event()

    def set_threads(self, n: int) -> int:
        self.threads = n
        return n

    def set_rate(self, rate: float) -> float:
        raise ValueError("rate must be positive\nsecond line")

    def join(self, timeout: float) -> bool:
        return self.release.wait(timeout)


def test_calls_reach_every_host_and_answers_come_back_by_host() -> None:
    targets = [Target(), Target()]
    servers = [HostServer(cast(Any, t)) for t in targets]
    try:
        assert stat.S_IMODE(os.stat(os.path.dirname(servers[0].path)).st_mode) == 0o700
        links = HostLinks({i: s.path for i, s in enumerate(servers)})
        calls = [links.ask(i, SetThreads(3 + i)) for i in range(2)]
        assert links.collect(calls, 5.0) == []
        assert [c.result for c in calls] == [3, 4] and [t.threads for t in targets] == [3, 4]
        failed = links.ask(0, SetRate(-1.0))
        links.collect([failed], 5.0)
        assert failed.result == Failed("ValueError: rate must be positive")
        refused = links.ask(0, cast(Any, "__init__"))  # a method name is not a request
        links.collect([refused], 5.0)
        assert refused.result == Failed("TypeError: not a load host request: '__init__'")
        again = links.ask(0, SetThreads(7))  # the host lives on, on a connection kept from before
        links.collect([again], 5.0)
        assert again.result == 7
        links.close()
    finally:
        for s in servers:
            s.close()


def test_a_slow_host_is_left_waiting_and_a_gone_one_is_lost() -> None:
    slow, gone = Target(), Target()
    servers = [HostServer(cast(Any, slow)), HostServer(cast(Any, gone))]
    links = HostLinks({0: servers[0].path, 1: servers[1].path})
    try:
        waiting = links.ask(0, Join(5.0))
        blocked = links.ask(0, SetThreads(2))  # a second call while the first waits: its own connection
        assert links.collect([waiting, blocked], 0.2) == [waiting]
        assert blocked.result == 2
        slow.release.set()
        assert links.collect([waiting], 5.0) == [] and waiting.result is True
        servers[1].close()
        lost = links.ask(1, SetThreads(1))
        assert isinstance(lost.result, Lost) and "gone" in lost.result.reason
        assert not os.path.exists(os.path.dirname(servers[1].path))
    finally:
        links.close()
        servers[0].close()


class Reader:
    def __init__(self, fails: bool) -> None:
        self.fails = fails

    def reading(self) -> str:
        if self.fails:
            raise RuntimeError("snapshot failed")
        return "a reading"


def test_a_reading_that_raises_in_one_host_leaves_the_other_hosts_readings() -> None:
    servers = [HostServer(cast(Any, Reader(fails=True))), HostServer(cast(Any, Reader(fails=False)))]
    agent = NodeAgent("node", {0: servers[0].path, 1: servers[1].path})
    try:
        assert agent.readings([0, 1], 5.0) == {1: "a reading"}
        assert agent.readings([0, 1], 5.0) == {1: "a reading"}  # asked again, not left pending
    finally:
        for s in servers:
            s.close()
