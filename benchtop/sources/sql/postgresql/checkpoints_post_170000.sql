-- PostgreSQL 17 moved checkpoint counters to pg_stat_checkpointer; backend
-- writes went to pg_stat_io.
SELECT c.num_timed AS timed,
       c.num_requested AS requested,
       c.buffers_written,
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
