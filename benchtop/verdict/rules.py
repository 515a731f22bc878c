"""The rules, as data.  Each rule measures one resource in the spirit of
Brendan Gregg's USE method: a *score*, the share of the load the resource
holds back (waiting sessions over working sessions, busy cores over the
cores there are), compared with a documented *threshold*.  A rule whose
signals were not read scores None and cannot fire.  docs/verdict.md lists
the same rules, signals and thresholds for users.

The rate and network rules are not resource rules: `rate` is the open loop
delivering what it was asked (nothing held it back), `network` is a closed
loop whose workers are neither waiting on the server nor short of CPU, so
their time goes into round trips."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final

from benchtop.verdict.signals import Signals

# thresholds (shares, 0..1)
POOL_WAITING_SHARE: Final = 0.25  # of the pool's clients waiting for a server connection
LOCK_WAITING_SHARE: Final = 0.25  # of the working sessions waiting on row/table locks
LOCK_WAITS_PER_WRITE: Final = 0.1  # row lock waits per write: one write in ten queues for a row
IO_WAITING_SHARE: Final = 0.35  # of the working sessions waiting on file I/O (fsync, reads, writes)
COMMIT_FLUSHES: Final = 0.8  # the server's syncs per transaction: every commit waits for one (durable commits)
COMMIT_OFF_CPU: Final = 0.25  # ... and this share of the workers' time off the CPUs is the commits' syncs
MIN_UNQUEUED: Final = 0.2  # durable commits are judged on at least this share of the workers' time (not queued)
DISK_UTIL: Final = 0.85  # of the time the busiest disk had a request in flight (iostat %util)
SERVER_CPU_SHARE: Final = 0.75  # of the host's cores used by the server's processes
HOST_SATURATED: Final = 0.90  # host CPU busy: saturated when the run queue exceeds the cores too
MAIN_USER_SHARE: Final = 0.10  # of the busy cores: a saturated host is the server's (client's) limit
CLIENT_CPU_SHARE: Final = 0.80  # of the cores the client can use (its CPUs, at most one per worker)
RATE_DELIVERED: Final = 0.90  # of the asked rate delivered, with ...
RATE_BACKLOG_S: Final = 0.1  # ... fewer transactions due and not started than this many seconds of the rate (1 at least)
NEIGHBOUR_WAIT_SHARE: Final = 0.20  # of the workers' time queued for a CPU that other processes held
NEIGHBOUR_MAIN_SHARE: Final = 0.4  # of the busy CPU (two thirds of the run's own): less and the run queues behind itself
NETWORK_OUTSIDE_SHARE: Final = 0.5  # of each query's time spent outside the server, the client's CPU and the run queue
NETWORK_MAX_QUERY_MS: Final = 2.0  # a round trip's worth: more per query and something else is slow


@dataclass(frozen=True, slots=True)
class Rule:
    limit: str  # one of signals.LIMITS
    what: str  # the signals it reads, in words (docs, tests)
    threshold: float
    score: Callable[[Signals], float | None]
    evidence: Callable[[Signals], str]


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def top_statement(s: Signals) -> str:
    """`; top statement 62% of server time: SELECT c FROM sbtest1 WHERE id=?` (empty when unknown)."""
    if not s.top_statement or not s.top_statement_share:
        return ""
    text = s.top_statement if len(s.top_statement) <= 60 else s.top_statement[:59] + "…"
    return f"; top statement {100 * s.top_statement_share:.0f}% of server time: {text}"


def queued_workers(s: Signals) -> float:
    """The busy workers held in the run queue by benchtop's own threads: an
    event loop queued for a CPU holds every connection it carries (256
    connections on 4 loops, the loops queued 3.8 of 4: 243 of 256 held, not
    3.8).

    >>> queued_workers(Signals(threads=256, loop_threads=4, busy_workers=256.0, worker_cpu_wait=3.8))
    243.2
    >>> queued_workers(Signals(threads=8, busy_workers=7.9, worker_cpu_wait=2.6))
    2.6
    """
    carried = max(1.0, s.busy_workers / s.loop_threads) if s.loop_threads and s.busy_workers else 1.0
    return (s.worker_cpu_wait or 0.0) * carried


def cpu_wait_share(s: Signals) -> float | None:
    """The workers' share of time spent queued for a CPU, theirs or the
    server's task's (the run queue: runnable, not running)."""
    if s.busy_workers is None or s.busy_workers <= 0 or (s.worker_cpu_wait is None and s.server_cpu_wait is None):
        return None
    return min(1.0, (queued_workers(s) + (s.server_cpu_wait or 0.0)) / s.busy_workers)


def off_cpu_share(s: Signals) -> float | None:
    """The workers' share of time spent neither in the server's CPU nor in
    the client's, nor queued for one: waiting on locks, syncs or the wire."""
    if s.busy_workers is None or s.busy_workers <= 0 or s.server_cores is None or s.client_cores is None:
        return None
    return max(0.0, 1.0 - (s.server_cores + s.client_cores) / s.busy_workers - (cpu_wait_share(s) or 0.0))


