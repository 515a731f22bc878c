-- The current database's size from table statistics (no privilege needed;
-- InnoDB refreshes these after ~10% of a table's rows change).
SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) AS size_bytes, COUNT(*) AS files
FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE()
