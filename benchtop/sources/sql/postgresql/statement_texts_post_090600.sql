-- The texts of the statements the monitor has not seen yet.
SELECT userid, dbid, queryid, query
FROM pg_stat_statements(true)
WHERE queryid = ANY(%(ids)s)
