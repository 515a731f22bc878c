-- Per index of the current database: block reads and hits, scans, size.
SELECT i.indexrelid, i.schemaname AS schema, i.relname AS table_name, i.indexrelname AS index_name,
       io.idx_blks_read AS blks_read, io.idx_blks_hit AS blks_hit, i.idx_scan AS scans,
       pg_relation_size(i.indexrelid) AS size_bytes
FROM pg_stat_user_indexes i
JOIN pg_statio_user_indexes io ON io.indexrelid = i.indexrelid
