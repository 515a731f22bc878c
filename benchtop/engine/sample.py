"""One cumulative reading of the engine: counters since the run started,
merged over every worker.  The run turns two readings into an interval."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchtop.engine.histogram import Histogram
from benchtop.engine.pickling import pickled_by_fields

ERROR_KINDS = ("deadlock", "lock_timeout", "serialization", "ignored", "lost_connection", "fatal", "query_timeout",
               "client_aborted")
STATES = ("idle", "running", "stopping", "stopped", "failed")
# how native/driver.h's BT_CONNECT_UNANSWERED begins: a connection the server took and never answered
CONNECT_UNANSWERED = "no answer to the connection's start-up"
ENDED = ("stopping", "stopped", "failed")  # the load runs no more (its end asked, or met)


@dataclass(frozen=True, slots=True)
class GroupSample:
    """One thread group's cumulative counters (a workload's `[[group]]`)."""

    name: str
    threads_target: int
    threads_running: int
    rate: float  # target; 0 = closed loop
    transactions: int
    errors: int
    latency_ns_sum: int
    service_ns_sum: int
    busy_ns: int
    queue_ns: float
    tickets_due: int
    latency: Histogram
    service: Histogram


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class EngineSample:
    """Cumulative counters since the run started, merged over every worker."""

    t: float
    state: str
    threads_target: int
    threads_running: int
    in_flight: int  # workers inside a transaction now
    unfinished: int  # transactions cut short at a stop (their sockets shut down)
    paused: bool
    rate: float  # target; 0 = closed loop
    transactions: int
    rollbacks: int
    reads: int
    writes: int
    other: int
    errors: dict[str, int]
    retries: int
    reconnects: int
    connects: int
    connect_ns_sum: int
    connect_ns_max: int
    latency_ns_sum: int
    latency_ns_min: int
    latency_ns_max: int
    service_ns_sum: int
    service_ns_max: int
    busy_ns: int
    queue_ns: float
    tickets_due: int
    txn_by_type: tuple[int, ...]
    txn_ns_by_type: tuple[int, ...]
    rows_loaded: int
    error: str
    latency: Histogram
    service: Histogram
    groups: tuple[GroupSample, ...] = ()  # when the workload declares thread groups
    connect_failures: int = 0  # connection attempts refused or unanswered (too many connections, denied, down)
    connect_error: str = ""  # the server's word on the latest refused attempt
    lost_error: str = ""  # why the latest lost connection was lost (the server's or the socket's word)
    connected: int = -1  # running workers holding a connection now; -1: not known (a reading without it)
    connections_served: int = 0  # connections that completed at least one transaction
    loops_running: int = 0  # event-loop threads running (--connections); 0 with a thread per connection
    loop_threads: int = 0  # --connections: event-loop threads asked for (threads_* then count connections)
    svc_ns_by_type: tuple[int, ...] = ()  # service time sum per type (no open-loop queueing); (): not known
    # latency per query kind, for programs that time their statements (fileio)
    query_latency: dict[str, Histogram] = field(default_factory=dict)

    @property
    def queries(self) -> int:
        return self.reads + self.writes + self.other

    @property
    def error_count(self) -> int:
        """Errors a user sees counted: everything but fatal (which stops the run)."""
        return sum(v for k, v in self.errors.items() if k != "fatal")
