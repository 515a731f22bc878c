-- Sessions grouped by what they are doing and waiting for; the monitor's own
-- session is left out.
SELECT backend_type, coalesce(state, '') AS state,
       coalesce(wait_event_type, '') AS wait_event_type,
       coalesce(wait_event, '') AS wait_event,
       count(*) AS n
FROM pg_stat_activity
WHERE pid <> pg_backend_pid()
GROUP BY 1, 2, 3, 4
