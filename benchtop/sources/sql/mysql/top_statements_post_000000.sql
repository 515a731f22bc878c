-- Cumulative per-digest totals (timers in picoseconds) of the digests seen
-- since the previous read; the source diffs them into per-interval rates.
SELECT SCHEMA_NAME AS schema_name, DIGEST AS digest, DIGEST_TEXT AS digest_text,
       COUNT_STAR AS calls, SUM_TIMER_WAIT AS total_ps, SUM_ROWS_EXAMINED AS rows_examined,
       SUM_ROWS_SENT AS rows_sent, SUM_ROWS_AFFECTED AS rows_affected,
       SUM_NO_INDEX_USED AS no_index_used, LAST_SEEN AS last_seen, NOW() AS server_now
FROM performance_schema.events_statements_summary_by_digest
WHERE LAST_SEEN >= %(since)s
