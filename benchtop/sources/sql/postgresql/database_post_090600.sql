-- The current database's counters and size.
SELECT datname, blks_hit, blks_read, xact_commit, xact_rollback,
       tup_returned, tup_fetched, tup_inserted, tup_updated, tup_deleted,
       temp_bytes, deadlocks, pg_database_size(datid) AS size_bytes
FROM pg_stat_database
WHERE datname = current_database()
