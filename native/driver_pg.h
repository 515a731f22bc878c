/* driver_pg.h: what the PostgreSQL driver's parts share: driver_pg.c
 * (libpq: connect, prepare, text statements, the pooler fallback),
 * driver_pg_pipeline.c (--pipeline: a transaction's statements queued and
 * sent together) and driver_pg_wire.c (benchtop's own Bind/Execute/Sync and
 * the reply read on the socket).  Not seen by cffi or by the engine, which
 * knows the driver only as bt_driver_pgsql (driver.h). */
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
    size_t len;              /* this call's value's length (the wire path's Bind) */
} bt_pg_param;

typedef struct {
    int prepared;            /* its name exists on this connection */
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
    /* What a prepared statement on the wire path reads comes first, in the
     * first two cache lines of the connection (bt_pg_connect aligns it): on
     * an event loop the connection is cold by the time its turn comes again,
     * 255 others later, and every line read is a miss. */
    PGconn *pg;
    bt_pg_stmt *last_st;     /* the statement of last_key: most transactions repeat one */
    int32_t last_key;
    int fd;                  /* wire path: PQsocket's, read again after a libpq call (fd_stale) */
    int fd_stale;            /* a libpq call ran since fd was read: it may have closed the socket */
    int prepare;
    int unnamed;             /* named statements broken here (pooler) */
    int pipeline;            /* cfg->pipeline */
    int wire;                /* prepared statements run on the wire path */
    int async;               /* on an event loop's fiber: never block, wait in bt_io_wait */
    int blocking;            /* the socket is in blocking mode, for the wire path's reads */
    int just_sent;           /* wire path: the reply cannot be there yet, wait before recv */
    char txn_status;         /* the wire path's last ReadyForQuery: 'I', 'T' or 'E' */
    bt_textbuf out;          /* wire path: the Bind/Execute/Sync being sent */
    char *in;                /* wire path: bytes received, [in_pos, in_len) unread */
    size_t in_cap, in_pos, in_len;
    bt_stmt_slots stmts;     /* bt_pg_stmt by key */

    int32_t timeout_ms;      /* cfg->query_timeout_ms */
    uint32_t tag;            /* in its statements' names: "bt<tag>_<key>" */
    int in_txn;              /* pipeline mode: an explicit transaction is open */
    int npending;
    int timed_out;           /* a statement outlived it: the connection is given up */
    int aborted;             /* a wait was cut short by the stop path */
    int broken;              /* an event loop's send or read failed: the connection is lost */
    bt_textbuf text;         /* interpolation buffer for text mode */
    bt_pg_pending pending[BT_PG_MAX_PENDING];
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

/* Copies a libpq message as one line (no "ERROR:  " layout). */
void bt_pg_msg(char *out, size_t cap, const char *msg);
/* Classifies the error of result `r` (NULL: a connection-level failure);
 * always returns -1. */
int bt_pg_fail(const bt_pg_conn *c, const PGresult *r, bt_err *err);
/* Reads (and frees) the result of one statement into res. */
int bt_pg_result(const bt_pg_conn *c, PGresult *r, bt_result *res, bt_err *err);
/* The error a transaction pooler gives a named statement (26000, 42P05). */
int bt_pg_broken_name(const PGresult *r);
/* Switches this connection, and through a process-wide flag every other, to
 * unnamed statements, saying so once on stderr. */
void bt_pg_note_unnamed(bt_pg_conn *c);
/* The transaction lost its named statement to a pooler: retryable; returns -1. */
int bt_pg_lost_to_pooler(bt_err *err);
/* Pipeline mode's next result, without blocking an event loop. */
PGresult *bt_pg_next(bt_pg_conn *c);

/* driver_pg_pipeline.c */
/* What a statement does to the transaction, from its first word. */
enum { BT_PG_TXN_NONE = 0, BT_PG_TXN_BEGIN = 1, BT_PG_TXN_COMMIT = 2, BT_PG_TXN_ROLLBACK = 3 };
int bt_pg_txn_word(const char *sql);
/* Syncs and reads back every queued statement, in order; the first error is
 * reported, and the last statement's result goes to res. */
int bt_pg_pipeline_finish(bt_pg_conn *c, bt_result *res, bt_err *err);
/* Queues prepared statement `st` (bound) inside a transaction, or sends the
 * queue with it when its result is needed or the transaction ends (`txn`:
 * BT_PG_TXN_* of its SQL). */
int bt_pg_pipeline_execute(bt_pg_conn *c, bt_pg_stmt *st, int txn, bt_result *res, bt_err *err);

/* driver_pg_wire.c */
/* Puts the socket in blocking mode for the wire path's reads (on) or back in
 * the non-blocking mode libpq needs (off) before any libpq call. */
void bt_pg_blocking(bt_pg_conn *c, int on);
/* Runs prepared statement `st` (bound) on the wire: 0 done, -1 failed (err
 * filled), 1 its name is unknown to the server (a pooler: c->txn_status says
 * whether the transaction survived). */
int bt_pg_wire_execute(bt_pg_conn *c, const bt_pg_stmt *st, bt_result *res, bt_err *err);

#endif
