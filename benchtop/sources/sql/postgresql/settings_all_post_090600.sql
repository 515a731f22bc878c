-- Every setting not at its built-in default (configuration file, ALTER
-- SYSTEM, command line, environment), with its unit.
SELECT name, setting, unit, source
FROM pg_settings
WHERE source NOT IN ('default', 'override', 'client', 'session')
