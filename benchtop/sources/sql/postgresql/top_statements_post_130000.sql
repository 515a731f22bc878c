-- pg_stat_statements totals per (user, database, query id), without the texts
-- (fetched apart, once per statement); the source diffs
-- successive readings into per-interval rates. 13 split planning from
-- execution time: execution is what the statement cost the server's workers.
SELECT s.userid, s.dbid, s.queryid, r.rolname AS user, d.datname AS db,
       s.calls, s.total_exec_time AS total_ms, s.rows, s.shared_blks_hit, s.shared_blks_read
FROM pg_stat_statements(false) s
LEFT JOIN pg_roles r ON r.oid = s.userid
LEFT JOIN pg_database d ON d.oid = s.dbid
