-- Whether this user sees every session and statement (pg_read_all_stats, a
-- part of pg_monitor; superusers are members of every role).  Without it,
-- other users' rows in pg_stat_activity and pg_stat_statements come back
-- with their state, query and query id NULL.
SELECT pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER') AS read_all_stats
