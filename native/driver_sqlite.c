/* driver_sqlite.c: the embedded default.  One sqlite3 connection per worker
 * (SQLITE_OPEN_NOMUTEX: the engine never shares one), statements prepared
 * once per key with SQLITE_PREPARE_PERSISTENT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <sqlite3.h>

#include "driver.h"

#define BT_SQLITE_BUSY_MS 10000
#define BT_SQLITE_BUSY_STEP_US 1000  /* longest single wait for a lock */

typedef struct {
    sqlite3 *db;
    sqlite3_stmt **stmts;
    int32_t nstmts;
} bt_sqlite;

static void set_err(bt_err *err, sqlite3 *db, int rc, const char *what)
{
    int ext = db ? sqlite3_extended_errcode(db) : rc;
    int prim = ext & 0xff;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    char buf[384];
    snprintf(buf, sizeof buf, "%s%s%s", what ? what : "", what ? ": " : "", msg);
    if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
        bt_err_set(err, BT_DERR_RETRY, BT_ERRK_SERIALIZATION, prim, NULL, buf);
    else
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, prim, NULL, buf);
}

/* SQLite's own busy_timeout sleeps 1, 2, 5, 10, 15, 20 ... ms between
 * attempts.  In WAL mode the locks a writer waits for (readers briefly take
 * the write lock when they catch the WAL header mid-update) are held for
 * microseconds, so those sleeps turn into 30-50 ms stalls of the writer under
 * many readers: retry after 20 us, doubling up to 1 ms, for the same total. */
static int busy_wait(void *arg, int count)
{
    (void)arg;
    long us = 20L << (count < 6 ? count : 6);
    if (us > BT_SQLITE_BUSY_STEP_US)
        us = BT_SQLITE_BUSY_STEP_US;
    /* the waits before this one add up to less than (count + 1) ms */
    if ((long)count * BT_SQLITE_BUSY_STEP_US > BT_SQLITE_BUSY_MS * 1000L)
        return 0;
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
    return 1;
}

/* SQLite counts memory under one global mutex by default: every worker's
 * every allocation would meet the others there (and a descheduled holder
 * stalls them all).  Nothing here reads those counts. */
static void configure_once(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static void sq_disconnect(void *conn)
{
    bt_sqlite *c = conn;
    if (!c)
        return;
    for (int32_t i = 0; i < c->nstmts; i++)
        sqlite3_finalize(c->stmts[i]);
    free(c->stmts);
    sqlite3_close(c->db);
    free(c);
}

static int sq_connect(const bt_conn_config *cfg, void **conn, bt_err *err)
{
    bt_sqlite *c = calloc(1, sizeof *c);
    if (!c) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, NULL, "out of memory");
        return -1;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, configure_once);
    const char *path = cfg->database && cfg->database[0] ? cfg->database : ":memory:";
    int rc = sqlite3_open_v2(path, &c->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        char buf[384];
        snprintf(buf, sizeof buf, "cannot open SQLite database %s: %s", path,
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, rc, NULL, buf);
        sq_disconnect(c);
        return -1;
    }
    sqlite3_busy_handler(c->db, busy_wait, NULL);
    /* WAL lets readers run beside the single writer; NORMAL sync is what
     * WAL-mode applications use (durable at checkpoints, crash-consistent). */
    sqlite3_exec(c->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL);
    *conn = c;
    return 0;
}

static int bind_all(sqlite3_stmt *st, const bt_value *params, int32_t nparams)
{
    for (int32_t i = 0; i < nparams; i++) {
        int rc;
        if (params[i].type == BT_VAL_INT)
            rc = sqlite3_bind_int64(st, i + 1, params[i].i);
        else if (params[i].type == BT_VAL_STR)
            rc = sqlite3_bind_text(st, i + 1, params[i].s, (int)params[i].len, SQLITE_STATIC);
        else
            rc = sqlite3_bind_null(st, i + 1);
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

static int step_all(bt_sqlite *c, sqlite3_stmt *st, bt_result *res, bt_err *err, const char *sql)
{
    int rc;
    int64_t rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rows == 0 && res && res->want) {
            if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
                res->has_value = 1;
                if (res->want == 1) {
                    res->i = sqlite3_column_int64(st, 0);
                } else {
                    const unsigned char *t = sqlite3_column_text(st, 0);
                    int n = sqlite3_column_bytes(st, 0);
                    if (n >= BT_SREG_CAP)
                        n = BT_SREG_CAP - 1;
                    memcpy(res->s, t, (size_t)n);
                    res->s[n] = '\0';
                    res->slen = (uint32_t)n;
                }
            }
        }
        rows++;
    }
    if (rc != SQLITE_DONE) {
        set_err(err, c->db, rc, sql);
        sqlite3_reset(st);
        return -1;
    }
    if (res)
        res->rows = sqlite3_column_count(st) > 0 ? rows : sqlite3_changes64(c->db);
    return 0;
}

static int sq_execute(void *conn, int32_t key, const char *sql, const bt_value *params,
                      int32_t nparams, bt_result *res, bt_err *err)
{
    bt_sqlite *c = conn;
    if (key < 0) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "bad statement key");
        return -1;
    }
    if (key >= c->nstmts) {
        int32_t n = key + 16;
        sqlite3_stmt **ns = realloc(c->stmts, sizeof *ns * (size_t)n);
        if (!ns) {
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "out of memory");
            return -1;
        }
        memset(ns + c->nstmts, 0, sizeof *ns * (size_t)(n - c->nstmts));
        c->stmts = ns;
        c->nstmts = n;
    }
    sqlite3_stmt *st = c->stmts[key];
    if (!st) {
        int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK) {
            set_err(err, c->db, rc, sql);
            return -1;
        }
        c->stmts[key] = st;
    }
    int rc = bind_all(st, params, nparams);
    if (rc != SQLITE_OK) {
        set_err(err, c->db, rc, sql);
        return -1;
    }
    int out = step_all(c, st, res, err, sql);
    sqlite3_reset(st);
    return out;
}

static int sq_exec_text(void *conn, const char *sql, bt_result *res, bt_err *err)
{
    bt_sqlite *c = conn;
    sqlite3_stmt *st = NULL;
    const char *tail = sql;
    int out = 0;
    /* Several statements may come in one string (DDL scripts); the first
     * column of the last statement that returns rows is what is captured. */
    while (tail && *tail) {
        int rc = sqlite3_prepare_v2(c->db, tail, -1, &st, &tail);
        if (rc != SQLITE_OK) {
            set_err(err, c->db, rc, sql);
            return -1;
        }
        if (!st)
            break;
        out = step_all(c, st, res, err, sql);
        sqlite3_finalize(st);
        if (out != 0)
            return out;
    }
    return 0;
}

const bt_driver bt_driver_sqlite = {
    .name = "sqlite",
    .connect = sq_connect,
    .disconnect = sq_disconnect,
    .execute = sq_execute,
    .exec_text = sq_exec_text,
};
