"""The load hosts' engines as one engine: one Ray actor per load host, each
running the native engine in its own process on its node
(benchtop.cluster.loadhost), and one agent per node that reads and steers
them (one Ray call per node, whatever the number of hosts on it).

Knobs are totals split across the live hosts (or set on one host), and
each reading gathers every host's cumulative counters and histograms in
parallel, with a timeout, and adds them up.  Differences are taken here,
on the controller, from cumulative readings: no clock agreement between
hosts is needed, and a reading that comes late is counted in the next
interval.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from benchtop.cluster.connect import join_ray, ray_module, why_not_started
from benchtop.cluster.hostlink import Lost
from benchtop.cluster.loadhost import HostReading, LoadHost, NodeAgent, fetch
from benchtop.cluster.merge import ROW_PERCENTILES, Stacked, dense, merge_samples, split_total
from benchtop.cluster.messages import AbortIO, Close, Join, Request, SetPaused, SetRate, SetThreads, Start, Stop
from benchtop.engine import ConnSettings, EngineSettings
from benchtop.engine.histogram import Histogram, nbuckets
from benchtop.engine.sample import ENDED, ERROR_KINDS, EngineSample
from benchtop.errors import UsageError
from benchtop.record.samples import HostInterval
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


@dataclass
class HostState:
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
    hosts: list[HostState]
    pending: Any = None  # a gather asked for and not yet back
    due: float = 0.0  # when that reading is taken (controller's monotonic clock)


class HostGroup:
    """The load hosts' engines as one engine (RunController's LoadEngine).

    `address` is given to ray.init unless Ray is already initialised (a
    test, a notebook); `hosts` actors are placed on distinct alive nodes
    (worker nodes before the head), round-robin when there are more hosts
    than nodes.  Every call goes through the node agents: one call per node
    per reading or knob, whatever the number of hosts on it."""

    def __init__(self, address: str, hosts: int, conn: ConnSettings, settings: EngineSettings,
                 program: Program, report_interval: float = 1.0, ray_log: str = "/dev/null") -> None:
        ray = self._ray = ray_module()
        # set when this group connected Ray (and so shuts it down)
        self._ray_lines = join_ray(ray, address, ray_log)
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
        self.hosts: list[HostState] = []
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
                self.hosts.append(HostState(name, node["NodeManagerAddress"], node["NodeID"], actor, threads[i], rate, i))
            where = ray.get([h.actor.where.remote() for h in self.hosts], timeout=START_TIMEOUT_S)
            by_node: dict[str, list[HostState]] = {}
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
            raise UsageError(f"--cluster: the load hosts did not start: {why_not_started(exc)}") from None
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
    def _call(self, hosts: Sequence[HostState], requests: Sequence[Request],
              timeout: float = KNOB_TIMEOUT_S, cancel: threading.Event | None = None) -> list[Any]:
        """A request to each of several hosts at once, through their nodes' agents;
        a host that died is marked lost, one that does not answer in
        `timeout` (or before `cancel` is set) is left to the gathers (its
        value is None)."""
        ray = self._ray
        calls: dict[int, dict[int, Request]] = {}
        for h, r in zip(hosts, requests):
            calls.setdefault(h.agent, {})[h.index] = r
        owner = {self.agents[k].actor.call.remote(c, timeout): k for k, c in calls.items()}
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

    def _lose(self, h: HostState, why: str) -> None:
        if h.lost_at is not None:
            return
        h.lost_at = self._elapsed()
        h.lost_reason = why
        self.events.append(f"load host {h.name} ({h.node}) lost: {why}")
        try:
            self._ray.kill(h.actor, no_restart=True)  # a silent host must not keep loading the server
        except Exception:  # already gone: nothing to stop
            pass

    def live(self) -> list[HostState]:
        return [h for h in self.hosts if h.live]

    def _elapsed(self) -> float:
        return time.monotonic() - self._t0 if self._t0 is not None else 0.0

    # -- LoadEngine ------------------------------------------------------------
    def start(self, cancel: threading.Event | None = None) -> None:
        hosts = self.live()
        self._t0 = time.monotonic()
        self._call(hosts, [Start()] * len(hosts), START_TIMEOUT_S)

    def stop(self) -> None:
        hosts = self.live()
        self._call(hosts, [Stop()] * len(hosts))
        self._stopped = True
        self._asked()
        for agent in self.agents:
            agent.pending = None  # readings asked for before the stop: the summary counts later ones

    def abort_io(self) -> int:
        hosts = self.live()
        return sum(n or 0 for n in self._call(hosts, [AbortIO()] * len(hosts)))

    def join(self, timeout: float | None = None, cancel: threading.Event | None = None) -> bool:
        hosts = self.live()
        wait = 60.0 if timeout is None else timeout
        # the hosts' own joins end at `wait`: the stop path's few seconds hold with many hosts too
        done = self._call(hosts, [Join(wait)] * len(hosts), wait + 0.5, cancel)
        return all(d is True for d in done)

    def close(self) -> None:
        ray = self._ray
        hosts = [h for h in self.hosts if h.live]
        try:
            if hosts and self.agents:
                self._call(hosts, [Close()] * len(hosts))
        finally:
            for actor in [h.actor for h in hosts] + [a.actor for a in self.agents]:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # already gone
                    pass
            if self._ray_lines is not None:
                ray.shutdown()
                self._ray_lines.close()
                self._ray_lines = None

    def set_threads(self, n: int) -> None:
        hosts = self.live()
        self.set_host_threads(hosts, split_total(n, len(hosts)))

    def set_host_threads(self, hosts: Sequence[HostState], counts: Sequence[int]) -> None:
        self._call(hosts, [SetThreads(c) for c in counts])
        for h, c in zip(hosts, counts):
            h.threads = c

    def set_rate(self, rate: float) -> None:
        hosts = self.live()
        share = rate / len(hosts) if hosts else 0.0
        self._call(hosts, [SetRate(share)] * len(hosts))
        for h in hosts:
            h.rate = share

    def set_paused(self, paused: bool) -> None:
        hosts = self.live()
        self._call(hosts, [SetPaused(paused)] * len(hosts))

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

    def _take(self, h: HostState, r: HostReading, now: float) -> None:
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

    @property
    def state(self) -> str:
        """The state the hosts' newest readings add up to (no new call)."""
        return self._state()[0]

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
    def full_sample(self, h: HostState) -> EngineSample | None:
        """`h`'s newest reading with its histograms."""
        if h.reading is None:
            return None
        r = h.reading
        return replace(r.sample, latency=dense(r.latency.index, r.latency.count, self.nb),
                       service=dense(r.service.index, r.service.count, self.nb))

    def host_intervals(self, percentiles: Sequence[float] = ()) -> tuple[list[HostInterval], Stacked]:
        """Every host since the previous call (hosts read for the first time
        are left out), and the latency histograms of those intervals, the
        k-th row's at position k; each row has p50, p95, p99, max and the
        run's own `percentiles` (the merged line's)."""
        pairs = []
        for h in self.hosts:
            prev, cur = h.prev, h.reading
            h.prev = cur
            if prev is not None and cur is not None:
                pairs.append((h, prev, cur))
        # a host with no new reading has nothing this interval
        delta = Stacked.of([c.latency for _, _, c in pairs], self.nb).minus(
            Stacked.of([(p if c.sample.t > p.sample.t else c).latency for _, p, c in pairs], self.nb))
        counts, pcts = delta.latency_ms(sorted({*ROW_PERCENTILES, *percentiles}))
        rows = []
        for k, (h, prev, cur) in enumerate(pairs):
            now, before = cur.sample, prev.sample
            dt = now.t - before.t if now.t > before.t else 1.0
            count = int(counts[k])
            errors = sum(max(0, now.errors.get(e, 0) - before.errors.get(e, 0)) for e in ERROR_KINDS if e != "fatal")
            cpu_total = cur.cpu_total - prev.cpu_total
            # a stopped host runs none: its last interval ran the threads the reading before saw
            threads = (before if now.state in ENDED else now).threads_running if h.live else 0
            rows.append(HostInterval(
                host=h.name, node=h.node, state="lost" if not h.live else ("ok" if h.reported else "late"),
                threads=threads, transactions=count, tps=count / dt,
                errors_per_s=errors / dt, latency_ms={name: float(v[k]) for name, v in pcts.items()},
                connections=threads,
                cpu_pct=100.0 * (cur.cpu_busy - prev.cpu_busy) / cpu_total if cpu_total > 0 else 0.0,
            ))
        return rows, delta


