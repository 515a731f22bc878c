-- Durability and sizing settings a result's validity depends on.
SELECT name, setting, unit
FROM pg_settings
WHERE name IN ('fsync', 'full_page_writes', 'synchronous_commit', 'wal_level',
               'archive_mode', 'max_wal_senders', 'autovacuum', 'data_checksums',
               'shared_buffers', 'max_wal_size', 'checkpoint_timeout',
               'server_version', 'server_version_num', 'track_io_timing',
               'track_wal_io_timing', 'max_connections', 'data_directory')
