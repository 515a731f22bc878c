-- MySQL has no Innodb_history_list_length status variable; this counter is
-- enabled by default.
SELECT COUNT FROM information_schema.INNODB_METRICS
WHERE NAME = 'trx_rseg_history_len' AND STATUS = 'enabled'
