"""ProxySQL 2.7 admin schema, as the real server defines it.

The DDL strings are copied from sysown/proxysql
`include/ProxySQL_Admin_Tables_Definitions.h` (the " , " separators matter:
`SHOW CREATE TABLE` reformats them exactly as ProxySQL does), and the table
list, column order and `stats_mysql_global` variable names match the real
2.7.1 capture in /work/shared/reference/proxysql-admin-capture.txt.

`stats` holds the stats_* tables (what the `stats` user sees); `main` holds
the configuration and runtime_* tables (admin user only).
"""

from __future__ import annotations

VERSION = "2.7.1-16-g2726c27"

_GLOBAL_VARIABLES = (
    "CREATE TABLE global_variables (variable_name VARCHAR NOT NULL PRIMARY KEY , variable_value VARCHAR NOT NULL)"
)

STATS_TABLES: dict[str, str] = {
    "global_variables": _GLOBAL_VARIABLES,
    "stats_memory_metrics": "CREATE TABLE stats_memory_metrics (Variable_Name VARCHAR NOT NULL PRIMARY KEY , Variable_Value VARCHAR NOT NULL)",
    "stats_mysql_client_host_cache": "CREATE TABLE stats_mysql_client_host_cache (client_address VARCHAR NOT NULL , error_count INT NOT NULL , last_updated BIGINT NOT NULL)",
    "stats_mysql_client_host_cache_reset": "CREATE TABLE stats_mysql_client_host_cache_reset (client_address VARCHAR NOT NULL , error_count INT NOT NULL , last_updated BIGINT NOT NULL)",
    "stats_mysql_commands_counters": "CREATE TABLE stats_mysql_commands_counters (Command VARCHAR NOT NULL PRIMARY KEY , Total_Time_us INT NOT NULL , Total_cnt INT NOT NULL , cnt_100us INT NOT NULL , cnt_500us INT NOT NULL , cnt_1ms INT NOT NULL , cnt_5ms INT NOT NULL , cnt_10ms INT NOT NULL , cnt_50ms INT NOT NULL , cnt_100ms INT NOT NULL , cnt_500ms INT NOT NULL , cnt_1s INT NOT NULL , cnt_5s INT NOT NULL , cnt_10s INT NOT NULL , cnt_INFs)",
    "stats_mysql_connection_pool": "CREATE TABLE stats_mysql_connection_pool (hostgroup INT , srv_host VARCHAR , srv_port INT , status VARCHAR , ConnUsed INT , ConnFree INT , ConnOK INT , ConnERR INT , MaxConnUsed INT , Queries INT , Queries_GTID_sync INT , Bytes_data_sent INT , Bytes_data_recv INT , Latency_us INT)",
    "stats_mysql_connection_pool_reset": "CREATE TABLE stats_mysql_connection_pool_reset (hostgroup INT , srv_host VARCHAR , srv_port INT , status VARCHAR , ConnUsed INT , ConnFree INT , ConnOK INT , ConnERR INT , MaxConnUsed INT , Queries INT , Queries_GTID_sync INT , Bytes_data_sent INT , Bytes_data_recv INT , Latency_us INT)",
    "stats_mysql_errors": "CREATE TABLE stats_mysql_errors (hostgroup INT NOT NULL , hostname VARCHAR NOT NULL , port INT NOT NULL , username VARCHAR NOT NULL , client_address VARCHAR NOT NULL , schemaname VARCHAR NOT NULL , errno INT NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , last_error VARCHAR NOT NULL DEFAULT '' , PRIMARY KEY (hostgroup, hostname, port, username, schemaname, errno) )",
    "stats_mysql_errors_reset": "CREATE TABLE stats_mysql_errors_reset (hostgroup INT NOT NULL , hostname VARCHAR NOT NULL , port INT NOT NULL , username VARCHAR NOT NULL , client_address VARCHAR NOT NULL , schemaname VARCHAR NOT NULL , errno INT NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , last_error VARCHAR NOT NULL DEFAULT '' , PRIMARY KEY (hostgroup, hostname, port, username, schemaname, errno) )",
    "stats_mysql_free_connections": "CREATE TABLE stats_mysql_free_connections (fd INT NOT NULL , hostgroup INT NOT NULL , srv_host VARCHAR NOT NULL , srv_port INT NOT NULL , user VARCHAR NOT NULL , schema VARCHAR , init_connect VARCHAR , time_zone VARCHAR , sql_mode VARCHAR , autocommit VARCHAR , idle_ms INT , statistics VARCHAR , mysql_info VARCHAR)",
    "stats_mysql_global": "CREATE TABLE stats_mysql_global (Variable_Name VARCHAR NOT NULL PRIMARY KEY , Variable_Value VARCHAR NOT NULL)",
    "stats_mysql_gtid_executed": "CREATE TABLE stats_mysql_gtid_executed (hostname VARCHAR NOT NULL , port INT NOT NULL DEFAULT 3306 , gtid_executed VARCHAR , events INT NOT NULL)",
    "stats_mysql_prepared_statements_info": "CREATE TABLE stats_mysql_prepared_statements_info (global_stmt_id INT NOT NULL , schemaname VARCHAR NOT NULL , username VARCHAR NOT NULL , digest VARCHAR NOT NULL , ref_count_client INT NOT NULL , ref_count_server INT NOT NULL , num_columns INT NOT NULL, num_params INT NOT NULL, query VARCHAR NOT NULL)",
    "stats_mysql_processlist": "CREATE TABLE stats_mysql_processlist (ThreadID INT NOT NULL , SessionID INTEGER PRIMARY KEY , user VARCHAR , db VARCHAR , cli_host VARCHAR , cli_port INT , hostgroup INT , l_srv_host VARCHAR , l_srv_port INT , srv_host VARCHAR , srv_port INT , command VARCHAR , time_ms INT NOT NULL , info VARCHAR , status_flags INT , extended_info VARCHAR)",
    "stats_mysql_query_digest": "CREATE TABLE stats_mysql_query_digest (hostgroup INT , schemaname VARCHAR NOT NULL , username VARCHAR NOT NULL , client_address VARCHAR NOT NULL , digest VARCHAR NOT NULL , digest_text VARCHAR NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , sum_time INTEGER NOT NULL , min_time INTEGER NOT NULL , max_time INTEGER NOT NULL , sum_rows_affected INTEGER NOT NULL , sum_rows_sent INTEGER NOT NULL , PRIMARY KEY(hostgroup, schemaname, username, client_address, digest))",
    "stats_mysql_query_digest_reset": "CREATE TABLE stats_mysql_query_digest_reset (hostgroup INT , schemaname VARCHAR NOT NULL , username VARCHAR NOT NULL , client_address VARCHAR NOT NULL , digest VARCHAR NOT NULL , digest_text VARCHAR NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , sum_time INTEGER NOT NULL , min_time INTEGER NOT NULL , max_time INTEGER NOT NULL , sum_rows_affected INTEGER NOT NULL , sum_rows_sent INTEGER NOT NULL , PRIMARY KEY(hostgroup, schemaname, username, client_address, digest))",
    "stats_mysql_query_rules": "CREATE TABLE stats_mysql_query_rules (rule_id INTEGER PRIMARY KEY , hits INT NOT NULL)",
    "stats_mysql_users": "CREATE TABLE stats_mysql_users (username VARCHAR PRIMARY KEY , frontend_connections INT NOT NULL , frontend_max_connections INT NOT NULL)",
    "stats_proxysql_message_metrics": "CREATE TABLE stats_proxysql_message_metrics (message_id VARCHAR NOT NULL , filename VARCHAR NOT NULL , line INT CHECK (line >= 0) NOT NULL DEFAULT 0 , func VARCHAR NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , PRIMARY KEY (filename, line, func) )",
    "stats_proxysql_message_metrics_reset": "CREATE TABLE stats_proxysql_message_metrics_reset (message_id VARCHAR NOT NULL , filename VARCHAR NOT NULL , line INT CHECK (line >= 0) NOT NULL DEFAULT 0 , func VARCHAR NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , PRIMARY KEY (filename, line, func) )",
    "stats_proxysql_servers_checksums": "CREATE TABLE stats_proxysql_servers_checksums (hostname VARCHAR NOT NULL , port INT NOT NULL DEFAULT 6032 , name VARCHAR NOT NULL , version INT NOT NULL , epoch INT NOT NULL , checksum VARCHAR NOT NULL , changed_at INT NOT NULL , updated_at INT NOT NULL , diff_check INT NOT NULL , PRIMARY KEY (hostname, port, name) )",
    "stats_proxysql_servers_clients_status": "CREATE TABLE stats_proxysql_servers_clients_status (uuid VARCHAR NOT NULL , hostname VARCHAR NOT NULL , port INT NOT NULL , admin_mysql_ifaces VARCHAR NOT NULL , last_seen_at INT NOT NULL , PRIMARY KEY (uuid, hostname, port) )",
    "stats_proxysql_servers_metrics": "CREATE TABLE stats_proxysql_servers_metrics (hostname VARCHAR NOT NULL , port INT NOT NULL DEFAULT 6032 , weight INT CHECK (weight >= 0) NOT NULL DEFAULT 0 , comment VARCHAR NOT NULL DEFAULT '' , response_time_ms INT NOT NULL , Uptime_s INT NOT NULL , last_check_ms INT NOT NULL , Queries INT NOT NULL , Client_Connections_connected INT NOT NULL , Client_Connections_created INT NOT NULL , PRIMARY KEY (hostname, port) )",
    "stats_proxysql_servers_status": "CREATE TABLE stats_proxysql_servers_status (hostname VARCHAR NOT NULL , port INT NOT NULL DEFAULT 6032 , weight INT CHECK (weight >= 0) NOT NULL DEFAULT 0 , master VARCHAR NOT NULL , global_version INT NOT NULL , check_age_us INT NOT NULL , ping_time_us INT NOT NULL, checks_OK INT NOT NULL , checks_ERR INT NOT NULL , PRIMARY KEY (hostname, port) )",
}

