-- Who blocks whom: each waiting transaction, the transaction holding the lock,
-- and what the blocker's session is doing (idle in transaction has no query).
SELECT r.trx_mysql_thread_id AS waiting_id, r.trx_query AS waiting_query,
       TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()) AS wait_s,
       b.trx_mysql_thread_id AS blocking_id, b.trx_query AS blocking_query,
       p.COMMAND AS blocking_command, p.TIME AS blocking_idle_s,
       TIMESTAMPDIFF(SECOND, b.trx_started, NOW()) AS blocking_trx_age_s,
       l.lock_table AS lock_table, l.lock_index AS lock_index, l.lock_mode AS lock_mode
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
LEFT JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.blocking_lock_id
LEFT JOIN information_schema.PROCESSLIST p ON p.ID = b.trx_mysql_thread_id
ORDER BY wait_s DESC
LIMIT 200
