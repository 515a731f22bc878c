"""A run on many load hosts (`--cluster ADDRESS --load-hosts N`): one Ray
actor per load host, each running the native engine in its own process on
its node (benchtop.run.loadhost), driven as one engine.

`HostGroup` is that one engine: knobs are totals split across the live
hosts (or set on one host), and each reading gathers every host's
cumulative counters and histograms in parallel, with a timeout, and adds
them up.  Histograms merge exactly (bucket counts add), so merged
percentiles are those of one histogram fed every transaction.  Differences
are taken here, on the controller, from cumulative readings: no clock
agreement between hosts is needed, and a reading that comes late is counted
in the next interval.

`ClusterController` is a RunController over a HostGroup (everything a run
has - warm-up, stop-if, instrumentation, results folder - works unchanged)
that adds per-host rows to each sample, per-host intervals and tagged
latency logs to the results folder, a `hosts` list to the summary, and
survives a lost host: its last reading stays in the totals, the loss goes
on the timeline, the others go on.

Ray and numpy are imported only here (and in the actors): the `cluster`
extra installs them.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import zip_longest
from operator import attrgetter
from typing import Any, Iterator, Sequence

import numpy as np

from benchtop.engine import ConnSettings, EngineSettings
from benchtop.engine.histogram import Histogram, _rank, bucket_bounds, nbuckets
from benchtop.engine.sample import ERROR_KINDS, EngineSample
from benchtop.errors import UsageError, one_line
from benchtop.run import hdrlog
from benchtop.run.attach import InstrumentationCycler
from benchtop.run.controller import RunController, engine_settings
from benchtop.run.guards import Guard
from benchtop.run.hostlink import Lost
from benchtop.run.loadhost import HostReading, LoadHost, NodeAgent, SparseCounts, fetch
from benchtop.run.options import RunOptions
from benchtop.run.protocol import Notice, Sample
from benchtop.run.results import ResultsWriter
from benchtop.run.samples import HostInterval, HostSummary, IntervalStats, RunSummary
from benchtop.workload import Program

GATHER_TIMEOUT_S = 2.0  # longest a reading waits for a host (at most half the report interval)
KNOB_TIMEOUT_S = 5.0  # a knob that no host acknowledges in this long is reported, not waited for
AGENT_MARGIN_S = 1.0  # how much longer the controller waits for an agent than the agent for its hosts
LOST_AFTER_S = 15.0  # a host silent this long is given up (a dead actor is given up at once)
# the next interval's readings are asked for at each gather and taken this long before the next tick
# (a round trip to a node and back, with room), so that gather finds them in
AHEAD_S = 0.3
EARLY_S = 0.05  # a gather this much earlier than an asked-ahead reading asks again, now
START_TIMEOUT_S = 120.0  # placing and starting every actor (a node may have to start a worker)
ROW_PERCENTILES = (50.0, 95.0, 99.0)


def ray_module() -> Any:
    """Ray, or a one-line error naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise UsageError("--cluster needs the cluster extra: pip install 'benchtop[cluster]'") from None
    return ray


def reachable(address: str, timeout: float = 5.0) -> None:
    """A one-line error now when HOST:PORT or ray://HOST:PORT does not
    answer (Ray itself retries for minutes); `auto` is Ray's to resolve."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UsageError(f"--cluster {address}: cannot reach the Ray cluster: "
                         f"{exc.strerror or type(exc).__name__}") from None


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
        txn_ns_by_type=by_type("txn_ns_by_type"), rows_loaded=total("rows_loaded"), error="",
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

    def latency_ms(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Each host's count, and its p50, p95, p99 and max in ms as
        Histogram.percentiles_ms and max_ns give them (0 for a host with none)."""
        zeros = np.zeros(self.hosts)
        if not len(self.key):
            return np.zeros(self.hosts, dtype=np.int64), {**{f"p{p:g}": zeros for p in ROW_PERCENTILES}, "max": zeros}
        mid, top = _bucket_ms()
        bucket = self.key % self.nb
        starts, ends = self._bounds()
        cum = np.cumsum(self.count)
        before = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0)
        n = np.where(ends > starts, cum[np.maximum(ends - 1, 0)] - before, 0)
        has = n > 0
        out = {}
        for p in ROW_PERCENTILES:
            # the first bucket of each host whose running count covers its rank
            ranks = np.array([_rank(p, int(t)) if t else 1 for t in n], dtype=np.int64)
            at = np.minimum(np.searchsorted(cum, before + ranks), len(cum) - 1)
            out[f"p{p:g}"] = np.where(has, mid[bucket[at]], 0.0)
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