def waits_beyond_run_queue(s: Signals) -> float:
    """The share of the server's lock and I/O waits that is not its tasks'
    run-queue wait: a session's wait event lasts until it runs again, so on
    a crowded host the queue for a CPU after the lock or the sync came reads
    as more of the same wait.

    >>> waits_beyond_run_queue(Signals(io_waiting=2.0, lock_waiting=0.0, server_cpu_wait=0.5))
    0.75
    """
    waits = (s.io_waiting or 0.0) + (s.lock_waiting or 0.0)
    if not waits or not s.server_cpu_wait:
        return 1.0
    return max(0.0, waits - s.server_cpu_wait) / waits


# -- pool queue
def pool_score(s: Signals) -> float | None:
    if s.pool_waiting is None:
        return None
    clients = max(s.pool_clients or 0.0, s.pool_waiting, 1.0)
    return s.pool_waiting / clients


def pool_evidence(s: Signals) -> str:
    wait = f", longest wait {s.pool_wait_ms:.0f} ms" if s.pool_wait_ms is not None else ""
    who = s.pooler or "pooler"
    return f"{who}: {_f(s.pool_waiting)} of {_f(s.pool_clients, 0)} clients waiting for a server connection{wait}"


# -- lock waits: the sessions waiting on locks, or (InnoDB counts its row lock
# time in whole milliseconds, so short waits read as none) many writes
# queueing for a row lock while the workers are mostly off the CPUs
def lock_waits_per_write(s: Signals) -> float | None:
    """Row lock waits per writing statement, as the server counts both over
    its own poll (else per transaction of the interval)."""
    if s.lock_waits_per_s is None:
        return None
    if s.locking_statements_per_s:
        return s.lock_waits_per_s / s.locking_statements_per_s
    return s.lock_waits_per_s / s.tps if s.tps > 0 else None


def lock_waiting(s: Signals) -> float | None:
    """The sessions waiting on locks, never more than the sessions there
    are: performance_schema adds a wait's whole time in the poll where it
    ends (a metadata lock wait may last lock_wait_timeout), which would read
    as more sessions waiting than there are.

    >>> lock_waiting(Signals(threads=8, lock_waiting=25.8)), lock_waiting(Signals(threads=8, lock_waiting=2.0))
    (8.0, 2.0)
    """
    return None if s.lock_waiting is None else min(s.lock_waiting, s.sessions)


def lock_score(s: Signals) -> float | None:
    waiting = lock_waiting(s)
    if waiting is None and s.lock_waits_per_s is None:
        return None
    scores = []
    if waiting is not None:
        scores.append(waiting * waits_beyond_run_queue(s) / max(s.sessions, 1.0))
    per_txn, off_cpu = lock_waits_per_write(s), off_cpu_share(s)
    if per_txn is not None and off_cpu is not None:
        scores.append(min(1.0, per_txn / LOCK_WAITS_PER_WRITE) * off_cpu)
    return max(scores) if scores else None


def lock_evidence(s: Signals) -> str:
    per_txn = lock_waits_per_write(s)
    rate = f", {per_txn:.2f} row lock waits per write" if per_txn else ""
    top = f" ({s.top_lock_wait})" if s.top_lock_wait else ""
    return f"{_f(lock_waiting(s))} of {_f(s.sessions, 0)} sessions waiting on locks{top}{rate}{top_statement(s)}"


