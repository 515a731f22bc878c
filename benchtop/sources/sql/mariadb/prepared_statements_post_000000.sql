-- Each prepared statement of each session, with its cumulative executions and
-- timers (picoseconds): MariaDB keeps no digest for statements run through the
-- binary protocol (COM_STMT_EXECUTE, as benchtop's engine and sysbench run
-- them), but it counts each prepared statement here while its session holds it.
-- The source diffs instances between reads and sums them per statement text.
SELECT p.OBJECT_INSTANCE_BEGIN AS instance, p.SQL_TEXT AS sql_text, t.PROCESSLIST_DB AS schema_name,
       p.COUNT_EXECUTE AS calls, p.SUM_TIMER_EXECUTE AS total_ps, p.SUM_ROWS_EXAMINED AS rows_examined,
       p.SUM_ROWS_SENT AS rows_sent, p.SUM_ROWS_AFFECTED AS rows_affected, p.SUM_NO_INDEX_USED AS no_index_used
FROM performance_schema.prepared_statements_instances p
LEFT JOIN performance_schema.threads t ON t.THREAD_ID = p.OWNER_THREAD_ID
WHERE p.COUNT_EXECUTE > 0
