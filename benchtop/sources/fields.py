"""Panels that code outside their source reads, with their fields, defined
once: readers get a typed object (attribute access the type checker holds
to these names), never a mapping whose keys each reader spells.  A field a
recording made by an older benchtop lacks reads as None, and the panel
stored in snapshots and recordings is the same plain dict as ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Final

# Panel names.  A panel named here is read outside its source (views,
# verdicts, guards, history, report, metrics): everyone spells it by its
# constant.  Recordings keep these names, and the monitor's public metric
# names are declared apart from them (benchtop/metrics/names.py).

# more than one kind of server
SETTINGS: Final = "settings"  # the server's settings (MySQL variables, PostgreSQL pg_settings), name -> value
DATABASE: Final = "database"  # MySQL: the target database's size; PostgreSQL: its pg_stat_database figures
TOP_STATEMENTS: Final = "top_statements"  # MySQL/MariaDB and PostgreSQL: the costliest statements (rows)
PROCESSLIST: Final = "processlist"  # MySQL/MariaDB and ProxySQL: sessions (rows)
SERVERS: Final = "servers"  # PgBouncer: server connections; ProxySQL: runtime_mysql_servers (rows)
COMMANDS: Final = "commands"  # ProxySQL: stats_mysql_commands_counters (rows)
GLOBAL: Final = "global"  # ProxySQL: stats_mysql_global, name -> value

# MySQL/MariaDB
THREADS: Final = "threads"  # connected, running, cached, created
STATUS_RATES: Final = "status_rates"  # SHOW GLOBAL STATUS counters per second
WAITS: Final = "waits"  # performance_schema wait events (rows)
BINLOG: Final = "binlog"  # binary log size, rate and rotations; Missing when log_bin is off
ROWS: Final = "rows"  # cumulative row changes (InnoDB's counters, or the handler counters)
LOCKS: Final = "locks"  # lock waits (rows)
INNODB: Final = "innodb"  # MySQL/MariaDB; Missing when the server has no InnoDB

# PostgreSQL
CHECKPOINTS: Final = "checkpoints"
WAL: Final = "wal"  # pg_stat_wal: records, bytes, syncs per second
WAL_BYTES_PER_S: Final = "wal_bytes_per_s"  # a number: the LSN's rate
WAL_POSITION: Final = "wal_position"  # lsn, lsn_bytes, in_recovery, replay_lsn
CACHE_HIT_RATIO: Final = "cache_hit_ratio"
SESSIONS: Final = "sessions"  # backends by state
WAIT_EVENTS: Final = "wait_events"  # backends by wait event (rows)
AUTOVACUUM_WORKERS: Final = "autovacuum_workers"
ACTIVITY: Final = "activity"  # one row per backend (pg_activity's view)
BLOCKING: Final = "blocking"  # who waits on a lock beside who holds it up (pg_locks, pg_blocking_pids)
REPLICATION: Final = "replication"  # pg_stat_replication (rows)
TABLES: Final = "tables"  # per-table deltas (rows)
INDEXES: Final = "indexes"  # per-index deltas (rows)
VACUUM: Final = "vacuum"  # vacuums running (rows)

# PgBouncer
VERSION: Final = "version"  # a string
POOLS: Final = "pools"  # SHOW POOLS (rows)
CLIENT_STATES: Final = "client_states"  # client connections by state
SERVER_STATES: Final = "server_states"  # server connections by state
STATS: Final = "stats"  # SHOW STATS per database, per second (rows)
CLIENTS: Final = "clients"  # client connections (rows)
LISTS: Final = "lists"  # SHOW LISTS, list -> items

# ProxySQL
CONNECTION_POOL: Final = "connection_pool"  # stats_mysql_connection_pool (rows)
GLOBAL_RATES: Final = "global_rates"  # stats_mysql_global's counters per second
QUERY_RULES: Final = "query_rules"  # rules' hits per second (rows)
QUERY_RULE_CONFIG: Final = "query_rule_config"  # runtime_mysql_query_rules (rows)
DIGEST_TOP: Final = "digest_top"  # stats_mysql_query_digest's costliest (rows)
POOL_WAIT: Final = "pool_wait"  # time statements spent waiting for a backend connection, ms per second
HOSTGROUP_WAITS: Final = "hostgroup_waits"  # the same per hostgroup (rows)
AGES_S: Final = "ages_s"  # how old the processlist and digest panels are

# the host (the OS source)
CPU: Final = "cpu"  # user, system, iowait, idle, steal %
DISK: Final = "disk"  # the host's I/O, and the busiest disk's iostat -x figures
RUN_QUEUE: Final = "run_queue"  # a number: runnable tasks
CONTEXT_SWITCHES_PER_S: Final = "context_switches_per_s"  # a number
SERVER_PROCESS: Final = "server_process"  # the local server's process tree: pid, RSS, CPU cores


@dataclass(frozen=True, slots=True)
class InnoDBPanel:
    lsn: float | None = None
    checkpoint_lsn: float | None = None
    checkpoint_age_bytes: float | None = None
    checkpoint_age_pct: float | None = None  # of the redo capacity: async flushing starts near 7/8
    redo_capacity_bytes: float | None = None
    dirty_pages_pct: float | None = None
    pages_flushed_per_s: float | None = None
    redo_bytes_per_s: float | None = None
    buffer_pool_hit_ratio: float | None = None  # over the last interval
    buffer_pool_hit_ratio_total: float | None = None  # since the server started
    history_list_length: int | None = None
    row_lock_waits_per_s: float | None = None
    # sessions waiting on a row lock at the poll (Innodb_row_lock_current_waits): Innodb_row_lock_time adds
    # a wait's whole time when it ends, so a 50 s wait ending in a 2 s poll read as 25 sessions waiting
    row_lock_waiting: float | None = None
    log_fsyncs_per_s: float | None = None  # Innodb_os_log_fsyncs (MariaDB 10.8+: Innodb_data_fsyncs, log and data)

    @classmethod
    def of(cls, panels: Mapping[str, Any]) -> InnoDBPanel | None:
        """The InnoDB panel among a snapshot's (or a recorded snapshot's)
        panels; None when it is Missing or absent.

        >>> InnoDBPanel.of({"innodb": {"checkpoint_age_pct": 12.5}}).checkpoint_age_pct
        12.5
        >>> InnoDBPanel.of({"innodb": {"lsn": 1}}).dirty_pages_pct is None, InnoDBPanel.of({}) is None
        (True, True)
        """
        value = panels.get(INNODB)
        if not isinstance(value, Mapping):
            return None
        return cls(**{f.name: value.get(f.name) for f in fields(cls)})

    def as_panel(self) -> dict[str, Any]:
        """The panel as snapshots and recordings hold it."""
        return asdict(self)


TRANSACTIONS: Final = "transactions"  # MySQL/MariaDB: open InnoDB transactions, oldest first (list of TrxRow)
DEADLOCK: Final = "deadlock"  # MySQL/MariaDB: the latest deadlock InnoDB reported (DeadlockPanel), None if none
METADATA_LOCKS: Final = "metadata_locks"  # MySQL/MariaDB: holders and waiters of contended metadata locks


@dataclass(frozen=True, slots=True)
class TrxRow:
    """One open InnoDB transaction and its session."""

    id: int | None = None  # the session (processlist) id
    state: str | None = None  # RUNNING, LOCK WAIT, ROLLING BACK, COMMITTING
    age_s: float | None = None
    rows_locked: int | None = None
    undo_entries: int | None = None  # rows modified: what a rollback would undo
    lock_structs: int | None = None
    isolation: str | None = None
    user: str | None = None
    host: str | None = None
    db: str | None = None
    command: str | None = None  # Sleep: idle inside the transaction
    idle_s: float | None = None  # time in the session's current command
    query: str | None = None  # running now (None when idle)
    last_statement: str | None = None  # the session's latest statement, running or ended

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> TrxRow:
        return cls(**{f.name: row.get(f.name) for f in fields(cls)})

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DeadlockTrx:
    n: int  # InnoDB's (1) / (2)
    thread_id: int | None = None
    active_s: float | None = None
    table: str | None = None
    lock_mode: str | None = None
    query: str | None = None


@dataclass(frozen=True, slots=True)
class DeadlockPanel:
    at: str  # InnoDB's timestamp line
    victim: int | None  # which transaction InnoDB rolled back (n)
    transactions: tuple[DeadlockTrx, ...] = ()

    @classmethod
    def of(cls, panels: Mapping[str, Any]) -> DeadlockPanel | None:
        """
        >>> DeadlockPanel.of({"deadlock": {"at": "x", "victim": 2, "transactions": [{"n": 1, "query": "UPDATE t"}]}})
        DeadlockPanel(at='x', victim=2, transactions=(DeadlockTrx(n=1, thread_id=None, active_s=None, table=None, lock_mode=None, query='UPDATE t'),))
        """
        value = panels.get(DEADLOCK)
        if not isinstance(value, Mapping):
            return None
        trx = tuple(DeadlockTrx(int(t.get("n") or 0), **{f.name: t.get(f.name) for f in fields(DeadlockTrx)
                                                         if f.name != "n"})
                    for t in value.get("transactions") or () if isinstance(t, Mapping))
        return cls(str(value.get("at") or ""), value.get("victim"), trx)

    def as_panel(self) -> dict[str, Any]:
        return {"at": self.at, "victim": self.victim, "transactions": [asdict(t) for t in self.transactions]}


REPLICA: Final = "replica"  # MySQL/MariaDB: this server's replication channels (list of ReplicaRow); Missing if none
STANDBY: Final = "standby"  # PostgreSQL: this server as a standby (StandbyPanel); in_recovery False on a primary
SIZES_SKIPPED: Final = "sizes_skipped"  # PostgreSQL: Missing naming the relations whose size a lock kept unread


@dataclass(frozen=True, slots=True)
class ReplicaRow:
    """One replication channel of a MySQL/MariaDB replica (SHOW ALL SLAVES
    STATUS / SHOW REPLICA STATUS), spelled the same for both servers."""

    channel: str | None = None  # MariaDB's connection name, MySQL's channel ("" for the default)
    primary: str | None = None  # host:port
    io_running: str | None = None  # Yes / No / Connecting
    sql_running: str | None = None
    lag_s: float | None = None  # Seconds_Behind_Master: None when the SQL thread is stopped
    io_state: str | None = None
    read_pos: str | None = None  # primary's binlog file:position received
    exec_pos: str | None = None  # and executed
    relay_bytes: int | None = None  # Relay_Log_Space: the relay logs on disk (applied ones not yet purged too)
    unapplied_bytes: int | None = None  # the primary's binlog read but not executed (both in one file), else None
    gtid: str | None = None  # received GTID position (MariaDB) / set (MySQL)
    sql_delay_s: float | None = None
    last_error: str | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ReplicaRow:
        return cls(**{f.name: row.get(f.name) for f in fields(cls)})

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class StandbyPanel:
    in_recovery: bool | None = None
    receive_lsn: str | None = None
    replay_lsn: str | None = None
    replay_gap_bytes: float | None = None  # received, not yet replayed
    last_replay_age_s: float | None = None  # since the last replayed commit (grows on an idle primary too)
    receiver_status: str | None = None  # streaming, ... (None: no WAL receiver: archive recovery or none)
    replay_paused: bool | None = None  # pg_wal_replay_pause(): WAL arrives, nothing is applied
    sender: str | None = None  # the upstream's host:port

    @classmethod
    def of(cls, panels: Mapping[str, Any]) -> StandbyPanel | None:
        value = panels.get(STANDBY)
        if not isinstance(value, Mapping):
            return None
        return cls(**{f.name: value.get(f.name) for f in fields(cls)})

    def as_panel(self) -> dict[str, Any]:
        return asdict(self)


# The host (the OS source): top's and iostat -x's figures.  Their dict keys
# are listed in benchtop/sources/host_state.py's parsers, which build them.
LOAD: Final = "load"  # load averages, runnable tasks, CPUs
MEMORY: Final = "memory"  # used/available/cached/dirty bytes, swap used and swapping rates
DISKS: Final = "disks"  # one row per whole disk: util, requests, bytes, await, queue
SERVER_PROCESSES: Final = "server_processes"  # the local server's processes: CPU %, I/O rates, RSS, title

# PostgreSQL activity rows, for a server on this host: each backend's CPU and
# I/O from /proc/PID/stat and /proc/PID/io (pg_activity's CPU%, READ/s, WRITE/s),
# the same keys as host_state.process_rows' (the host view's server processes)
BACKEND_CPU_PCT: Final = "cpu_pct"  # of one core, over the interval
BACKEND_READ_BPS: Final = "read_bytes_per_s"  # from storage (page cache hits are not reads)
BACKEND_WRITE_BPS: Final = "write_bytes_per_s"
BACKEND_USAGE: Final = "backend_usage"  # Missing: why the rows lack them (absent when nothing is lacking)
