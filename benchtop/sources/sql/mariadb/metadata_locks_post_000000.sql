-- Metadata locks on every object someone waits for (a pending ALTER behind
-- an open transaction, and every session queued behind the ALTER): who
-- holds and who waits, with the session's state and statement.
SELECT th.PROCESSLIST_ID AS id, m.LOCK_STATUS AS status, m.LOCK_TYPE AS lock_type,
       m.LOCK_DURATION AS duration, m.OBJECT_TYPE AS object_type,
       CONCAT_WS('.', m.OBJECT_SCHEMA, m.OBJECT_NAME) AS object,
       th.PROCESSLIST_COMMAND AS command, th.PROCESSLIST_TIME AS time_s,
       th.PROCESSLIST_STATE AS state, th.PROCESSLIST_INFO AS query
FROM performance_schema.metadata_locks m
JOIN performance_schema.threads th ON th.THREAD_ID = m.OWNER_THREAD_ID
WHERE (m.OBJECT_TYPE, COALESCE(m.OBJECT_SCHEMA, ''), COALESCE(m.OBJECT_NAME, '')) IN (
        SELECT OBJECT_TYPE, COALESCE(OBJECT_SCHEMA, ''), COALESCE(OBJECT_NAME, '')
        FROM performance_schema.metadata_locks WHERE LOCK_STATUS = 'PENDING')
  AND th.PROCESSLIST_ID <> CONNECTION_ID()
ORDER BY m.LOCK_STATUS = 'PENDING', th.PROCESSLIST_TIME DESC
LIMIT 200
