-- PostgreSQL <= 16: checkpoint counters live in pg_stat_bgwriter.
SELECT checkpoints_timed AS timed,
       checkpoints_req AS requested,
       buffers_checkpoint AS buffers_written,
       checkpoint_write_time AS write_time_ms,
       checkpoint_sync_time AS sync_time_ms,
       buffers_clean,
       maxwritten_clean,
       buffers_backend,
       buffers_backend_fsync,
       buffers_alloc,
       -- the counters count since their reset: per hour over that window, not a poll's
       extract(epoch FROM now() - coalesce(stats_reset, pg_postmaster_start_time()))::float8 AS counted_s
FROM pg_stat_bgwriter