@dataclass
class _Host:
    """The controller's view of one load host."""

    name: str
    node: str
    node_id: str
    actor: Any
    threads: int
    rate: float
    index: int  # its row in the group's count matrices
    agent: int = 0  # the agent of its node (HostGroup.agents)
    reading: HostReading | None = None
    heard_at: float = 0.0  # monotonic time of the last reply (or of its start)
    reported: bool = False  # answered the newest gather
    advance: float = 0.0  # how far its engine's clock moved between its two newest readings
    lost_at: float | None = None
    lost_reason: str = ""
    # per-host intervals: the previous reading, the base (warm-up end) one
    prev: HostReading | None = None
    base: EngineSample | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.lost_at is None


@dataclass
class _Agent:
    """The controller's view of one node's agent."""

    node: str
    actor: Any
    hosts: list[_Host]
    pending: Any = None  # a gather asked for and not yet back
    due: float = 0.0  # when that reading is taken (controller's monotonic clock)


@contextmanager
def stderr_into(path: str) -> Iterator[None]:
    """Ray's C++ core writes lines of its own to file descriptor 2 (the log
    level it read, internal errors when actors go), under benchtop's lines
    and the TUI: while Ray starts and stops they go to `path` (the results
    folder's ray.log) instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


class HostGroup:
    """The load hosts' engines as one engine (RunController's LoadEngine).

    `address` is given to ray.init unless Ray is already initialised (a
    test, a notebook); `hosts` actors are placed on distinct alive nodes
    (worker nodes before the head), round-robin when there are more hosts
    than nodes.  Every call goes through the node agents: one call per node
    per reading or knob, whatever the number of hosts on it."""

    def __init__(self, address: str, hosts: int, conn: ConnSettings, settings: EngineSettings,
                 program: Program, report_interval: float = 1.0, ray_log: str = os.devnull) -> None:
        ray = self._ray = ray_module()
        self._ray_log = ray_log
        self._owns_ray = False
        if not ray.is_initialized():
            reachable(address)
            # Ray's C++ core logs warnings to stderr: keep them to errors
            os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
            try:
                # log_to_driver=False: the actors' output stays in Ray's logs, off the TUI
                with stderr_into(ray_log):
                    ray.init(address=address, namespace="benchtop", log_to_driver=False,
                             logging_level=logging.ERROR)
            except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError, ...
                raise UsageError(f"--cluster {address}: cannot connect to the Ray cluster: {one_line(exc)}") from None
            self._owns_ray = True
        self._lock = threading.RLock()
        self.nb = nbuckets()
        self._t0: float | None = None
        self._last_merged: EngineSample | None = None
        self._stopped = False
        # each host's reading that the run's summary counts: the first after stop()
        self.final: dict[int, EngineSample | None] = {}
        self.events: list[str] = []  # host losses since the last drain (the controller puts them on its timeline)
        self.gather_s = 0.0  # how long the newest gather took
        self._asking: threading.Thread | None = None
        self._gather_timeout = min(GATHER_TIMEOUT_S, max(0.2, report_interval / 2))
        self._interval = report_interval
        self.hosts: list[_Host] = []
        self.agents: list[_Agent] = []
        try:
            self._place(hosts, conn, settings, program)
        except BaseException:
            self.close()
            raise

    def _place(self, hosts: int, conn: ConnSettings, settings: EngineSettings, program: Program) -> None:
        """Starts the actors, each with its share, and waits until every one is ready."""
        ray = self._ray
        nodes = self._nodes()
        if hosts <= 0:
            hosts = len(nodes)
        if 0 < settings.max_events < hosts:  # a host's share of 0 events would mean "no limit"
            raise UsageError(f"--events {settings.max_events} is fewer than the {hosts} load hosts sharing it")
        threads = split_total(settings.threads, hosts)
        events = split_total(settings.max_events, hosts) if settings.max_events else [0] * hosts
        rate = settings.rate / hosts
        # the password goes by reference, never as an argument Ray records
        secret = [ray.put(conn.password)] if conn.password is not None else []
        public = replace(conn, password=None)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        actor_class = ray.remote(LoadHost)
        agent_class = ray.remote(NodeAgent)
        try:
            for i in range(hosts):
                node = nodes[i % len(nodes)]
                name = f"h{i + 1}"
                rand = settings.rand if not settings.rand.seed else replace(settings.rand, seed=settings.rand.seed + i)
                mine = replace(settings, threads=threads[i], rate=rate, max_events=events[i], rand=rand)
                actor = actor_class.options(
                    num_cpus=0, max_concurrency=4, max_restarts=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                ).remote(name, public, mine, program, secret)
                self.hosts.append(_Host(name, node["NodeManagerAddress"], node["NodeID"], actor, threads[i], rate, i))
            where = ray.get([h.actor.where.remote() for h in self.hosts], timeout=START_TIMEOUT_S)
            by_node: dict[str, list[_Host]] = {}
            for h in self.hosts:
                by_node.setdefault(h.node_id, []).append(h)
            for node_id, mine_here in by_node.items():
                for h in mine_here:
                    h.agent = len(self.agents)
                actor = agent_class.options(
                    num_cpus=0, max_concurrency=4, max_restarts=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                ).remote(mine_here[0].node, {h.index: where[h.index]["link"] for h in mine_here})
                self.agents.append(_Agent(mine_here[0].node, actor, mine_here))
        except Exception as exc:  # Ray's errors are many: each becomes one line
            raise UsageError(f"--cluster: the load hosts did not start: {one_line(exc)}") from None
        now = time.monotonic()
        for h, w in zip(self.hosts, where):
            h.extra, h.heard_at = w, now
        # every host's cumulative counts added up, kept up to date as readings
        # come: a merge touches only the buckets the readings carry
        self._lat = np.zeros(self.nb, dtype=np.uint64)
        self._svc = np.zeros(self.nb, dtype=np.uint64)
        # every host's first reading (all zeros) before the run starts: the base of its counts
        self._gather(START_TIMEOUT_S)
        missing = [h.name for h in self.hosts if h.reading is None]
        if missing:
            raise UsageError(f"--cluster: load hosts {', '.join(missing)} did not answer")

    def _nodes(self) -> list[dict[str, Any]]:
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        if not nodes:
            raise UsageError("--cluster: the Ray cluster has no alive node")
        # worker nodes first: the head also runs Ray's own services
        nodes.sort(key=lambda n: (any(k.startswith("node:__internal_head__") for k in n.get("Resources", {})),
                                  n["NodeManagerAddress"], n["NodeID"]))
        return nodes

    # -- fan-out ---------------------------------------------------------------
    def _call(self, hosts: Sequence[_Host], method: str, args: Sequence[tuple[Any, ...]],
              timeout: float = KNOB_TIMEOUT_S, cancel: threading.Event | None = None) -> list[Any]:
        """One method on several hosts at once, through their nodes' agents;
        a host that died is marked lost, one that does not answer in
        `timeout` (or before `cancel` is set) is left to the gathers (its
        value is None)."""
        ray = self._ray
        calls: dict[int, dict[int, tuple[Any, ...]]] = {}
        for h, a in zip(hosts, args):
            calls.setdefault(h.agent, {})[h.index] = a
        owner = {self.agents[k].actor.call.remote(method, c, timeout): k for k, c in calls.items()}
        deadline = time.monotonic() + timeout + AGENT_MARGIN_S
        while True:  # in slices, so that `cancel` is seen
            left = deadline - time.monotonic()
            ready, rest = ray.wait(list(owner), num_returns=len(owner), timeout=max(0.0, min(0.1, left)))
            if not rest or left <= 0 or (cancel is not None and cancel.is_set()):
                break
        values: dict[int, Any] = {}
        for ref, got in zip(ready, fetch(ray, ready)):
            if isinstance(got, Lost):
                self._lose_agent(self.agents[owner[ref]], got.reason)
                continue
            for i, v in got.items():
                if isinstance(v, Lost):
                    self._lose(self.hosts[i], v.reason)
                else:
                    values[i] = v
        return [values.get(h.index) for h in hosts]

    def _lose_agent(self, agent: _Agent, why: str) -> None:
        agent.pending = None
        for h in agent.hosts:
            self._lose(h, f"its node's agent is gone: {why}")

    def _lose(self, h: _Host, why: str) -> None:
        if h.lost_at is not None:
            return
        h.lost_at = self._elapsed()
        h.lost_reason = why
        self.events.append(f"load host {h.name} ({h.node}) lost: {why}")
        try:
            self._ray.kill(h.actor, no_restart=True)  # a silent host must not keep loading the server
        except Exception:  # already gone: nothing to stop
            pass

    def live(self) -> list[_Host]:
        return [h for h in self.hosts if h.live]

    def _elapsed(self) -> float:
        return time.monotonic() - self._t0 if self._t0 is not None else 0.0

    # -- LoadEngine ------------------------------------------------------------
    def start(self) -> None:
        hosts = self.live()
        self._t0 = time.monotonic()
        self._call(hosts, "start", [()] * len(hosts), START_TIMEOUT_S)

    def stop(self) -> None:
        hosts = self.live()
        self._call(hosts, "stop", [()] * len(hosts))
        self._stopped = True
        self._asked()
        for agent in self.agents:
            agent.pending = None  # readings asked for before the stop: the summary counts later ones

    def abort_io(self) -> int:
        hosts = self.live()
        return sum(n or 0 for n in self._call(hosts, "abort_io", [()] * len(hosts)))

    def join(self, timeout: float | None = None, cancel: threading.Event | None = None) -> bool:
        hosts = self.live()
        wait = 60.0 if timeout is None else timeout
        # the hosts' own joins end at `wait`: the stop path's few seconds hold with many hosts too
        done = self._call(hosts, "join", [(wait,)] * len(hosts), wait + 0.5, cancel)
        return all(d is True for d in done)

    def close(self) -> None:
        ray = self._ray
        hosts = [h for h in self.hosts if h.live]
        with stderr_into(self._ray_log):
            try:
                if hosts and self.agents:
                    self._call(hosts, "close", [()] * len(hosts))
            finally:
                for actor in [h.actor for h in hosts] + [a.actor for a in self.agents]:
                    try:
                        ray.kill(actor, no_restart=True)
                    except Exception:  # already gone
                        pass
            if self._owns_ray:
                self._owns_ray = False
                ray.shutdown()

    def set_threads(self, n: int) -> None:
        hosts = self.live()
        self.set_host_threads(hosts, split_total(n, len(hosts)))

    def set_host_threads(self, hosts: Sequence[_Host], counts: Sequence[int]) -> None:
        self._call(hosts, "set_threads", [(c,) for c in counts])
        for h, c in zip(hosts, counts):
            h.threads = c

    def set_rate(self, rate: float) -> None:
        hosts = self.live()
        self.set_host_rate(hosts, [rate / len(hosts) if hosts else 0.0] * len(hosts))

    def set_host_rate(self, hosts: Sequence[_Host], rates: Sequence[float]) -> None:
        self._call(hosts, "set_rate", [(r,) for r in rates])
        for h, r in zip(hosts, rates):
            h.rate = r

    def set_paused(self, paused: bool) -> None:
        hosts = self.live()
        self._call(hosts, "set_paused", [(paused,)] * len(hosts))

    def set_group_threads(self, index: int, n: int) -> None:
        raise UsageError("thread groups do not run on --cluster")  # refused before any host starts

    def set_group_rate(self, index: int, rate: float) -> None:
        raise UsageError("thread groups do not run on --cluster")

    def type_histogram(self, index: int) -> Histogram:
        """One transaction type's cumulative histogram over every host, from
        the readings of the newest gather (they carry the types)."""
        total = np.zeros(self.nb, dtype=np.uint64)
        for h in self.hosts:
            if h.reading is not None and index < len(h.reading.types):
                sc = h.reading.types[index]
                total[sc.index] += sc.count
        return Histogram(tuple(total.tolist()))

    def snapshot(self) -> EngineSample:
        """Every live host's reading, gathered in parallel (at most
        GATHER_TIMEOUT_S), merged; a host that does not answer keeps its
        previous reading in the totals and is asked again next time."""
        with self._lock:
            t_start = time.monotonic()
            self._gather(self._gather_timeout)
            merged = self._merge()
            if self._stopped and not self.final:
                self.final = {h.index: self.full_sample(h) for h in self.hosts}
            self.gather_s = time.monotonic() - t_start
            return merged

    def _gather(self, timeout: float) -> None:
        """One reading from every live host that answers within `timeout`:
        those asked for at the previous gather when it is on time, else
        fresh ones; then the next interval's are asked for."""
        ray = self._ray
        self._asked()
        start = time.monotonic()
        for agent in self.agents:
            live = [h.index for h in agent.hosts if h.live]
            for h in agent.hosts:
                h.reported = False
            if agent.pending is not None and agent.due > start + EARLY_S:
                agent.pending = None  # a reading off the interval's beat (a test, a stop): not one from later
            if live and agent.pending is None:
                # the agent answers a little before the controller stops waiting
                agent.pending = agent.actor.readings.remote(live, timeout * 0.75)
                agent.due = start
        owner = {a.pending: a for a in self.agents if a.pending is not None}
        ready, _ = ray.wait(list(owner), num_returns=len(owner), timeout=timeout)
        now = time.monotonic()
        taken: list[tuple[HostReading | None, HostReading]] = []
        for ref, got in zip(ready, fetch(ray, ready)):
            agent = owner[ref]
            agent.pending = None
            if isinstance(got, Lost):
                self._lose_agent(agent, got.reason)
                continue
            for i, r in got.items():
                h = self.hosts[i]
                if isinstance(r, Lost):
                    self._lose(h, r.reason)
                elif h.live:
                    taken.append((h.reading, r))
                    self._take(h, r, now)
        self._add(taken)
        for h in self.live():
            if not h.reported and now - h.heard_at > LOST_AFTER_S:
                self._lose(h, f"no reading for {now - h.heard_at:.0f} s")
        if not self._stopped and self._t0 is not None:
            # off the interval's beat: each call Ray submits costs the controller ~0.5 ms
            self._asking = threading.Thread(target=self._ask_ahead, args=(timeout,), name="ask-ahead", daemon=True)
            self._asking.start()

    def _asked(self) -> None:
        """Waits for the asking of the next readings (a few ms) to be over."""
        if self._asking is not None:
            self._asking.join()
            self._asking = None

    def _ask_ahead(self, timeout: float) -> None:
        """The next interval's readings, asked for now and taken by each node's
        agent AHEAD_S before the next tick: a gather on the beat waits for
        none of the round trips (on a 2-core machine running 64 hosts' 68
        processes those took 170 ms).  Each agent waits by its own clock, so
        no clock agreement is needed; intervals are still measured by the
        hosts' own clocks."""
        delay = self._interval - AHEAD_S
        if delay <= 0:
            return
        now = time.monotonic()
        for agent in self.agents:
            live = [h.index for h in agent.hosts if h.live]
            if live and agent.pending is None:
                agent.pending = agent.actor.readings.remote(live, timeout * 0.75, delay)
                agent.due = now + delay

    def _take(self, h: _Host, r: HostReading, now: float) -> None:
        h.advance = r.sample.t - (h.reading.sample.t if h.reading is not None else 0.0)
        h.reading, h.heard_at, h.reported = r, now, True

    def _add(self, taken: list[tuple[HostReading | None, HostReading]]) -> None:
        """The totals with each (old, new) pair of readings: old out, new in,
        all hosts in one pass."""
        if not taken:
            return
        olds = [old for old, _ in taken if old is not None]
        for total, part in ((self._lat, attrgetter("latency")), (self._svc, attrgetter("service"))):
            if olds:
                np.subtract.at(total, np.concatenate([part(o).index for o in olds]),
                               np.concatenate([part(o).count for o in olds]))
            np.add.at(total, np.concatenate([part(r).index for _, r in taken]),
                      np.concatenate([part(r).count for _, r in taken]))

    def _merge(self) -> EngineSample:
        # lost hosts too: their last reading stays in the totals
        have = [h for h in self.hosts if h.reading is not None]
        merged = merge_samples([h.reading.sample for h in have if h.reading is not None], self._clock(),
                               Histogram(tuple(self._lat.tolist())), Histogram(tuple(self._svc.tolist())),
                               [h.live for h in have])
        state, error = self._state()
        merged = replace(merged, state=state, error=error)
        self._last_merged = merged
        return merged

    def _clock(self) -> float:
        """The merged reading's time: the previous one's plus how far the
        reporting hosts' own clocks moved (their mean), so an interval's
        length is the one its counts were measured over, whatever the
        network's delay; the controller's clock only when no host moved."""
        prev = self._last_merged.t if self._last_merged is not None else 0.0
        moved = [h.advance for h in self.hosts if h.live and h.reported and h.advance > 0]
        if moved:
            return prev + sum(moved) / len(moved)
        return max(prev, self._elapsed()) if self._t0 is not None else prev

    def _state(self) -> tuple[str, str]:
        live = [h for h in self.hosts if h.live and h.reading is not None]
        if not self.live():
            return "failed", "every load host was lost"
        for h in live:
            if h.reading is not None and h.reading.sample.state == "failed":
                return "failed", f"load host {h.name} ({h.node}): {h.reading.sample.error}"
        states = {h.reading.sample.state for h in live if h.reading is not None}
        if not states or states & {"idle", "running"}:
            return ("running" if "running" in states else "idle"), ""
        return ("stopping" if "stopping" in states else "stopped"), ""

    # -- per host --------------------------------------------------------------
    def full_sample(self, h: _Host) -> EngineSample | None:
        """`h`'s newest reading with its histograms."""
        if h.reading is None:
            return None
        r = h.reading
        return replace(r.sample, latency=dense(r.latency.index, r.latency.count, self.nb),
                       service=dense(r.service.index, r.service.count, self.nb))

    def host_intervals(self) -> tuple[list[HostInterval], Stacked]:
        """Every host since the previous call (hosts read for the first time
        are left out), and the latency histograms of those intervals, the
        k-th row's at position k."""
        pairs = []
        for h in self.hosts:
            prev, cur = h.prev, h.reading
            h.prev = cur
            if prev is not None and cur is not None:
                pairs.append((h, prev, cur))
        # a host with no new reading has nothing this interval
        delta = Stacked.of([c.latency for _, _, c in pairs], self.nb).minus(
            Stacked.of([(p if c.sample.t > p.sample.t else c).latency for _, p, c in pairs], self.nb))
        counts, pcts = delta.latency_ms()
        rows = []
        for k, (h, prev, cur) in enumerate(pairs):
            now, before = cur.sample, prev.sample
            dt = now.t - before.t if now.t > before.t else 1.0
            count = int(counts[k])
            errors = sum(max(0, now.errors.get(e, 0) - before.errors.get(e, 0)) for e in ERROR_KINDS if e != "fatal")
            cpu_total = cur.cpu_total - prev.cpu_total
            rows.append(HostInterval(
                host=h.name, node=h.node, state="lost" if not h.live else ("ok" if h.reported else "late"),
                threads=now.threads_running if h.live else 0, transactions=count, tps=count / dt,
                errors_per_s=errors / dt, latency_ms={name: float(v[k]) for name, v in pcts.items()},
                connections=now.threads_running if h.live else 0,
                cpu_pct=100.0 * (cur.cpu_busy - prev.cpu_busy) / cpu_total if cpu_total > 0 else 0.0,
            ))
        return rows, delta


