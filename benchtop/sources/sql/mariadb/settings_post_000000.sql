-- Durability and sizing settings a result's validity depends on.
SHOW GLOBAL VARIABLES WHERE Variable_name IN (
  'version', 'version_comment', 'innodb_flush_log_at_trx_commit', 'sync_binlog',
  'innodb_doublewrite', 'log_bin', 'binlog_format', 'innodb_buffer_pool_size',
  'innodb_log_file_size', 'innodb_log_files_in_group', 'innodb_flush_method',
  'performance_schema', 'max_connections',
  'innodb_checksum_algorithm', 'innodb_checksums', 'datadir', 'pid_file')
