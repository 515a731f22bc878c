-- 8.0.18 adds per-digest latency quantiles (since the digest was first seen).
SELECT SCHEMA_NAME AS schema_name, DIGEST AS digest, DIGEST_TEXT AS digest_text,
       COUNT_STAR AS calls, SUM_TIMER_WAIT AS total_ps, SUM_ROWS_EXAMINED AS rows_examined,
       SUM_ROWS_SENT AS rows_sent, SUM_ROWS_AFFECTED AS rows_affected,
       SUM_NO_INDEX_USED AS no_index_used, QUANTILE_95 AS p95_ps, QUANTILE_99 AS p99_ps,
       LAST_SEEN AS last_seen, NOW() AS server_now
FROM performance_schema.events_statements_summary_by_digest
WHERE LAST_SEEN >= %(since)s