# -- disk: the server's sessions waiting on file I/O, or durable commits:
# every transaction waits for the server's own sync, and the workers' time
# off the CPUs goes into those syncs.  The host's devices are shared with
# every other process: their flushes, writes and utilisation decide only
# when the server's own counts are missing, and the evidence says so.
def server_syncs_per_txn(s: Signals) -> float | None:
    """The server's own log syncs per transaction: PostgreSQL's pg_stat_wal
    syncs over its commits; InnoDB's log fsyncs over its own write
    statements in the same poll, times the run's writes per transaction (its
    poll and the run's interval need not cover the same second), else over
    the run's transactions.

    >>> server_syncs_per_txn(Signals(tps=1000.0, writes_per_txn=4.0, server_syncs_per_s=600.0, locking_statements_per_s=2400.0))
    1.0
    """
    if s.syncs_per_commit is not None:
        return s.syncs_per_commit
    if s.server_syncs_per_s is not None and s.locking_statements_per_s and s.writes_per_txn:
        return round(s.server_syncs_per_s / s.locking_statements_per_s * s.writes_per_txn, 4)
    if s.server_syncs_per_s is not None and s.tps > 0:
        return s.server_syncs_per_s / s.tps
    return None


def device_flushes_per_txn(s: Signals) -> float | None:
    """The busiest disk's flush requests per transaction, or its write
    requests when the log is written synchronously (O_DSYNC / FUA writes
    reach the device as writes, without a separate flush), whichever is
    more: every process's, not the server's alone."""
    device = [v / s.tps for v in (s.flushes_per_s, s.disk_writes_per_s) if v is not None and s.tps > 0]
    return max(device) if device else None


def server_counts_missing(s: Signals) -> bool:
    """The server gave no account of its own syncs and I/O waits (nor
    its processes' writes): the host's devices stand in for it."""
    return server_syncs_per_txn(s) is None and s.io_waiting is None


def flushes_per_txn(s: Signals) -> float | None:
    """Syncs per transaction that decide: the server's own when it counts
    them, else the device's (every process's) unless the local server wrote
    nothing at all."""
    if s.tps <= 0 or not s.writes_per_txn:
        return None  # a workload that writes nothing commits nothing to flush
    own = server_syncs_per_txn(s)
    if own is not None:
        return own
    if s.server_write_bytes_per_s is not None and s.server_write_bytes_per_s < 1.0:
        return 0.0  # another process's flushes: the server wrote nothing
    return device_flushes_per_txn(s)


def commit_sync_share(s: Signals) -> float | None:
    """The share of each transaction's time its commit's sync takes: the
    server's own syncs per transaction times one sync timed on its data's
    filesystem, over the transaction's latency (None: no sync timed).

    >>> commit_sync_share(Signals(tps=2600.0, latency_ms=0.385, writes_per_txn=1.0, server_syncs_per_s=2600.0, sync_ms=0.23))
    0.597
    """
    own = server_syncs_per_txn(s)
    if s.sync_ms is None or own is None or not s.latency_ms or not s.writes_per_txn or own < COMMIT_FLUSHES:
        return None
    return round(min(1.0, own * s.sync_ms / s.latency_ms), 3)


def unqueued_share(s: Signals) -> float:
    """The share of the workers' time not spent queued for a CPU: the time
    the run spends on its own account, on a CPU or waiting for the server's
    locks, syncs or the wire.  The queue is the CPU rules' and the
    neighbours' to name; what the run does with the rest holds on a quiet
    host too.

    >>> unqueued_share(Signals(busy_workers=2.0, worker_cpu_wait=0.4, server_cpu_wait=0.6))
    0.5
    """
    return max(MIN_UNQUEUED, 1.0 - (cpu_wait_share(s) or 0.0))


