-- Cumulative wait totals per instrument (timers in picoseconds); the source
-- diffs successive readings. "idle" is time spent waiting for the client.
SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT
FROM performance_schema.events_waits_summary_global_by_event_name
WHERE COUNT_STAR > 0 AND EVENT_NAME <> 'idle'
