-- This server as a standby: what it received and replayed, since when it
-- replayed nothing, whether replay is paused, and its WAL receiver's upstream (pg_stat_wal_receiver,
-- PostgreSQL 11+ for sender_host).
SELECT pg_is_in_recovery() AS in_recovery,
       pg_last_wal_receive_lsn()::text AS receive_lsn,
       pg_last_wal_replay_lsn()::text AS replay_lsn,
       extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 AS last_replay_age_s,
       -- asked only in recovery: on a primary the function raises an error
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() END AS replay_paused,
       r.status AS receiver_status, r.sender_host, r.sender_port
FROM (SELECT 1) AS one LEFT JOIN pg_stat_wal_receiver r ON true
