-- What every session runs now, longest first; the monitor's own connection
-- and any statement tagged benchtop-monitor (other monitors) are left out.
SELECT ID AS id, USER AS user, HOST AS host, DB AS db, COMMAND AS command,
       TIME AS time_s, STATE AS state, INFO AS query
FROM information_schema.PROCESSLIST
WHERE ID <> CONNECTION_ID() AND COALESCE(INFO, '') NOT LIKE '%benchtop-monitor%'
ORDER BY TIME DESC
LIMIT 500
