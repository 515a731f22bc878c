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
       b.buffers_alloc
FROM pg_stat_checkpointer c CROSS JOIN pg_stat_bgwriter b
