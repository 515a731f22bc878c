"""What each source's screens show: views (Proxytop's "screens"), each a few
summary lines and one or more sortable tables, with human units and labels.

Pure data and formatting (rich Text, no widgets), so every figure a DBA reads
is testable without a terminal; `widgets/source_pane.py` turns a View into widgets.
"""

from __future__ import annotations

from collections.abc import Mapping

from benchtop.panels.views.blocking import MYSQL_BLOCKING, PG_BLOCKING, blocking_summary
from benchtop.panels.views.host import OS_DISKS, OS_PROCESSES, os_summary
from benchtop.panels.views.mysql import (
    MYSQL_LOCKS,
    MYSQL_PROCESSLIST,
    MYSQL_STATEMENTS,
    MYSQL_WAITS,
    innodb_summary,
    mysql_summary,
)
from benchtop.panels.views.mysql_trx import MYSQL_METADATA_LOCKS, MYSQL_TRANSACTIONS, locks_summary
from benchtop.panels.views.replication import (
    MYSQL_REPLICA,
    PG_REPLICAS,
    mysql_replication_summary,
    pg_replication_summary,
)
from benchtop.panels.views.pgbouncer import PGB_POOLS, PGB_STATS, pgbouncer_summary, peer_spec
from benchtop.panels.views.postgres import (
    PG_ACTIVITY,
    PG_INDEXES,
    PG_STATEMENTS,
    PG_TABLES,
    PG_VACUUM,
    checkpointer_summary,
    database_summary,
    postgres_summary,
)
from benchtop.panels.views.proxysql import (
    PSQL_COMMANDS,
    PSQL_DIGESTS,
    PSQL_GLOBAL,
    PSQL_POOL,
    PSQL_PROCLIST,
    PSQL_RULES,
    proxysql_summary,
)
from benchtop.panels.views.spec import Col, TableSpec, View, cell_of, filtered, fits, humanize, rows_for, sorted_rows
from benchtop.sources.fields import CLIENTS, SERVERS

__all__ = ["Col", "TableSpec", "View", "cell_of", "filtered", "fits", "humanize", "rows_for", "sorted_rows",
           "views_for", "VIEWS"]  # fmt: skip

VIEWS: Mapping[str, tuple[View, ...]] = {
    "mysql": (
        View("top", "what runs now and what costs most", mysql_summary, (MYSQL_PROCESSLIST, MYSQL_STATEMENTS)),
        View("statements", "top statements", mysql_summary, (MYSQL_STATEMENTS,)),
        View("waits", "waits", None, (MYSQL_WAITS,)),
        View("innodb", "InnoDB", innodb_summary, ()),
        View("locks", "lock waits, metadata locks, the latest deadlock", locks_summary,
             (MYSQL_LOCKS, MYSQL_METADATA_LOCKS)),
        View("trx", "open transactions", None, (MYSQL_TRANSACTIONS,)),
        View("repl", "replication, both sides", mysql_replication_summary, (MYSQL_REPLICA,)),
        View("blocking", "who blocks whom", blocking_summary, (MYSQL_BLOCKING,), in_text_when_rows=True),
        View("history", "main rates over the last minutes", history=True),
    ),
    "postgresql": (
        View("activity", "what runs now and what costs most", postgres_summary, (PG_ACTIVITY, PG_STATEMENTS)),
        View("statements", "top statements", postgres_summary, (PG_STATEMENTS,)),
        View("checkpoints", "checkpointer, background writer, WAL", checkpointer_summary, ()),
        View("tables", "tables and indexes", database_summary, (PG_TABLES, PG_INDEXES)),
        View("vacuum", "vacuum progress", database_summary, (PG_VACUUM,)),
        View("repl", "replication, both sides", pg_replication_summary, (PG_REPLICAS,)),
        View("blocking", "who blocks whom", blocking_summary, (PG_BLOCKING,), in_text_when_rows=True),
        View("history", "main rates over the last minutes", history=True),
    ),
    "pgbouncer": (
        View("pools", "pools and traffic", pgbouncer_summary, (PGB_POOLS, PGB_STATS)),
        View("clients", "clients (SHOW CLIENTS)", pgbouncer_summary, (peer_spec(CLIENTS, "clients"),)),
        View("servers", "servers (SHOW SERVERS)", pgbouncer_summary, (peer_spec(SERVERS, "server connections"),)),
        View("history", "main rates over the last minutes", history=True),
    ),
    "proxysql": (
        View("connpool", "ConnPool", proxysql_summary, (PSQL_POOL, PSQL_DIGESTS)),
        View("queryrules", "QueryRules", None, (PSQL_RULES,)),
        View("glostat", "GloStat", proxysql_summary, (PSQL_GLOBAL,)),
        View("proclist", "ProcList", None, (PSQL_PROCLIST,)),
        View("comcount", "ComCount", None, (PSQL_COMMANDS,)),
        View("digests", "query digests", None, (PSQL_DIGESTS,)),
        View("history", "main rates over the last minutes", history=True),
    ),
    "os": (
        View("host", "this host", os_summary, (OS_DISKS, OS_PROCESSES)),
        View("history", "main rates over the last minutes", history=True),
    ),
}


def views_for(kind: str) -> tuple[View, ...]:
    return VIEWS.get(kind, ())
