/* driver_null.c: statements are no-ops, to measure the engine's own cost. */
#include <stddef.h>

#include "driver.h"

static int null_connect(const bt_conn_config *cfg, void **conn, bt_err *err)
{
    (void)cfg;
    (void)err;
    static int token;
    *conn = &token;
    return 0;
}

static void null_disconnect(void *conn)
{
    (void)conn;
}

static int null_execute(void *conn, int32_t key, const char *sql, const bt_value *params,
                        int32_t nparams, bt_result *res, bt_err *err)
{
    (void)conn;
    (void)key;
    (void)sql;
    (void)params;
    (void)nparams;
    (void)err;
    if (res) {
        res->has_value = 0;
        res->rows = 0;
    }
    return 0;
}

static int null_exec_text(void *conn, const char *sql, bt_result *res, bt_err *err)
{
    return null_execute(conn, 0, sql, NULL, 0, res, err);
}

const bt_driver bt_driver_null = {
    .name = "null",
    .connect = null_connect,
    .disconnect = null_disconnect,
    .execute = null_execute,
    .exec_text = null_exec_text,
    .never_waits = 1,
};
