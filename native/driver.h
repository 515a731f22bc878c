/* driver.h: what a database driver gives the engine.
 *
 * One connection per worker thread; a driver is never called from two threads
 * on the same connection.  Statements are identified by a small integer key
 * chosen by the engine (statement index x table number); the driver prepares
 * lazily on first use of a key and keeps the handle until disconnect, so the
 * hot path is a single execute with already-bound parameter buffers.
 */
#ifndef BT_DRIVER_H
#define BT_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "benchtop_api.h"
#include "textbuf.h"

/* What went wrong, classified so the engine can decide: retry the transaction
 * (deadlock, lock timeout, serialization), reconnect (lost connection), skip
 * (code in --ignore-errors) or stop the run (anything else). */
enum {
    BT_DERR_NONE = 0,
    BT_DERR_RETRY = 1,       /* transaction must be rolled back and retried */
    BT_DERR_LOST = 2,        /* connection is gone; reconnect */
    BT_DERR_SQL = 3,         /* statement error: fatal unless its code is ignored */
    BT_DERR_CONNECT = 4,     /* could not connect */
    BT_DERR_EVAL = 5         /* an expression failed under strict_eval: the client aborts */
};

typedef struct {
    int kind;           /* BT_DERR_* */
    int errk;           /* BT_ERRK_* to count it under */
    int32_t code;       /* MySQL errno; PG SQLSTATE encoded base 36; SQLite result code */
    char sqlstate[6];
    char msg[384];
} bt_err;

/* An error not yet set: its header alone.  Clearing all 400 bytes on every
 * transaction wrote seven cache lines of a fiber's cold stack. */
static inline void bt_err_clear(bt_err *err)
{
    err->kind = 0;
    err->errk = 0;
    err->code = 0;
    err->sqlstate[0] = '\0';
    err->msg[0] = '\0';
}

/* A connection whose start-up got no answer before the run stopped: the
 * server (or a pooler) took the TCP connection and never spoke, as PgBouncer
 * does at its open-files limit (accept() fails, the kernel's backlog holds
 * the connection).  Not the server's word, so the summary says what it is. */
#define BT_CONNECT_UNANSWERED                                                                      \
    "no answer to the connection's start-up before the run stopped (a pooler at its open-files " \
    "limit? a full listen backlog?)"

enum { BT_VAL_INT = 0, BT_VAL_STR = 1, BT_VAL_NULL = 2 };

typedef struct {
    int type;           /* BT_VAL_* */
    int64_t i;
    const char *s;
    uint32_t len;
} bt_value;

/* First column of the first row, when the statement asks for it. */
typedef struct {
    int want;           /* 0: none, 1: as int, 2: as string */
    int has_value;
    int64_t i;
    char *s;            /* buffer of BT_SREG_CAP bytes provided by the engine */
    uint32_t slen;
    int64_t rows;       /* rows affected; rows returned where they come free (PostgreSQL,
                         * SQLite): MySQL skips unread rows without counting them */
} bt_result;

typedef struct bt_driver {
    const char *name;
    /* Opens a connection; on failure fills err and returns non-zero. */
    int (*connect)(const bt_conn_config *cfg, void **conn, bt_err *err);
    void (*disconnect)(void *conn);
    /* Runs statement `key` (sql given on every call; used on first use or
     * with cfg->prepare == 0).  Placeholders are '?'; drivers that need $n
     * rewrite at prepare time. */
    int (*execute)(void *conn, int32_t key, const char *sql, const bt_value *params,
                   int32_t nparams, bt_result *res, bt_err *err);
    /* Plain text statement, results discarded except as above (BEGIN,
     * ROLLBACK, DDL, bulk INSERT). `res` may be NULL. */
    int (*exec_text)(void *conn, const char *sql, bt_result *res, bt_err *err);
    /* Optional: append `s` quoted as a string literal to buf (for bulk loads
     * and text-protocol mode); NULL means standard SQL quoting ('' doubled). */
    size_t (*quote)(void *conn, char *buf, size_t cap, const char *s, size_t len);
    /* Optional: called by each worker thread just before it exits (e.g.
     * mysql_thread_end); NULL if the driver needs nothing. */
    void (*thread_end)(void);
    /* Optional: the connection's socket, stable from connect to disconnect
     * (or -1), so the controller can shutdown() it to unblock a read. */
    int (*socket)(void *conn);
    /* Statements never wait (null): once there are more workers than CPUs,
     * they run under SCHED_IDLE, or thousands of them spinning would starve
     * the controller's thread for minutes (its tick, a stop, a signal). */
    int never_waits;
    /* Every wait of its connections (connect, replies, timeouts) goes through
     * bt_io_wait (evloop.h), so many can share an event-loop thread
     * (--connections); a driver without it keeps a thread per connection. */
    int loops;
} bt_driver;

const bt_driver *bt_driver_get(int driver);

extern const bt_driver bt_driver_null;
extern const bt_driver bt_driver_sqlite;
extern const bt_driver bt_driver_fileio;
#ifdef BT_HAVE_MYSQL
extern const bt_driver bt_driver_mysql;
#endif
#ifdef BT_HAVE_PGSQL
extern const bt_driver bt_driver_pgsql;
#endif

/* Helpers shared by drivers (driver_common.c). */
void bt_err_set(bt_err *err, int kind, int errk, int32_t code, const char *sqlstate,
                const char *msg);
int32_t bt_sqlstate_code(const char *sqlstate);
/* Substitute '?' placeholders with literal values (text protocol mode) into
 * `out`, which grows to fit.  Returns 0, or fills err and returns -1. */
int bt_sql_interpolate(const bt_driver *drv, void *conn, const char *sql,
                       const bt_value *params, int32_t nparams, bt_textbuf *out, bt_err *err);

#endif
