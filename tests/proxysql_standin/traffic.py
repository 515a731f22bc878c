"""Seed rows and a deterministic traffic model for the stand-in: what a
sysbench-like read/write mix through a primary (hostgroup 0) and two
replicas (hostgroup 1) would do to ProxySQL's counters."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.proxysql_standin.server import Standin

SERVERS = (  # hostgroup_id, hostname, port, weight, max_connections, comment
    (0, "10.0.0.1", 3306, 1, 200, "primary"),
    (1, "10.0.0.2", 3306, 1, 200, "replica1"),
    (1, "10.0.0.3", 3306, 1, 200, "replica2"),
)
RULES = (  # rule_id, match_digest, destination_hostgroup
    (1, "^SELECT .* FOR UPDATE$", 0),
    (2, "^SELECT", 1),
)
# digest, digest_text, hostgroup, share of queries, latency in microseconds
DIGESTS = (
    ("0x1C46AE529DD5A40E", "SELECT c FROM sbtest1 WHERE id=?", 1, 0.60, 300),
    ("0x2611981A4315644C", "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", 1, 0.20, 900),
    ("0x3DCE919B79C9576C", "UPDATE sbtest1 SET k=k+? WHERE id=?", 0, 0.10, 2000),
    ("0x4F2A1B6D0C1E5A77", "INSERT INTO sbtest1 (id,k,c,pad) VALUES (?,?,?,?)", 0, 0.05, 1500),
    ("0x5B8E3C2D1A0F9E61", "DELETE FROM sbtest1 WHERE id=?", 0, 0.05, 1200),
)
COMMAND_OF = {"SELECT": "SELECT", "UPDATE": "UPDATE", "INSERT": "INSERT", "DELETE": "DELETE"}
BACKEND_SHARE = 0.9  # the rest of each query's time is spent in the proxy


def seed(s: "Standin") -> None:
    db = s._admin_db
    for table in ("mysql_servers", "runtime_mysql_servers"):
        db.executemany(
            f"INSERT INTO main.{table} (hostgroup_id, hostname, port, weight, max_connections, comment) VALUES (?,?,?,?,?,?)",
            SERVERS,
        )
    for table in ("mysql_query_rules", "runtime_mysql_query_rules"):
        db.executemany(
            f"INSERT INTO main.{table} (rule_id, active, match_digest, destination_hostgroup, apply) VALUES (?,1,?,?,1)",
            RULES,
        )
    db.executemany(
        "INSERT INTO stats.stats_mysql_connection_pool VALUES (?,?,?,'ONLINE',0,0,0,0,0,0,0,0,0,0)",
        [srv[:3] for srv in SERVERS],
    )
    db.executemany("INSERT INTO stats.stats_mysql_query_rules VALUES (?, 0)", [(r[0],) for r in RULES])
    db.execute("INSERT INTO stats.stats_mysql_users VALUES ('sbtest', 0, 10000)")
    variables = [
        ("admin-admin_credentials", "admin:admin"),
        ("admin-stats_credentials", "stats:stats"),
        ("admin-mysql_ifaces", "0.0.0.0:6032"),
        ("admin-version", "2.7.1-16-g2726c27"),
        ("mysql-interfaces", "0.0.0.0:6033"),
        ("mysql-threads", "4"),
        ("mysql-max_connections", "2048"),
    ]
    for schema_name in ("main", "stats"):
        db.executemany(f"INSERT INTO {schema_name}.global_variables VALUES (?, ?)", variables)
    _set_global(s, {"MySQL_Thread_Workers": 4, "Servers_table_version": 1, "mysql_session_internal_bytes": 5120})


def bump(s: "Standin", seconds: float, qps: float) -> None:
    db = s._admin_db
    n = int(round(qps * seconds))
    now = int(time.time())
    per_hg: dict[int, int] = {}
    per_cmd: dict[str, tuple[int, int]] = {}
    for digest, text, hg, share, lat_us in DIGESTS:
        count = int(n * share)
        per_hg[hg] = per_hg.get(hg, 0) + count
        cmd = COMMAND_OF[text.split()[0]]
        c, t = per_cmd.get(cmd, (0, 0))
        per_cmd[cmd] = (c + count, t + count * lat_us)
        if count:
            db.execute(
                "INSERT INTO stats.stats_mysql_query_digest VALUES (?, 'sbtest', 'sbtest', '', ?, ?, ?, ?, ?, ?, ?, ?, 0, ?) "
                "ON CONFLICT DO UPDATE SET count_star = count_star + excluded.count_star, "
                "sum_time = sum_time + excluded.sum_time, last_seen = excluded.last_seen, "
                "min_time = MIN(min_time, excluded.min_time), max_time = MAX(max_time, excluded.max_time), "
                "sum_rows_sent = sum_rows_sent + excluded.sum_rows_sent",
                (hg, digest, text, count, now, now, count * lat_us, lat_us // 2, lat_us * 3, count if hg == 1 else 0),
            )
    commits = n // 20
    per_cmd["BEGIN"] = (commits, commits * 50)
    per_cmd["COMMIT"] = (commits, commits * 800)
    total_time_us = sum(t for _, t in per_cmd.values())
    for cmd, (count, time_us) in per_cmd.items():
        bucket = _bucket(time_us // count if count else 0)
        db.execute(
            f"UPDATE stats.stats_mysql_commands_counters SET Total_cnt = Total_cnt + ?, "
            f"Total_Time_us = Total_Time_us + ?, {bucket} = {bucket} + ? WHERE Command = ?",
            (count, time_us, count, cmd),
        )
    servers = db.execute("SELECT hostgroup, srv_host, srv_port FROM stats.stats_mysql_connection_pool").fetchall()
    for i, (hg, host, port) in enumerate(servers):
        same_hg = sum(1 for srv in servers if srv[0] == hg)
        queries = per_hg.get(hg, 0) // max(same_hg, 1)
        used = 2 + i
        db.execute(
            "UPDATE stats.stats_mysql_connection_pool SET ConnUsed = ?, ConnFree = 8, ConnOK = ConnOK + 1, "
            "MaxConnUsed = MAX(MaxConnUsed, ?), Queries = Queries + ?, Bytes_data_sent = Bytes_data_sent + ?, "
            "Bytes_data_recv = Bytes_data_recv + ?, Latency_us = ? WHERE hostgroup = ? AND srv_host = ? AND srv_port = ?",
            (used, used, queries, queries * 80, queries * 400, 150 + 50 * i, hg, host, port),
        )
    reads = per_hg.get(1, 0)
    db.execute("UPDATE stats.stats_mysql_query_rules SET hits = hits + ? WHERE rule_id = 2", (reads,))
    db.execute("UPDATE stats.stats_mysql_query_rules SET hits = hits + ? WHERE rule_id = 1", (n // 100,))
    immediate = n * 9 // 10
    _add_global(
        s,
        {
            "ProxySQL_Uptime": int(round(seconds)),
            "Questions": n,
            "Com_commit": commits,
            "Client_Connections_created": 1,
            "Queries_frontends_bytes_recv": n * 80,
            "Queries_frontends_bytes_sent": n * 400,
            "Queries_backends_bytes_sent": n * 80,
            "Queries_backends_bytes_recv": n * 400,
            "Backend_query_time_nsec": int(total_time_us * BACKEND_SHARE * 1000),
            "Query_Processor_time_nsec": n * 3000,
            "ConnPool_get_conn_immediate": immediate,
            "ConnPool_get_conn_success": n - immediate,
            "ConnPool_get_conn_failure": n // 100,
            "MyHGM_myconnpoll_get": n - immediate,
            "MyHGM_myconnpoll_get_ok": n - immediate,
            "MyHGM_myconnpoll_push": n - immediate,
        },
    )
    _set_global(s, {"Client_Connections_connected": 16, "Server_Connections_connected": len(servers) * 8})
    if db.execute("SELECT 1 FROM stats.sqlite_master WHERE name = 'stats_mysql_hostgroup_connection_pool'").fetchone():
        for hg, count in per_hg.items():
            waits = count // 20
            updated = db.execute(
                "UPDATE stats.stats_mysql_hostgroup_connection_pool SET acquisitions_total = acquisitions_total + ?, "
                "waits_total = waits_total + ?, wait_time_us_total = wait_time_us_total + ?, waiters = ? "
                "WHERE hostgroup = ?",
                (count, waits, waits * 250, 1 if waits else 0, hg),
            ).rowcount
            if not updated:
                db.execute(
                    "INSERT INTO stats.stats_mysql_hostgroup_connection_pool VALUES (?, ?, ?, ?, ?)",
                    (hg, count, waits, waits * 250, 1 if waits else 0),
                )
    db.execute("DELETE FROM stats.stats_mysql_processlist")
    db.executemany(
        "INSERT INTO stats.stats_mysql_processlist VALUES (?, ?, 'sbtest', 'sbtest', '127.0.0.1', ?, ?, "
        "'127.0.0.1', ?, ?, 3306, 'Query', ?, ?, 0, NULL)",
        [
            (0, 10, 40000, 1, 50000, "10.0.0.2", 3, "SELECT c FROM sbtest1 WHERE id=42"),
            (1, 11, 40001, 0, 50001, "10.0.0.1", 12, "UPDATE sbtest1 SET k=k+1 WHERE id=7"),
        ],
    )


def _bucket(avg_us: int) -> str:
    for limit, name in ((100, "cnt_100us"), (500, "cnt_500us"), (1000, "cnt_1ms"), (5000, "cnt_5ms"), (10000, "cnt_10ms")):
        if avg_us <= limit:
            return name
    return "cnt_50ms"


def _add_global(s: "Standin", deltas: dict[str, int]) -> None:
    s._admin_db.executemany(
        "UPDATE stats.stats_mysql_global SET Variable_Value = CAST(Variable_Value AS INTEGER) + ? WHERE Variable_Name = ?",
        [(v, k) for k, v in deltas.items()],
    )


def _set_global(s: "Standin", values: dict[str, int]) -> None:
    s._admin_db.executemany(
        "UPDATE stats.stats_mysql_global SET Variable_Value = ? WHERE Variable_Name = ?",
        [(str(v), k) for k, v in values.items()],
    )
