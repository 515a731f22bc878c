-- The current database's size on disk: its InnoDB tablespace files (grow as
-- rows are inserted, unlike information_schema.TABLES' sampled statistics).
-- Needs PROCESS; tables_size is the fallback.
SELECT COALESCE(SUM(FILE_SIZE), 0) AS size_bytes, COUNT(*) AS files
FROM information_schema.INNODB_SYS_TABLESPACES
WHERE NAME LIKE CONCAT(DATABASE(), '/%')
