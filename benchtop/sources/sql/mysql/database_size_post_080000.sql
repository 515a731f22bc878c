-- The current database's size on disk: its InnoDB tablespace files (8.0
-- renamed INNODB_SYS_TABLESPACES). Needs PROCESS; tables_size is the fallback.
SELECT COALESCE(SUM(FILE_SIZE), 0) AS size_bytes, COUNT(*) AS files
FROM information_schema.INNODB_TABLESPACES
WHERE NAME LIKE CONCAT(DATABASE(), '/%')
