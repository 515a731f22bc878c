"""The monitor's public metric names, declared: dashboards and alerts are
written against them, so a panel renamed inside benchtop (its key in
snapshots and recordings) keeps its metric, and a panel that is not here
is not served.  tests/metrics/test_metric_names.py holds the list.

A panel that is a mapping of numbers is one family, its fields the `field`
label; a panel of rows is one family per numeric column, `<name>_<column>`
(the server's column names: SHOW POOLS's cl_waiting, ...), served only for
the panels whose rows are few and stable."""

from __future__ import annotations

from typing import Final, Mapping

from benchtop.sources import fields as f

MYSQL: Final = "mysql"
POSTGRESQL: Final = "postgresql"
PGBOUNCER: Final = "pgbouncer"
PROXYSQL: Final = "proxysql"
HOST: Final = "os"

# (source kind, panel) -> the family of the panel's fields
PANEL_FAMILIES: Final[Mapping[tuple[str, str], str]] = {
    (MYSQL, f.SETTINGS): "benchtop_mysql_settings",
    (MYSQL, f.THREADS): "benchtop_mysql_threads",
    (MYSQL, f.STATUS_RATES): "benchtop_mysql_status_rates",
    (MYSQL, f.INNODB): "benchtop_mysql_innodb",
    (MYSQL, f.BINLOG): "benchtop_mysql_binlog",
    (MYSQL, f.ROWS): "benchtop_mysql_rows",
    (MYSQL, f.DATABASE): "benchtop_mysql_database",
    (MYSQL, f.DEADLOCK): "benchtop_mysql_deadlock",
    (POSTGRESQL, f.SETTINGS): "benchtop_postgresql_settings",
    (POSTGRESQL, f.CHECKPOINTS): "benchtop_postgresql_checkpoints",
    (POSTGRESQL, f.WAL): "benchtop_postgresql_wal",
    (POSTGRESQL, f.WAL_POSITION): "benchtop_postgresql_wal_position",
    (POSTGRESQL, f.CACHE_HIT_RATIO): "benchtop_postgresql_cache_hit_ratio",
    (POSTGRESQL, f.DATABASE): "benchtop_postgresql_database",
    (POSTGRESQL, f.SESSIONS): "benchtop_postgresql_sessions",
    (POSTGRESQL, f.STANDBY): "benchtop_postgresql_standby",
    (PGBOUNCER, f.CLIENT_STATES): "benchtop_pgbouncer_client_states",
    (PGBOUNCER, f.SERVER_STATES): "benchtop_pgbouncer_server_states",
    (PGBOUNCER, f.LISTS): "benchtop_pgbouncer_lists",
    (PROXYSQL, f.GLOBAL): "benchtop_proxysql_global",
    (PROXYSQL, f.GLOBAL_RATES): "benchtop_proxysql_global_rates",
    (PROXYSQL, f.POOL_WAIT): "benchtop_proxysql_pool_wait",
    (PROXYSQL, f.AGES_S): "benchtop_proxysql_ages_s",
    (HOST, f.CPU): "benchtop_os_cpu",
    (HOST, f.DISK): "benchtop_os_disk",
    (HOST, f.SERVER_PROCESS): "benchtop_os_server_process",
    (HOST, f.LOAD): "benchtop_os_load",
    (HOST, f.MEMORY): "benchtop_os_memory",
}

# (source kind, panel of rows) -> the stem of its columns' families
ROW_FAMILIES: Final[Mapping[tuple[str, str], str]] = {
    (PGBOUNCER, f.POOLS): "benchtop_pgbouncer_pools",
    (PGBOUNCER, f.STATS): "benchtop_pgbouncer_stats",
    (PROXYSQL, f.CONNECTION_POOL): "benchtop_proxysql_connection_pool",
    (PROXYSQL, f.HOSTGROUP_WAITS): "benchtop_proxysql_hostgroup_waits",
    (POSTGRESQL, f.REPLICATION): "benchtop_postgresql_replication",
}