# Only in builds made with PROXYSQL31=1; absent from the 2.7.1 capture, so the
# stand-in creates it on request (`start_standin(hostgroup_pool=True)`).
HOSTGROUP_POOL_TABLE = "CREATE TABLE stats_mysql_hostgroup_connection_pool (hostgroup INT NOT NULL , acquisitions_total INT NOT NULL , waits_total INT NOT NULL , wait_time_us_total INT NOT NULL , waiters INT NOT NULL)"

_MYSQL_SERVERS_COLUMNS = "hostgroup_id INT CHECK (hostgroup_id>=0) NOT NULL DEFAULT 0 , hostname VARCHAR NOT NULL , port INT CHECK (port >= 0 AND port <= 65535) NOT NULL DEFAULT 3306 , gtid_port INT CHECK ((gtid_port <> port OR gtid_port=0) AND gtid_port >= 0 AND gtid_port <= 65535) NOT NULL DEFAULT 0 , status VARCHAR CHECK (UPPER(status) IN ('ONLINE','SHUNNED','OFFLINE_SOFT', 'OFFLINE_HARD')) NOT NULL DEFAULT 'ONLINE' , weight INT CHECK (weight >= 0 AND weight <=10000000) NOT NULL DEFAULT 1 , compression INT CHECK (compression IN(0,1)) NOT NULL DEFAULT 0 , max_connections INT CHECK (max_connections >=0) NOT NULL DEFAULT 1000 , max_replication_lag INT CHECK (max_replication_lag >= 0 AND max_replication_lag <= 126144000) NOT NULL DEFAULT 0 , use_ssl INT CHECK (use_ssl IN(0,1)) NOT NULL DEFAULT 0 , max_latency_ms INT UNSIGNED CHECK (max_latency_ms>=0) NOT NULL DEFAULT 0 , comment VARCHAR NOT NULL DEFAULT '' , PRIMARY KEY (hostgroup_id, hostname, port) )"

