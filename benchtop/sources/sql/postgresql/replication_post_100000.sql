-- One row per connected replica; lag in bytes is computed by the source from
-- the primary's LSN.
SELECT application_name, coalesce(host(client_addr), 'local') AS client_addr, state, sync_state,
       sent_lsn::text AS sent_lsn, write_lsn::text AS write_lsn,
       flush_lsn::text AS flush_lsn, replay_lsn::text AS replay_lsn,
       extract(epoch FROM write_lag)::float8 AS write_lag_s,
       extract(epoch FROM flush_lag)::float8 AS flush_lag_s,
       extract(epoch FROM replay_lag)::float8 AS replay_lag_s
FROM pg_stat_replication
