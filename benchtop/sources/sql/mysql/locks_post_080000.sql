-- MySQL 8 moved lock waits to performance_schema.data_lock_waits.
SELECT r.trx_mysql_thread_id AS waiting_id, r.trx_query AS waiting_query,
       TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()) AS wait_s,
       b.trx_mysql_thread_id AS blocking_id, b.trx_query AS blocking_query,
       p.COMMAND AS blocking_command, p.TIME AS blocking_idle_s,
       TIMESTAMPDIFF(SECOND, b.trx_started, NOW()) AS blocking_trx_age_s,
       CONCAT(l.OBJECT_SCHEMA, '.', l.OBJECT_NAME) AS lock_table, l.INDEX_NAME AS lock_index,
       l.LOCK_MODE AS lock_mode
FROM performance_schema.data_lock_waits w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID
LEFT JOIN performance_schema.data_locks l ON l.ENGINE_LOCK_ID = w.BLOCKING_ENGINE_LOCK_ID
LEFT JOIN performance_schema.processlist p ON p.ID = b.trx_mysql_thread_id
ORDER BY wait_s DESC
LIMIT 200
