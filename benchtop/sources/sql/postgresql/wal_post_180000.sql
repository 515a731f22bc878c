-- 18 moved write/sync counts and times to pg_stat_io.
SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full
FROM pg_stat_wal
