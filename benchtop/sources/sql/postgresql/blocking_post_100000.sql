-- Who waits for a lock and who holds it up (pg_activity's blocking view): each
-- lock a session waits for, with its mode and type, the relation (a row lock's
-- waiter holds its row's tuple lock on the table while it waits for the
-- blocker's transaction id, so the relation is read there), and each session
-- pg_blocking_pids names, with its state and what it runs or last ran.  Only
-- pg_locks and the catalogs are read: no lock is taken on a user's table
-- (the relation's name comes from pg_class by oid, not a ::regclass cast).
SELECT w.pid, a.usename AS user, a.datname AS db, w.mode, w.locktype AS lock_type,
       CASE WHEN w.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) THEN
         (SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.oid = w.relid)
       ELSE w.relid::text END AS relation,
       extract(epoch FROM now() - a.query_start)::float8 AS wait_s,
       a.query,
       b.pid AS blocking_pid, coalesce(b.state, '') AS blocking_state,
       extract(epoch FROM now() - b.xact_start)::float8 AS blocking_xact_age_s,
       b.query AS blocking_query
FROM (
    SELECT l.pid, l.mode, l.locktype,
           coalesce(l.relation, (SELECT t.relation FROM pg_locks t
                                 WHERE t.pid = l.pid AND t.locktype = 'tuple' AND t.granted LIMIT 1)) AS relid,
           coalesce(l.database, (SELECT t.database FROM pg_locks t
                                 WHERE t.pid = l.pid AND t.locktype = 'tuple' AND t.granted LIMIT 1)) AS dbid
    FROM pg_locks l
    WHERE NOT l.granted AND l.pid <> pg_backend_pid()
) w
JOIN pg_stat_activity a ON a.pid = w.pid
CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid)
JOIN pg_stat_activity b ON b.pid = bp.pid
ORDER BY wait_s DESC NULLS LAST, w.pid, b.pid
LIMIT 200