def disk_score(s: Signals) -> float | None:
    scores = []
    per_txn, off_cpu = flushes_per_txn(s), off_cpu_share(s)
    # the waits that the server's lock queue and the pooler's explain instead
    named = ((lock_score(s) if s.lock_waiting is not None else 0.0) or 0.0) + (pool_score(s) or 0.0)
    # durable commits are judged on the time not queued for a CPU, so other processes on the host take a
    # share of the transaction's time without hiding that every commit still waits for its sync
    unqueued = unqueued_share(s)
    if per_txn is not None and off_cpu is not None and not s.open_loop and per_txn >= COMMIT_FLUSHES:
        # a quarter of the workers' time waiting on the syncs every commit makes scores as the threshold
        scores.append(max(0.0, off_cpu / unqueued - named) * IO_WAITING_SHARE / COMMIT_OFF_CPU)
    synced = commit_sync_share(s)
    if synced is not None and not s.open_loop:
        # the same quarter, timed: a sync spent partly on the CPU (a virtual disk) is off the CPUs only in part
        scores.append(max(0.0, synced / unqueued - named) * IO_WAITING_SHARE / COMMIT_OFF_CPU)
    if s.io_waiting is not None:
        scores.append(s.io_waiting * waits_beyond_run_queue(s) / max(s.sessions, s.io_waiting, 1.0))
    if s.disk_util_pct is not None and s.server_local is not False and server_counts_missing(s):
        # utilisation on the scale of the wait share: DISK_UTIL counts as much as IO_WAITING_SHARE
        scores.append(s.disk_util_pct / 100.0 * IO_WAITING_SHARE / DISK_UTIL)
    return max(scores) if scores else None


def disk_evidence(s: Signals) -> str:
    parts = []
    if s.io_waiting is not None and s.io_waiting >= 0.05:
        top = f" ({s.top_io_wait})" if s.top_io_wait else ""
        parts.append(f"{_f(s.io_waiting)} of {_f(s.sessions, 0)} sessions waiting on I/O{top}")
    own, device, off_cpu = server_syncs_per_txn(s), device_flushes_per_txn(s), off_cpu_share(s)
    who = s.server_process or "the server"
    if own is not None and s.writes_per_txn:
        parts.append(f"{own:.2f} syncs per transaction ({who}'s own)")
    elif device is not None and device >= 0.1 and s.writes_per_txn:
        parts.append(f"{device:.2f} device flushes per transaction (all processes: the server's own syncs not read)")
    if s.server_write_bytes_per_s is not None and s.tps > 0:
        parts.append(f"{who} wrote {s.server_write_bytes_per_s / s.tps / 1024:.1f} KiB per transaction")
    synced = commit_sync_share(s)
    if synced is not None and s.sync_ms is not None:
        parts.append(f"a sync takes {s.sync_ms:.2f} ms on its disk (timed by benchtop), "
                     f"{100 * synced:.0f}% of each transaction's {s.latency_ms:.2f} ms")
    per_txn = flushes_per_txn(s)
    if off_cpu is not None and per_txn is not None and per_txn >= COMMIT_FLUSHES:
        parts.append(f"workers off CPU {100 * off_cpu:.0f}% of the time")
    host = []
    if s.disk_util_pct is not None:
        host.append(f"{s.disk or 'disk'} {s.disk_util_pct:.0f}% busy")
    if s.flushes_per_s:
        wait = f" at {s.flush_await_ms:.2f} ms" if s.flush_await_ms is not None else ""
        host.append(f"{s.flushes_per_s:.0f} flushes/s{wait}")
    if own is not None and device is not None and device >= 0.1 and s.writes_per_txn:
        host.append(f"{device:.2f} device flushes per transaction")
    if s.iowait_pct:
        host.append(f"iowait {s.iowait_pct:.0f}%")
    if host:
        parts.append("host-wide (all processes): " + ", ".join(host))
    return ", ".join(parts) + top_statement(s)


# -- other processes: the run's tasks queue for CPUs the host's other processes hold
def neighbour_share(s: Signals) -> float | None:
    """The other processes' share of the CPU time the host spent (theirs and the run's)."""
    if s.neighbour_cores is None:
        return None
    busy = s.neighbour_cores + (s.server_cores or 0.0) + (s.client_cores or 0.0)
    return s.neighbour_cores / busy if busy > 0 else 0.0