class ClusterController(RunController):
    """A run on a HostGroup: the controller protocol, plus per-host rows,
    results and summary."""

    def __init__(self, options: RunOptions, program: Program, conn: ConnSettings,
                 writer: ResultsWriter | None = None, instrumentation: InstrumentationCycler | None = None,
                 guard: Guard | None = None) -> None:
        assert options.cluster is not None
        settings = engine_settings(options, program)
        if settings.groups:
            raise UsageError(f"thread groups ({', '.join(g.name for g in settings.groups)}) do not run on --cluster "
                             "yet: run the workload without --preset/--group, or on one machine")
        group = HostGroup(options.cluster, options.load_hosts, conn, settings, program,
                          options.report_interval or 1.0,
                          ray_log=os.path.join(options.out, "ray.log") if options.out else os.devnull)
        self.group = group
        super().__init__(options, program, conn, writer, instrumentation, guard, engine=group)
        n = len(group.hosts)
        self.label = f"{self.target} {self.workload} on {n} load host{'s' if n != 1 else ''}"
        self._rows: tuple[HostInterval, ...] = ()
        self._pending_notices: list[Notice] = []
        self._host_hlog_started = False
        for h in group.hosts:
            self.note("host", f"load host {h.name} on {h.node} ({h.extra.get('hostname', '?')}): "
                              f"{h.threads} thread(s)" + (f", rate {h.rate:g}/s" if h.rate > 0 else ""))

    # -- readings --------------------------------------------------------------
    def start(self) -> None:
        super().start()
        if self._base is not None:
            self._set_host_bases()
        self.group.host_intervals()  # the first reading is every host's starting point

    def _set_host_bases(self) -> None:
        for h in self.group.hosts:
            h.base = self.group.full_sample(h)

    def sample(self) -> Sample:
        s = super().sample()
        return replace(s, hosts=self._rows)

    def _interval_fields(self, iv: IntervalStats, counted: bool) -> dict[str, Any]:
        group = self.group
        if self._base is not None and self._base is self._last and not any(h.base for h in group.hosts):
            self._set_host_bases()  # the warm-up just ended
        if group.events:  # a host was lost: the knobs' totals are the live hosts'
            self._threads = sum(h.threads for h in group.live())
            self._rate = sum(h.rate for h in group.live())
        for text in group.events:
            self._event("host", text)
            self._pending_notices.append(Notice(f"benchtop: {text}",
                                                {"type": "event", "kind": "host", "text": text}))
        group.events.clear()
        rows, delta = group.host_intervals()
        hlog: list[str] = []
        if counted and self.writer is not None:
            start = max(0.0, iv.t - iv.dt - self.t_offset)
            for k, row in enumerate(rows):
                self.writer.append("hosts.jsonl", {"type": "host_interval", "t": round(iv.t - self.t_offset, 3),
                                                   **row.to_dict()})
                if row.transactions:
                    hlog.append(f"Tag={row.host},{hdrlog.interval_line(start, iv.dt, delta.histogram(k))}")
        if hlog and self.writer is not None:
            if not self._host_hlog_started:
                self._host_hlog_started = True
                hlog = hdrlog.header_lines(self.started_at or time.time()) + hlog
            self.writer.append_lines("latency-hosts.hlog", hlog)
        self._rows = tuple(rows)
        if counted and self.report_interval > 0 and not self.options.json:
            for row in rows:
                self._pending_notices.append(Notice(host_line(row), row.to_dict()))
        reporting = sum(1 for h in group.hosts if h.live and h.reported)
        return {"hosts_reporting": reporting,
                "hosts": [{"host": r.host, "state": r.state, "threads": r.threads, "tps": round(r.tps, 2),
                           "p99_ms": round(r.latency_ms["p99"], 3), "errors_per_s": round(r.errors_per_s, 2),
                           "cpu_pct": round(r.cpu_pct, 1)} for r in rows]}

    def notices(self) -> list[Notice]:
        out, self._pending_notices = self._pending_notices, []
        return out

    # -- per-host knobs --------------------------------------------------------
    def set_host_threads(self, host: str, n: int) -> None:
        h = self._host(host)
        self.group.set_host_threads([h], [max(0, int(n))])
        self._threads = sum(x.threads for x in self.group.live())
        self._event("threads", f"threads {n} on {h.name} ({self._threads} in all)")

    def set_host_rate(self, host: str, rate: float) -> None:
        h = self._host(host)
        self.group.set_host_rate([h], [max(0.0, float(rate))])
        self._rate = sum(x.rate for x in self.group.live())
        self._event("rate", f"rate {rate:g}/s on {h.name} ({self._rate:g}/s in all)")

    def _host(self, name: str) -> _Host:
        for h in self.group.live():
            if h.name == name:
                return h
        raise UsageError(f"no live load host {name!r}: {', '.join(h.name for h in self.group.live())}")

    # -- the end ---------------------------------------------------------------
    def stop(self, reason: str = "") -> RunSummary:
        first = self._summary is None
        summary = super().stop(reason)
        if first and self._summary is not None:
            hosts = tuple(self._host_summary(h) for h in self.group.hosts)
            self._summary = summary = replace(summary, hosts=hosts)
            if self.writer:
                self.save_summary(summary)
        return summary

    def _host_summary(self, h: _Host) -> HostSummary:
        # the reading the merged summary counts (RunController reads it before the workers are joined)
        last = self.group.final.get(h.index) or self.group.full_sample(h)
        if last is None:
            return HostSummary(h.name, h.node, h.threads, 0, 0.0, {}, 0, h.lost_at, h.lost_reason)
        s = RunSummary.between(h.base or last, last, self._percentiles)
        lat = {k: v for k, v in s.latency_ms.items() if k in ("p50", "p95", "p99", "max", "avg")}
        return HostSummary(h.name, h.node, h.threads, s.transactions, s.tps, lat, s.error_count,
                           h.lost_at, h.lost_reason)


def host_line(row: HostInterval) -> str:
    """A per-host line under a sysbench-style interval line."""
    state = "" if row.state == "ok" else f" [{row.state}]"
    return (f"    {row.host} {row.node}: thds: {row.threads} tps: {row.tps:4.2f} "
            f"lat (ms,99%): {row.latency_ms['p99']:4.2f} err/s: {row.errors_per_s:4.2f} "
            f"cpu: {row.cpu_pct:.0f}%{state}")

