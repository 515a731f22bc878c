"""One load host of a cluster run: the native engine running in a Ray actor's
process on some node, with its share of the threads and the rate; and the
node's agent, which reads and steers that node's load hosts for the
controller.

The controller (benchtop.cluster.group) creates one `LoadHost` actor per load
host and one `NodeAgent` per node that has load hosts, and reads and steers
every host through the agents: one Ray call per node crosses the network,
and each agent calls its node's hosts over local sockets
(benchtop.cluster.hostlink), all at once.  A reading is cumulative (counters
since the engine started, histograms as their non-empty buckets), so a
reading that arrives late or not at all loses nothing: the controller takes
differences itself and needs no agreement between the hosts' clocks.

The password never travels as an argument: the actor receives a Ray object
reference nested in a list (Ray records the reference's id, not its value)
and fetches the value from the controller's process itself.  This module
imports Ray only inside the actor, and numpy only to pack histograms.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from benchtop.engine import ConnSettings, Engine, EngineSettings
from benchtop.engine.pickling import pickled_by_fields
from benchtop.engine.sample import EngineSample
from benchtop.cluster.hostlink import Call, Failed, HostLinks, HostServer, Lost
from benchtop.cluster.messages import Read, Request


@dataclass(frozen=True, slots=True)
class SparseCounts:
    """A histogram's non-empty buckets: what crosses the network (a few
    hundred buckets at most, where the layout has 4,736)."""

    index: np.ndarray  # uint16 bucket numbers
    count: np.ndarray  # uint64 counts

    @classmethod
    def of_dense(cls, dense: np.ndarray) -> SparseCounts:
        index = np.flatnonzero(dense)
        return cls(index.astype(np.uint16), dense[index].copy())

    def __reduce__(self) -> tuple[Any, ...]:
        # as plain bytes: Ray ships each numpy array as a buffer of its own,
        # which cost the controller ~4 ms a gather to unpack for 64 hosts
        return (_sparse_of_bytes, (self.index.tobytes(), self.count.tobytes()))


def _sparse_of_bytes(index: bytes, count: bytes) -> SparseCounts:
    return SparseCounts(np.frombuffer(index, dtype=np.uint16), np.frombuffer(count, dtype=np.uint64))


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class HostReading:
    """One cumulative reading of a load host (the histograms in `sample` are
    empty: they travel as `latency` and `service`)."""

    sample: EngineSample
    latency: SparseCounts
    service: SparseCounts
    cpu_busy: int  # the node's busy and total CPU time (/proc/stat jiffies, cumulative)
    cpu_total: int
    types: tuple[SparseCounts, ...] = ()  # per transaction type (workloads with several)


def node_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of every core of this node since boot; (0, 0)
    where /proc/stat is missing."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total


class LoadHost:
    """The actor: an Engine in this process.  `secret` is [] or [an object
    reference to the password]."""

    def __init__(self, name: str, conn: ConnSettings, settings: EngineSettings, program: Any,
                 secret: list[Any]) -> None:
        self.name = name
        if secret:
            import ray  # only ever imported inside a Ray worker or a driver

            conn = replace(conn, password=ray.get(secret[0]))
        self.engine = Engine(conn, settings, program)
        self._types = len(program.txn_types) if program is not None and len(program.txn_types) > 1 else 0
        self._closed = False
        self._link = HostServer(self)

    def __repr__(self) -> str:
        # what Ray's actor listings and log prefixes show
        return f"LoadHost({self.name})"

    def where(self) -> dict[str, Any]:
        return {"hostname": socket.gethostname(), "pid": os.getpid(), "cpus": os.cpu_count() or 1,
                "link": self._link.path}

    def start(self) -> None:
        self.engine.start()

    def stop(self) -> None:
        self.engine.stop()

    def join(self, timeout: float) -> bool:
        return self.engine.join(timeout)

    def abort_io(self) -> int:
        return self.engine.abort_io()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.engine.close()
            self._link.close()

    def set_threads(self, n: int) -> float:
        self.engine.set_threads(n)
        return time.time()

    def set_rate(self, rate: float) -> float:
        self.engine.set_rate(rate)
        return time.time()

    def set_paused(self, paused: bool) -> float:
        self.engine.set_paused(paused)
        return time.time()

    def reading(self) -> HostReading:
        s, lat, svc = self.engine.snapshot_packed()
        busy, total = node_cpu()
        types = tuple(_packed(self.engine.type_histogram_packed(i)) for i in range(self._types))
        return HostReading(s, _packed(lat), _packed(svc), busy, total, types)


def _packed(raw: bytes) -> SparseCounts:
    return SparseCounts.of_dense(np.frombuffer(raw, dtype=np.uint64))


def fetch(ray: Any, refs: list[Any]) -> list[Any]:
    """The values of finished calls, in one batch when none failed; a call
    whose actor died gives `Lost`."""
    try:
        return list(ray.get(refs))
    except ray.exceptions.RayActorError:
        pass
    out: list[Any] = []
    for ref in refs:  # one of them failed: find which, keep the others
        try:
            out.append(ray.get(ref))
        except ray.exceptions.RayActorError as exc:
            lines = str(exc).strip().splitlines()
            out.append(Lost(" ".join(lines[0].split()) if lines else type(exc).__name__))
    return out


class NodeAgent:
    """The actor on each node that calls the node's load hosts for the
    controller.  `links`: the load hosts' numbers and socket paths."""

    def __init__(self, node: str, links: dict[int, str]) -> None:
        self.node = node
        self._links = HostLinks(links)
        self._pending: dict[int, Call] = {}  # a reading asked for and not yet back, by host
        self._asked = 0  # calls of readings() so far: a waiting one ends when a newer one comes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NodeAgent({self.node})"

    def readings(self, hosts: list[int], timeout: float, delay: float = 0.0) -> dict[int, Any]:
        """A reading of each of `hosts` that answers within `timeout` (or
        `Lost`), taken `delay` seconds from now; a host that does not answer
        is asked again next time, not twice.  A newer call ends a waiting
        one at once (the controller no longer waits for it), so waiting
        calls never fill the actor's threads."""
        with self._lock:
            self._asked += 1
            mine = self._asked
        until = time.monotonic() + delay
        while delay > 0 and time.monotonic() < until:
            time.sleep(min(0.02, max(0.0, until - time.monotonic())))
            if self._asked != mine:
                return {}
        with self._lock:
            calls = [self._pending.pop(i) if i in self._pending else self._links.ask(i, Read()) for i in hosts]
            for c in self._links.collect(calls, timeout):
                self._pending[c.host] = c
            # a reading that raised in its host is missing this time, as a
            # late one is: the other hosts' readings still go back
            return _answers([c for c in calls if not isinstance(c.result, Failed)])

    def call(self, requests: dict[int, Request], timeout: float) -> dict[int, Any]:
        """A request to each of several hosts at once: the values of those
        that answered within `timeout` (or `Lost`)."""
        under_way = [self._links.ask(i, r) for i, r in requests.items()]
        self._links.drop(self._links.collect(under_way, timeout))
        return _answers(under_way)


def _answers(calls: list[Call]) -> dict[int, Any]:
    """The ended calls' values by host; a call that raised in its host
    raises here, as a Ray call to the host would have."""
    for c in calls:
        if c.done and isinstance(c.result, Failed):
            raise RuntimeError(f"load host {c.host}: {c.result.reason}")
    return {c.host: c.result for c in calls if c.done}
