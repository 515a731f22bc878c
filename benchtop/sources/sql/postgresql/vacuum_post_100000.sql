-- VACUUMs running now (manual and autovacuum) and how far each has got.
SELECT p.pid, p.datname AS db, p.relid::regclass::text AS table_name, p.phase,
       p.heap_blks_total, p.heap_blks_scanned, p.heap_blks_vacuumed, p.index_vacuum_count,
       extract(epoch FROM now() - a.xact_start)::float8 AS running_s,
       a.query LIKE 'autovacuum:%' AS auto
FROM pg_stat_progress_vacuum p
LEFT JOIN pg_stat_activity a ON a.pid = p.pid