def neighbours_score(s: Signals) -> float | None:
    """The workers' time queued for a CPU, in the share the other processes
    hold the CPUs.  A process busy on most of the CPUs it may use (a client
    pinned to one CPU, a server under a quota) queues behind itself: its
    wait is its own limit's, not the neighbours'; so does a run that takes
    most of the busy CPU, but only with more transactions in flight than
    the server's CPUs (two hogs beside 2 workers on 2 CPUs got 0.76 cores
    against the run's 1.24: the run alone would not have queued)."""
    share = neighbour_share(s)
    if cpu_wait_share(s) is None or share is None or not s.busy_workers:
        return None
    if share < NEIGHBOUR_MAIN_SHARE and s.busy_workers > server_cpus(s):
        # the run takes most of the busy CPU with more transactions in flight than the server has CPUs:
        # it queues behind itself (server or client CPU); with fewer, alone it would not queue at all
        return 0.0
    wait = 0.0
    if (s.client_cores or 0.0) < CLIENT_CPU_SHARE * client_cores_available(s):
        wait += queued_workers(s)
    if (s.server_cores or 0.0) < SERVER_CPU_SHARE * server_cpus(s):
        wait += s.server_cpu_wait or 0.0
    return min(1.0, wait / s.busy_workers) * share


def neighbours_evidence(s: Signals) -> str:
    top = f" ({s.neighbour_top})" if s.neighbour_top else ""
    parts = [f"{_f(s.neighbour_cores, 1)} of {s.cpus} cores busy outside this run{top}"]
    wait = cpu_wait_share(s)
    if wait is not None:
        parts.append(f"workers waited {100 * wait:.0f}% of their time for a CPU")
    if s.server_cores is not None:
        parts.append(f"{s.server_process or 'server'} {s.server_cores:.2f} cores")
    if s.client_cores is not None:
        parts.append(f"client {s.client_cores:.2f} cores")
    return ", ".join(parts)


# -- server CPU: its processes' cores, or a saturated host it is the main user of
def server_cpus(s: Signals) -> float:
    """The cores the server may use: its affinity and cgroup quota when read, else the host's."""
    return min(s.server_cpus, float(s.cpus)) if s.server_cpus else float(max(s.cpus, 1))


def _cores(n: float) -> str:
    """
    >>> _cores(1.0), _cores(2.0), _cores(0.5)
    ('1 core', '2 cores', '0.5 cores')
    """
    return f"{n:g} core{'' if n == 1 else 's'}"


def server_cpu_score(s: Signals) -> float | None:
    if s.server_cores is None:
        return None
    score = s.server_cores / server_cpus(s)
    if _saturated(s) and s.server_cores >= (s.client_cores or 0.0) and _main_user(s, s.server_cores):
        score = max(score, (s.host_busy_pct or 0.0) / 100.0 * SERVER_CPU_SHARE / HOST_SATURATED)
    return score


def _saturated(s: Signals) -> bool:
    """The host's CPUs are all busy and tasks queue for them (USE: utilisation and saturation)."""
    return (s.host_busy_pct or 0.0) / 100.0 >= HOST_SATURATED and (s.run_queue or 0) > s.cpus


def _main_user(s: Signals, cores: float) -> bool:
    """`cores` are a real share of the busy CPU, not a bystander's crumbs on
    a host others keep busy (nor less than the other processes take, when read)."""
    if s.neighbour_cores is not None and cores < s.neighbour_cores:
        return False
    return cores >= MAIN_USER_SHARE * (s.host_busy_pct or 0.0) / 100.0 * s.cpus


def other_cores(s: Signals) -> float | None:
    """Cores the host's other processes kept busy (neither benchtop nor the server)."""
    if s.neighbour_cores is not None:
        return s.neighbour_cores
    if s.host_busy_pct is None or s.server_cores is None or s.client_cores is None:
        return None
    return max(0.0, s.host_busy_pct / 100.0 * s.cpus - s.server_cores - s.client_cores)


def _host_busy(s: Signals) -> str:
    others = other_cores(s)
    extra = f" (other processes {others:.2f} cores)" if others is not None and others >= 0.25 else ""
    return f"host {s.host_busy_pct:.0f}% busy{extra}"


