-- The server's own pid for this session: through a pooler (PgBouncer) the
-- protocol's backend key is the pooler's invention, not a process anywhere.
SELECT pg_backend_pid() AS pid