_QUERY_RULES_COLUMNS = "rule_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL , active INT CHECK (active IN (0,1)) NOT NULL DEFAULT 0 , username VARCHAR , schemaname VARCHAR , flagIN INT CHECK (flagIN >= 0) NOT NULL DEFAULT 0 , client_addr VARCHAR , proxy_addr VARCHAR , proxy_port INT CHECK (proxy_port >= 0 AND proxy_port <= 65535), digest VARCHAR , match_digest VARCHAR , match_pattern VARCHAR , negate_match_pattern INT CHECK (negate_match_pattern IN (0,1)) NOT NULL DEFAULT 0 , re_modifiers VARCHAR DEFAULT 'CASELESS' , flagOUT INT CHECK (flagOUT >= 0), replace_pattern VARCHAR CHECK(CASE WHEN replace_pattern IS NULL THEN 1 WHEN replace_pattern IS NOT NULL AND match_pattern IS NOT NULL THEN 1 ELSE 0 END) , destination_hostgroup INT DEFAULT NULL , cache_ttl INT CHECK(cache_ttl > 0) , cache_empty_result INT CHECK (cache_empty_result IN (0,1)) DEFAULT NULL , cache_timeout INT CHECK(cache_timeout >= 0) , reconnect INT CHECK (reconnect IN (0,1)) DEFAULT NULL , timeout INT UNSIGNED CHECK (timeout >= 0) , retries INT CHECK (retries>=0 AND retries <=1000) , delay INT UNSIGNED CHECK (delay >=0) , next_query_flagIN INT UNSIGNED , mirror_flagOUT INT UNSIGNED , mirror_hostgroup INT UNSIGNED , error_msg VARCHAR , OK_msg VARCHAR , sticky_conn INT CHECK (sticky_conn IN (0,1)) , multiplex INT CHECK (multiplex IN (0,1,2)) , gtid_from_hostgroup INT UNSIGNED , log INT CHECK (log IN (0,1)) , apply INT CHECK(apply IN (0,1)) NOT NULL DEFAULT 0 , attributes VARCHAR CHECK (JSON_VALID(attributes) OR attributes = '') NOT NULL DEFAULT '' , comment VARCHAR)"

