-- Per table of the current database: block reads and hits (heap, index,
-- TOAST), scans and row changes, dead rows, size; diffed into rates.
-- pg_total_relation_size() takes an ACCESS SHARE lock on the table, its
-- TOAST table and their indexes, which queues behind an ACCESS EXCLUSIVE
-- lock held or awaited on any of them: such a table's size is not read and
-- locked_by names a session holding or awaiting that lock.
SELECT t.relid, t.schemaname AS schema, t.relname AS table_name,
       coalesce(io.heap_blks_read, 0) + coalesce(io.idx_blks_read, 0) + coalesce(io.toast_blks_read, 0) AS blks_read,
       coalesce(io.heap_blks_hit, 0) + coalesce(io.idx_blks_hit, 0) + coalesce(io.toast_blks_hit, 0) AS blks_hit,
       coalesce(t.seq_scan, 0) AS seq_scan, coalesce(t.idx_scan, 0) AS idx_scan,
       t.n_tup_ins + t.n_tup_upd + t.n_tup_del AS tup_changed,
       t.n_live_tup AS live_rows, t.n_dead_tup AS dead_rows,
       greatest(t.last_vacuum, t.last_autovacuum)::text AS last_vacuum,
       CASE WHEN k.relid IS NULL THEN pg_total_relation_size(t.relid) END AS size_bytes,
       k.pid AS locked_by
FROM pg_stat_user_tables t
JOIN pg_statio_user_tables io ON io.relid = t.relid
LEFT JOIN (
    SELECT coalesce(owner.oid, i.indrelid, l.relation) AS relid, min(l.pid) AS pid
    FROM pg_locks l
    LEFT JOIN pg_index i ON i.indexrelid = l.relation
    LEFT JOIN pg_class owner ON owner.reltoastrelid = coalesce(i.indrelid, l.relation)
    WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    GROUP BY 1
) k ON k.relid = t.relid