def server_cpu_evidence(s: Signals) -> str:
    name, allowed = s.server_process or "server", server_cpus(s)
    mine = f" it may use (host {s.cpus})" if allowed < s.cpus else ""
    parts = [f"{name} {_f(s.server_cores, 2)} of {_cores(allowed)}{mine}"]
    if s.host_busy_pct is not None:
        parts.append(_host_busy(s))
    if s.run_queue is not None:
        parts.append(f"run queue {s.run_queue:.0f}")
    if s.client_cores is not None:
        parts.append(f"client {s.client_cores:.2f} cores")
    return ", ".join(parts) + top_statement(s)


# -- client CPU: benchtop's own cores against those it may use
def client_cores_available(s: Signals) -> float:
    """The cores benchtop may use (a cgroup quota may make it less than one), one per worker at most."""
    return max(0.1, min(float(s.client_cpus), float(s.threads or s.client_cpus)))


def client_cpu_score(s: Signals) -> float | None:
    if s.client_cores is None:
        return None
    score = s.client_cores / client_cores_available(s)
    if _saturated(s) and s.client_cores > (s.server_cores or 0.0) and _main_user(s, s.client_cores):
        score = max(score, (s.host_busy_pct or 0.0) / 100.0 * CLIENT_CPU_SHARE / HOST_SATURATED)
    return score


def client_cpu_evidence(s: Signals) -> str:
    avail = client_cores_available(s)
    who = "benchtop (SQLite inside)" if s.embedded else "benchtop"
    parts = [f"{who} {_f(s.client_cores, 2)} of the {_cores(avail)} it can use"]
    if s.client_cores is not None and s.busy_workers:
        # the client's share of each transaction's latency: its own CPU over the workers' busy time
        parts.append(f"{100 * min(1.0, s.client_cores / s.busy_workers):.0f}% of the workers' time in benchtop's CPU")
    if s.server_cores is not None:
        parts.append(f"{s.server_process or 'server'} {s.server_cores:.2f} cores")
    if s.host_busy_pct is not None:
        parts.append(_host_busy(s))
    return ", ".join(parts)


# -- rate target: the open loop gets what it asks for
def rate_score(s: Signals) -> float | None:
    if not s.open_loop:
        return None
    delivered = s.tps / s.rate_target
    backlog = s.backlog if s.backlog is not None else 0.0
    # a backlog worth a tenth of a second of arrivals is a hiccup caught up within the interval
    return 1.0 if delivered >= RATE_DELIVERED and backlog < max(1.0, RATE_BACKLOG_S * s.rate_target) else 0.0


def rate_evidence(s: Signals) -> str:
    busy = f", {s.busy_workers:.1f} of {s.threads} workers busy" if s.busy_workers is not None else ""
    return (f"{s.tps:.1f} of {s.rate_target:g} transactions/s delivered, backlog {_f(s.backlog, 2)}{busy}")


# -- network by the time outside the server: each query's latency against
# the server's own time for it (its statement timers), less the client's CPU
# and the workers' run-queue wait: what is left is the wire (or a proxy)
def per_query_ms(s: Signals) -> float | None:
    if s.latency_ms is None or not s.tps:
        return None
    return s.latency_ms / max(s.queries_per_txn or 1.0, 1.0)


def server_ms_per_query(s: Signals) -> tuple[float, str] | None:
    """The server's time per statement and where it comes from (None: no statement timers read)."""
    if s.server_ms_per_query is None:
        return None
    return s.server_ms_per_query, "its statement timers"


def outside_ms_per_query(s: Signals) -> float | None:
    """Each query's time outside the server, the client's CPU and the run queue (ms)."""
    per_query, server = per_query_ms(s), server_ms_per_query(s)
    if per_query is None or server is None or s.client_cores is None or not s.busy_workers:
        return None
    client = min(1.0, s.client_cores / s.busy_workers)
    # the server's tasks queue before a statement's timer starts too (woken by the client's packet)
    queued = cpu_wait_share(s) or 0.0
    # a commit's sync may fall outside the statement's timer (PostgreSQL's implicit commit): the server's own wait
    syncing = min(1.0, (s.io_waiting or 0.0) / s.busy_workers)
    return max(0.0, per_query * (1.0 - client - queued - syncing) - server[0])


