-- One row per client session, active first, longest running first. Every
-- benchtop monitor's session is left out; pg_blocking_pids() takes the lock
-- manager's locks, so it is only asked for sessions waiting on a lock.
SELECT pid, usename AS user, datname AS db, application_name AS application,
       coalesce(host(client_addr), 'local') AS client, coalesce(state, '') AS state,
       wait_event_type, wait_event,
       extract(epoch FROM now() - xact_start)::float8 AS xact_age_s,
       extract(epoch FROM now() - query_start)::float8 AS query_age_s,
       extract(epoch FROM now() - state_change)::float8 AS state_age_s,
       CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) ELSE '{}'::int[] END AS blocked_by,
       query
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'
  AND application_name <> 'benchtop-monitor'
ORDER BY state = 'idle', query_start
LIMIT 500
