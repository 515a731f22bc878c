/* driver_pg.h: what the PostgreSQL driver's two halves share: driver_pg.c
 * (libpq: connect, prepare, text statements, pipeline mode, the pooler
 * fallback) and driver_pg_wire.c (benchtop's own Bind/Execute/Sync and the
 * reply read on the socket).  Not seen by cffi or by the engine, which knows
 * the driver only as bt_driver_pgsql (driver.h). */
#ifndef BT_DRIVER_PG_H
#define BT_DRIVER_PG_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "driver.h"
#include "stmt_slots.h"
#include "textbuf.h"

typedef struct {
    char num[24];            /* an int parameter, formatted */
    bt_textbuf s;            /* a string parameter, copied and NUL-terminated */
} bt_pg_param;

typedef struct {
    int prepared;            /* "bt_<key>" exists on this connection */
    char name[24];
    char *sql;               /* with $n placeholders */
    int nparams;
    const char **values;
    bt_pg_param *pv;
} bt_pg_stmt;

/* Pipeline mode: statements sent but not yet read back. */
enum { BT_PG_MAX_PENDING = 256 };

typedef struct {
    bt_pg_stmt *st;
    int is_prepare;          /* the Parse of st, sent ahead of its first execute */
} bt_pg_pending;

typedef struct {
    PGconn *pg;
    int prepare;
    int unnamed;             /* named statements broken here (pooler) */
    int pipeline;            /* cfg->pipeline */
    int in_txn;              /* pipeline mode: an explicit transaction is open */
    int npending;
    int32_t timeout_ms;      /* cfg->query_timeout_ms */
    int timed_out;           /* a statement outlived it: the connection is given up */
    int async;               /* on an event loop's fiber: never block, wait in bt_io_wait */
    int aborted;             /* a wait was cut short by the stop path */
    int just_sent;           /* wire path: the reply cannot be there yet, wait before recv */
    bt_pg_pending pending[BT_PG_MAX_PENDING];
    bt_stmt_slots stmts;     /* bt_pg_stmt by key */
    bt_textbuf text;         /* interpolation buffer for text mode */
    int wire;                /* prepared statements run on the wire path */
    char txn_status;         /* the wire path's last ReadyForQuery: 'I', 'T' or 'E' */
    int blocking;            /* the socket is in blocking mode, for the wire path's reads */
    bt_textbuf out;          /* wire path: the Bind/Execute/Sync being sent */
    char *in;                /* wire path: bytes received, [in_pos, in_len) unread */
    size_t in_cap, in_pos, in_len;
} bt_pg_conn;

/* driver_pg.c */
/* An error's kind from its SQLSTATE `st` (NULL: none) and message `raw`;
 * always returns -1 for the caller to pass on. */
int bt_pg_classify(const bt_pg_conn *c, const char *st, const char *raw, bt_err *err);
/* Fills err with a fatal "out of memory"; returns -1. */
int bt_pg_oom(bt_err *err);
/* A decimal integer as libpq and the server print it (no checks: the
 * server's own output). */
int64_t bt_pg_parse_i64(const char *s);

/* driver_pg_wire.c */
/* Puts the socket in blocking mode for the wire path's reads (on) or back in
 * the non-blocking mode libpq needs (off) before any libpq call. */
void bt_pg_blocking(bt_pg_conn *c, int on);
/* Runs prepared statement `st` (bound) on the wire: 0 done, -1 failed (err
 * filled), 1 its name is unknown to the server (a pooler: c->txn_status says
 * whether the transaction survived). */
int bt_pg_wire_execute(bt_pg_conn *c, const bt_pg_stmt *st, bt_result *res, bt_err *err);

#endif