def network_outside_score(s: Signals) -> float | None:
    if s.open_loop or s.embedded:
        return None
    own = server_syncs_per_txn(s)
    if s.writes_per_txn and own is not None and own >= COMMIT_FLUSHES:
        return None  # a commit's sync falls outside a statement's timer (PostgreSQL): the wire is not told from it
    per_query, outside = per_query_ms(s), outside_ms_per_query(s)
    if per_query is None or outside is None or per_query <= 0:
        return None
    return outside / per_query


def network_outside_evidence(s: Signals) -> str:
    per_query, server, outside = per_query_ms(s), server_ms_per_query(s), outside_ms_per_query(s)
    q = max(s.queries_per_txn or 1.0, 1.0)
    parts = [f"{_f(s.latency_ms, 1)} ms per transaction"]
    if server is not None:
        parts.append(f"server {server[0] * q:.2f} ms of it ({server[1]})")
    if s.client_cores is not None and s.busy_workers and s.latency_ms is not None:
        parts.append(f"client CPU {s.latency_ms * min(1.0, s.client_cores / s.busy_workers):.2f} ms")
    if outside is not None and per_query:
        via = f" (through {s.pooler})" if s.pooler else ""
        parts.append(f"{outside:.2f} of {per_query:.2f} ms per query outside the server and the client{via}")
    return ", ".join(parts)


# -- network round trips: a closed loop waiting on nothing but the wire
def network_score(s: Signals) -> float | None:
    if s.open_loop or s.latency_ms is None or not s.tps or s.embedded:
        return None
    if _saturated(s):
        return 0.0  # the workers' time goes into the run queue, not the wire
    per_query = s.latency_ms / max(s.queries_per_txn or 1.0, 1.0)
    return 1.0 if per_query <= NETWORK_MAX_QUERY_MS else 0.0


def network_evidence(s: Signals) -> str:
    per_query = (s.latency_ms or 0.0) / max(s.queries_per_txn or 1.0, 1.0)
    parts = [f"{per_query:.3f} ms per query"]
    if s.server_cores is not None:
        parts.append(f"{s.server_process or 'server'} {s.server_cores:.2f} cores")
    if s.client_cores is not None:
        parts.append(f"client {s.client_cores:.2f} cores")
    return ", ".join(parts) + ": nothing busy"


RESOURCE_RULES: Final = (
    Rule("pool", "pooler clients waiting (PgBouncer cl_waiting / wait time, ProxySQL time in the proxy) over its clients",
         POOL_WAITING_SHARE, pool_score, pool_evidence),
    Rule("locks", "sessions waiting on locks (InnoDB row lock time, PostgreSQL Lock wait events) over working sessions",
         LOCK_WAITING_SHARE, lock_score, lock_evidence),
    Rule("disk", "sessions waiting on file I/O (performance_schema wait/io/file, PostgreSQL IO waits) over working "
         "sessions; busiest disk %util", IO_WAITING_SHARE, disk_score, disk_evidence),
    Rule("neighbours", "the workers' and the server's run-queue wait (/proc/PID/schedstat) times the other processes' "
         "share of the busy CPU (/proc/PID/stat)", NEIGHBOUR_WAIT_SHARE, neighbours_score, neighbours_evidence),
    Rule("server_cpu", "server process cores over host cores; host CPU busy with a run queue over the cores",
         SERVER_CPU_SHARE, server_cpu_score, server_cpu_evidence),
    Rule("client_cpu", "benchtop's cores over the cores it can use (its CPU affinity, one per worker at most)",
         CLIENT_CPU_SHARE, client_cpu_score, client_cpu_evidence),
    Rule("network", "each query's latency outside the server's statement time, the client's CPU and the run queue, "
         "over the latency", NETWORK_OUTSIDE_SHARE, network_outside_score, network_outside_evidence),
)
RATE_RULE: Final = Rule("rate", "open loop: delivered rate over the asked rate, backlog", RATE_DELIVERED, rate_score,
                        rate_evidence)
NETWORK_RULE: Final = Rule("network", "closed loop, no resource over its threshold, latency per query",
                           NETWORK_MAX_QUERY_MS, network_score, network_evidence)
