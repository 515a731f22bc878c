-- The WAL position: the primary's insert point, or on a standby how far it
-- has received and replayed.
SELECT pg_is_in_recovery() AS in_recovery,
       CASE WHEN pg_is_in_recovery()
            THEN coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())
            ELSE pg_current_wal_lsn() END::text AS lsn,
       pg_last_wal_replay_lsn()::text AS replay_lsn