MAIN_TABLES: dict[str, str] = {
    "global_variables": _GLOBAL_VARIABLES,
    "mysql_servers": f"CREATE TABLE mysql_servers ({_MYSQL_SERVERS_COLUMNS}",
    "runtime_mysql_servers": f"CREATE TABLE runtime_mysql_servers ({_MYSQL_SERVERS_COLUMNS}",
    "mysql_query_rules": f"CREATE TABLE mysql_query_rules ({_QUERY_RULES_COLUMNS}",
    "runtime_mysql_query_rules": f"CREATE TABLE runtime_mysql_query_rules ({_QUERY_RULES_COLUMNS}",
}

# Reading `<base>_reset` returns the base table's rows and then zeroes them.
# Value: the statement that "zeroes" the base table (ProxySQL keeps gauges
# such as ConnUsed/ConnFree/status and empties the maps).
RESET_TABLES: dict[str, str] = {
    "stats_mysql_connection_pool_reset": (
        "UPDATE stats.stats_mysql_connection_pool SET ConnOK=0, ConnERR=0, MaxConnUsed=ConnUsed, "
        "Queries=0, Queries_GTID_sync=0, Bytes_data_sent=0, Bytes_data_recv=0"
    ),
    "stats_mysql_query_digest_reset": "DELETE FROM stats.stats_mysql_query_digest",
    "stats_mysql_errors_reset": "DELETE FROM stats.stats_mysql_errors",
    "stats_mysql_client_host_cache_reset": "DELETE FROM stats.stats_mysql_client_host_cache",
    "stats_proxysql_message_metrics_reset": "DELETE FROM stats.stats_proxysql_message_metrics",
}

