-- 8.0.22 deprecates information_schema.PROCESSLIST for this view, which does
-- not take the global mutex the old table does.
SELECT ID AS id, USER AS user, HOST AS host, DB AS db, COMMAND AS command,
       TIME AS time_s, STATE AS state, INFO AS query
FROM performance_schema.processlist
WHERE ID <> CONNECTION_ID() AND COALESCE(INFO, '') NOT LIKE '%benchtop-monitor%'
ORDER BY TIME DESC
LIMIT 500
