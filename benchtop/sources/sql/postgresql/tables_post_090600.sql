-- Per table of the current database: block reads and hits (heap, index,
-- TOAST), scans and row changes, dead rows, size; diffed into rates.
SELECT t.relid, t.schemaname AS schema, t.relname AS table_name,
       coalesce(io.heap_blks_read, 0) + coalesce(io.idx_blks_read, 0) + coalesce(io.toast_blks_read, 0) AS blks_read,
       coalesce(io.heap_blks_hit, 0) + coalesce(io.idx_blks_hit, 0) + coalesce(io.toast_blks_hit, 0) AS blks_hit,
       coalesce(t.seq_scan, 0) AS seq_scan, coalesce(t.idx_scan, 0) AS idx_scan,
       t.n_tup_ins + t.n_tup_upd + t.n_tup_del AS tup_changed,
       t.n_live_tup AS live_rows, t.n_dead_tup AS dead_rows,
       greatest(t.last_vacuum, t.last_autovacuum)::text AS last_vacuum,
       pg_total_relation_size(t.relid) AS size_bytes
FROM pg_stat_user_tables t
JOIN pg_statio_user_tables io ON io.relid = t.relid
