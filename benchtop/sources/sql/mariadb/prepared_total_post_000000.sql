-- Binary-protocol executions of prepared statements, all together: MariaDB
-- records no digest for them, so this is the only account of their cost.
SELECT COUNT_STAR AS calls, SUM_TIMER_WAIT AS total_ps, SUM_ROWS_EXAMINED AS rows_examined,
       SUM_ROWS_SENT AS rows_sent
FROM performance_schema.events_statements_summary_global_by_event_name
WHERE EVENT_NAME = 'statement/com/Execute'