# stats_mysql_global rows of the real 2.7.1 capture, in its order (values as
# on a freshly started proxy).
GLOBAL_STATUS: tuple[tuple[str, str], ...] = tuple(
    (name, "false" if name == "mysql_listener_paused" else "0")
    for name in """
ProxySQL_Uptime Active_Transactions Client_Connections_aborted Client_Connections_connected
Client_Connections_created Server_Connections_aborted Server_Connections_connected
Server_Connections_created Server_Connections_delayed Client_Connections_non_idle
mysql_backend_buffers_bytes mysql_frontend_buffers_bytes mysql_session_internal_bytes Com_autocommit
Com_autocommit_filtered Com_commit Com_commit_filtered Com_rollback Com_rollback_filtered
Com_backend_change_user Com_backend_init_db Com_backend_set_names Com_frontend_init_db
Com_frontend_set_names Com_frontend_use_db Com_backend_stmt_prepare Com_backend_stmt_execute
Com_backend_stmt_close Com_frontend_stmt_prepare Com_frontend_stmt_execute Com_frontend_stmt_close
Questions Slow_queries GTID_consistent_queries GTID_session_collected Queries_backends_bytes_recv
Queries_backends_bytes_sent Queries_frontends_bytes_recv Queries_frontends_bytes_sent
Query_Processor_time_nsec Backend_query_time_nsec ConnPool_get_conn_latency_awareness
ConnPool_get_conn_immediate ConnPool_get_conn_success ConnPool_get_conn_failure
mysql_killed_backend_connections mysql_killed_backend_queries hostgroup_locked_set_cmds
hostgroup_locked_queries mysql_unexpected_frontend_com_quit mysql_unexpected_frontend_packets
queries_with_max_lag_ms__total_wait_time_us queries_with_max_lag_ms__delayed queries_with_max_lag_ms
backend_lagging_during_query backend_offline_during_query get_aws_aurora_replicas_skipped_during_query
automatic_detected_sql_injection whitelisted_sqli_fingerprint max_connect_timeouts
generated_error_packets client_host_error_killed_connections Client_Connections_hostgroup_locked
Mirror_concurrency Mirror_queue_length Selects_for_update__autocommit0 Servers_table_version
MySQL_Thread_Workers Access_Denied_Wrong_Password Access_Denied_Max_Connections
Access_Denied_Max_User_Connections MySQL_Monitor_Workers MySQL_Monitor_Workers_Aux
MySQL_Monitor_Workers_Started MySQL_Monitor_connect_check_OK MySQL_Monitor_connect_check_ERR
MySQL_Monitor_ping_check_OK MySQL_Monitor_ping_check_ERR MySQL_Monitor_read_only_check_OK
MySQL_Monitor_read_only_check_ERR MySQL_Monitor_replication_lag_check_OK
MySQL_Monitor_replication_lag_check_ERR MySQL_Monitor_dns_cache_queried
MySQL_Monitor_dns_cache_lookup_success MySQL_Monitor_dns_cache_record_updated MyHGM_myconnpoll_get
MyHGM_myconnpoll_get_ok MyHGM_myconnpoll_push MyHGM_myconnpoll_destroy MyHGM_myconnpoll_reset
SQLite3_memory_bytes ConnPool_memory_bytes Stmt_Client_Active_Total Stmt_Client_Active_Unique
Stmt_Server_Active_Total Stmt_Server_Active_Unique Stmt_Max_Stmt_id Stmt_Cached
Query_Cache_Memory_bytes Query_Cache_count_GET Query_Cache_count_GET_OK Query_Cache_count_SET
Query_Cache_bytes_IN Query_Cache_bytes_OUT Query_Cache_Purged Query_Cache_Entries
new_req_conns_count mysql_listener_paused
""".split()
)

# stats_mysql_commands_counters.Command values (ProxySQL's MYSQL_COM_QUERY_* list).
COMMANDS: tuple[str, ...] = tuple(
    """
ALTER_TABLE ALTER_VIEW ANALYZE_TABLE BEGIN CALL CHANGE_MASTER COMMIT CREATE_DATABASE CREATE_INDEX
CREATE_TABLE CREATE_TEMPORARY CREATE_TRIGGER CREATE_USER CREATE_VIEW DEALLOCATE DELETE DESCRIBE
DROP_DATABASE DROP_INDEX DROP_TABLE DROP_TRIGGER DROP_USER DROP_VIEW GRANT EXECUTE EXPLAIN FLUSH
INSERT KILL LOAD LOCK_TABLE OPTIMIZE PREPARE PURGE RENAME_TABLE RESET_MASTER RESET_SLAVE REPLACE
REVOKE ROLLBACK SAVEPOINT SELECT SELECT_FOR_UPDATE SET SHOW_TABLE_STATUS START_TRANSACTION
TRUNCATE_TABLE UNLOCK_TABLES UPDATE USE SHOW UNKNOWN
""".split()
)

BUCKETS: tuple[str, ...] = (
    "cnt_100us", "cnt_500us", "cnt_1ms", "cnt_5ms", "cnt_10ms", "cnt_50ms",
    "cnt_100ms", "cnt_500ms", "cnt_1s", "cnt_5s", "cnt_10s", "cnt_INFs",
)  # fmt: skip


def create_all(db, hostgroup_pool: bool = False) -> None:
    """Create every table on `db`, a sqlite3 connection with the stats
    database attached as schema "stats", and fill the fixed rows."""
    for ddl in MAIN_TABLES.values():
        db.execute(ddl)
    stats_ddl = [*STATS_TABLES.values(), *([HOSTGROUP_POOL_TABLE] if hostgroup_pool else [])]
    for ddl in stats_ddl:
        # SQLite stores the DDL without the schema name, so SHOW CREATE TABLE stays exact.
        db.execute(ddl.replace("CREATE TABLE ", "CREATE TABLE stats.", 1))
    db.executemany("INSERT INTO stats.stats_mysql_global VALUES (?, ?)", GLOBAL_STATUS)
    zeros = ", ".join(["0"] * (2 + len(BUCKETS)))
    db.executemany(f"INSERT INTO stats.stats_mysql_commands_counters VALUES (?, {zeros})", [(c,) for c in COMMANDS])
