-- Open InnoDB transactions, oldest first: state, age, rows locked, undo
-- entries (rows modified), the session (a Sleep command is a session idle
-- inside its transaction, a lock holder innotop shows) and its last
-- statement (performance_schema off: unknown).
SELECT t.trx_mysql_thread_id AS id, t.trx_state AS state,
       TIMESTAMPDIFF(SECOND, t.trx_started, NOW()) AS age_s,
       t.trx_rows_locked AS rows_locked, t.trx_rows_modified AS undo_entries,
       t.trx_lock_structs AS lock_structs, t.trx_isolation_level AS isolation,
       p.USER AS user, p.HOST AS host, p.DB AS db, p.COMMAND AS command, p.TIME AS idle_s,
       t.trx_query AS query, NULL AS last_statement
FROM information_schema.INNODB_TRX t
LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
WHERE t.trx_mysql_thread_id <> CONNECTION_ID()
ORDER BY t.trx_started
LIMIT 200
