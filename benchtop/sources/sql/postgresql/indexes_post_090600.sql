-- Per index of the current database: block reads and hits, scans, size.
-- pg_relation_size() takes an ACCESS SHARE lock on the index, which queues
-- behind an ACCESS EXCLUSIVE lock held or awaited on it (REINDEX, DROP
-- INDEX): such an index's size is not read and locked_by names a session
-- holding or awaiting that lock.
SELECT i.indexrelid, i.schemaname AS schema, i.relname AS table_name, i.indexrelname AS index_name,
       io.idx_blks_read AS blks_read, io.idx_blks_hit AS blks_hit, i.idx_scan AS scans,
       CASE WHEN k.relid IS NULL THEN pg_relation_size(i.indexrelid) END AS size_bytes,
       k.pid AS locked_by
FROM pg_stat_user_indexes i
JOIN pg_statio_user_indexes io ON io.indexrelid = i.indexrelid
LEFT JOIN (
    SELECT l.relation AS relid, min(l.pid) AS pid
    FROM pg_locks l
    WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    GROUP BY 1
) k ON k.relid = i.indexrelid
