-- pg_stat_wal appeared in 14.
SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full,
       wal_write, wal_sync, wal_write_time, wal_sync_time
FROM pg_stat_wal
