-- PostgreSQL 18 adds num_done (checkpoints that completed; num_timed also
-- counts skipped ones) and slru_written.
SELECT c.num_timed AS timed,
       c.num_requested AS requested,
       c.num_done AS done,
       c.buffers_written,
       c.slru_written,
       c.write_time AS write_time_ms,
       c.sync_time AS sync_time_ms,
       c.restartpoints_timed,
       c.restartpoints_req AS restartpoints_requested,
       c.restartpoints_done,
       b.buffers_clean,
       b.maxwritten_clean,
       b.buffers_alloc,
       -- the counters count since their reset: per hour over that window, not a poll's
       extract(epoch FROM now() - coalesce(c.stats_reset, pg_postmaster_start_time()))::float8 AS counted_s
FROM pg_stat_checkpointer c CROSS JOIN pg_stat_bgwriter b
