/* driver_pg.c: PostgreSQL through libpq (`pg_config --includedir`, -lpq;
 * compile with -DBT_HAVE_PGSQL).
 *
 * Prepared mode (cfg->prepare != 0): statement key K is prepared once per
 * connection as "bt<tag>_K" (its '?' rewritten to $1..$n) and then run with
 * PQexecPrepared, parameters in text format from per-statement buffers: one
 * Bind/Execute/Sync round trip per statement and no allocation in this file.
 * Text mode (--no-prepare): values are interpolated and sent with PQexec
 * (simple query protocol).
 *
 * PgBouncer before 1.21 in transaction pooling hands each transaction a
 * different server connection, so a named statement prepared on one is
 * missing ("does not exist", 26000) or already there from another client
 * ("already exists", 42P05) on the next.  On either error the connection
 * switches to unnamed extended-protocol statements (PQexecParams: Parse, Bind
 * and Execute in one round trip), sets a process-wide flag so every other
 * connection starts unnamed too, and says so once on stderr.  A statement that
 * failed that way outside a transaction is re-run at once; inside one the
 * transaction is already aborted, so it is reported as retryable (counted
 * under serialization failures, at most once per connection).  Poolers that
 * keep named statements working (PgBouncer 1.21+ with max_prepared_statements,
 * session pooling) never raise those errors and keep named statements.  The
 * tag makes the names the connection's own: a pooler's server connections
 * keep what other clients prepared (other runs, other workloads), and a "bt_0"
 * of theirs took a Bind meant for ours (wrong parameter count, 08P01, read as
 * a lost connection; with a like count, another statement's text run).
 *
 * Pipeline mode (cfg->pipeline, prepared mode only): inside an explicit
 * transaction, statements without a captured result are queued and sent in
 * one batch when a result is needed or the transaction ends; see
 * driver_pg_pipeline.c.  Outside transactions, in text mode and on unnamed statements
 * (pooler) every statement runs on its own as without --pipeline.
 *
 * Connection: PQconnectdbParams with application_name=benchtop, then the
 * extra conninfo keywords of cfg->options ("key=value key=value", libpq
 * syntax, quoting allowed), then host/port/user/password/dbname from cfg,
 * sslmode from cfg->ssl (1 -> require, 2 -> verify-full; 0 leaves libpq's
 * default "prefer", PGSSLMODE or an sslmode in options) and connect_timeout.
 * Empty fields are left out, so libpq's environment (PGHOST...), service file
 * and ~/.pgpass still apply.  A Unix socket directory in cfg->socket is used
 * as host when no host is given.
 *
 * --query-timeout (cfg->query_timeout_ms): libpq has no read timeout, so a
 * statement is sent with PQsend* and its reply awaited with poll() and a
 * deadline; when it passes, the statement is cancelled (PQcancel, from a
 * detached thread: it waits for the server to close the cancel connection,
 * which a hung server never does) and the connection is given up as timed
 * out, for the worker to replace.  Without a timeout the blocking calls run
 * (the fewest system calls).  Pipeline mode keeps its own blocking reads.
 *
 * Unread rows: on a plain socket a prepared statement runs on benchtop's own
 * wire path instead of libpq's (driver_pg_wire.c says when and why).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "clock.h"
#include "driver_pg.h"
#include "evloop.h"

/* Set once any connection finds named statements broken by a pooler. */
static atomic_int bt_pg_unnamed_everywhere;

/* ---- errors --------------------------------------------------------------- */

/* Copies a libpq message without its "ERROR:  " layout: newlines and tabs
 * become spaces so it stays one line, trailing space is dropped. */
void bt_pg_msg(char *out, size_t cap, const char *msg)
{
    size_t o = 0;
    for (const char *p = msg ? msg : ""; *p && o + 1 < cap; p++) {
        char ch = (*p == '\n' || *p == '\t') ? ' ' : *p;
        if (ch == ' ' && (o == 0 || out[o - 1] == ' '))
            continue;
        out[o++] = ch;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

static int bt_pg_is_lost(const bt_pg_conn *c, const char *st)
{
    if (PQstatus(c->pg) == CONNECTION_BAD)
        return 1;
    if (!st)
        return 0;
    return strcmp(st, "57P01") == 0 || strcmp(st, "57P02") == 0 || strcmp(st, "57P03") == 0 ||
           strncmp(st, "08", 2) == 0;
}

/* Classifies the error of result `r` (NULL: a connection-level failure);
 * always returns -1 for the caller to pass on. */
int bt_pg_fail(const bt_pg_conn *c, const PGresult *r, bt_err *err)
{
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *raw = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!raw || !raw[0])
        raw = r && PQresultErrorMessage(r)[0] ? PQresultErrorMessage(r) : PQerrorMessage(c->pg);
    if (r && !raw[0])
        raw = PQresStatus(PQresultStatus(r));
    return bt_pg_classify(c, st, raw, err);
}

/* An error's kind from its SQLSTATE `st` (NULL: none) and message `raw`. */
int bt_pg_classify(const bt_pg_conn *c, const char *st, const char *raw, bt_err *err)
{
    char msg[sizeof err->msg];
    bt_pg_msg(msg, sizeof msg, raw);
    int kind = BT_DERR_SQL, errk = BT_ERRK_FATAL;
    if (c->aborted) {
        bt_err_set(err, BT_DERR_LOST, BT_ERRK_LOST_CONNECTION, 0, "", "stopped");
        return -1;
    }
    if (c->broken) {
        bt_err_set(err, BT_DERR_LOST, BT_ERRK_LOST_CONNECTION, 0, "", msg[0] ? msg : "connection lost");
        return -1;
    }
    if (c->timed_out) {
        snprintf(msg, sizeof msg, "no reply within --query-timeout %.3g s (statement cancelled)",
                 c->timeout_ms / 1000.0);
        bt_err_set(err, BT_DERR_LOST, BT_ERRK_TIMEOUT, 0, "57014", msg);
        return -1;
    }
    if (bt_pg_is_lost(c, st)) {
        kind = BT_DERR_LOST;
        errk = BT_ERRK_LOST_CONNECTION;
    } else if (st && strcmp(st, "40P01") == 0) {
        kind = BT_DERR_RETRY;
        errk = BT_ERRK_DEADLOCK;
    } else if (st && (strcmp(st, "40001") == 0 || strcmp(st, "23505") == 0)) {
        /* 23505 too, as sysbench's pgsql driver does: under READ COMMITTED
         * two transactions that delete and re-insert the same id race into
         * a unique violation (the second DELETE finds the row already gone,
         * its INSERT then collides), which is a serialization failure in all
         * but name; InnoDB's locking reads make MySQL immune. */
        kind = BT_DERR_RETRY;
        errk = BT_ERRK_SERIALIZATION;
    } else if (st && strcmp(st, "55P03") == 0) {
        kind = BT_DERR_RETRY;
        errk = BT_ERRK_LOCK_TIMEOUT;
    }
    bt_err_set(err, kind, errk, st ? bt_sqlstate_code(st) : 0, st, msg);
    return -1;
}

/* ---- --query-timeout ---------------------------------------------------------- */

static void *bt_pg_cancel_main(void *arg)
{
    char buf[256];
    PQcancel(arg, buf, sizeof buf);
    PQfreeCancel(arg);
    return NULL;
}

static void bt_pg_cancel(bt_pg_conn *c)
{
    PGcancel *cn = PQgetCancel(c->pg);
    pthread_attr_t attr;
    pthread_t t;
    if (!cn)
        return;
    if (pthread_attr_init(&attr) != 0) {
        PQfreeCancel(cn);
        return;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, bt_pg_cancel_main, cn) != 0)
        PQfreeCancel(cn);
    pthread_attr_destroy(&attr);
}

static int64_t bt_pg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A non-blocking connection (event loop) may keep part of what PQsend*
 * queued: send it, reading whatever arrives meanwhile.  0, or -1 when the
 * connection broke or the wait was aborted. */
static int bt_pg_flush(bt_pg_conn *c)
{
    int f;
    while ((f = PQflush(c->pg)) == 1) {
        int r = bt_io_wait(PQsocket(c->pg), POLLIN | POLLOUT, -1, 0);
        if (r < 0) {
            c->aborted = bt_io_aborted();
            return -1;
        }
        if ((r & POLLIN) && !PQconsumeInput(c->pg)) {
            c->broken = 1;
            return -1;
        }
    }
    /* a failed send is a lost connection, as a blocking PQexec reports it */
    c->broken |= f != 0;
    return f == 0 ? 0 : -1;
}

/* Waits (in bt_io_wait: a poll() on a thread, the loop on a fiber) until
 * PQgetResult will not block, up to `deadline` (ms, 0: none).  0, or -1 on
 * timeout (c->timed_out, the statement cancelled), abort or a broken
 * connection. */
static int bt_pg_ready(bt_pg_conn *c, int64_t deadline)
{
    if (c->async && bt_pg_flush(c) != 0)
        return -1;
    while (PQisBusy(c->pg)) {
        int64_t left = -1;
        if (deadline) {
            left = deadline - bt_pg_now_ms();
            if (left < 0)
                left = 0;
        }
        int n = bt_io_wait(PQsocket(c->pg), POLLIN, left, 0);
        if (n == 0) {
            bt_pg_cancel(c);
            c->timed_out = 1;
            return -1;
        }
        if (n < 0) {
            c->aborted = bt_io_aborted();
            return -1;
        }
        if (!PQconsumeInput(c->pg)) {
            c->broken = 1;
            return -1;
        }
    }
    return 0;
}

/* The reply to a statement sent with PQsend* (`sent`: what it returned), as
 * PQexec would return it, or NULL when the deadline passed (c->timed_out),
 * the wait was aborted (c->aborted) or the connection broke. */
static PGresult *bt_pg_await(bt_pg_conn *c, int sent)
{
    if (!sent)
        return NULL;
    int64_t deadline = c->timeout_ms > 0 ? bt_pg_now_ms() + c->timeout_ms : 0;
    PGresult *last = NULL;
    for (;;) {
        if (bt_pg_ready(c, deadline) != 0) {
            if (c->timed_out || c->aborted) {
                PQclear(last);
                return NULL;
            }
            return last;
        }
        PGresult *r = PQgetResult(c->pg);
        if (!r)
            return last;
        PQclear(last);
        last = r;
    }
}

/* Pipeline mode's next result, without blocking an event loop. */
PGresult *bt_pg_next(bt_pg_conn *c)
{
    if (c->async && bt_pg_ready(c, 0) != 0)
        return NULL;
    return PQgetResult(c->pg);
}

/* Statements go out with PQsend* and their replies are awaited with
 * bt_io_wait under --query-timeout and on an event loop; else libpq's
 * blocking calls run (the fewest system calls). */
#define BT_PG_AWAITS(c) ((c)->timeout_ms > 0 || (c)->async)

static PGresult *bt_pg_exec(bt_pg_conn *c, const char *sql)
{
    return BT_PG_AWAITS(c) ? bt_pg_await(c, PQsendQuery(c->pg, sql)) : PQexec(c->pg, sql);
}

int bt_pg_oom(bt_err *err)
{
    bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "out of memory");
    return -1;
}

/* ---- connect ---------------------------------------------------------------- */

static void bt_pg_stmt_free(void *stmt)
{
    bt_pg_stmt *st = stmt;
    for (int i = 0; st->pv && i < st->nparams; i++)
        bt_textbuf_free(&st->pv[i].s);
    free(st->values);   /* st->pv too: one block */
    free(st->sql);
    free(st);
}

static void bt_pg_disconnect(void *conn)
{
    bt_pg_conn *c = conn;
    if (!c)
        return;
    if (c->pg)
        PQfinish(c->pg);
    bt_stmt_slots_free(&c->stmts, bt_pg_stmt_free);
    bt_textbuf_free(&c->text);
    bt_textbuf_free(&c->out);
    free(c->in);
    free(c);
}

static void bt_pg_ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Adds a keyword unless its value is empty: an empty value would override
 * libpq's environment and service file instead of deferring to them. */
static void bt_pg_kv(const char **keys, const char **vals, int *n, const char *k, const char *v)
{
    if (v && v[0]) {
        keys[*n] = k;
        vals[(*n)++] = v;
    }
}

/* On an event loop: PQconnectStartParams, then PQconnectPoll each time the
 * socket is ready (libpq applies connect_timeout only in its blocking
 * connect, so the deadline is kept here).  NULL after a timeout or an abort. */
static PGconn *bt_pg_connect_async(const char *const *keys, const char *const *vals, int expand, int32_t timeout_s)
{
    PGconn *pg = PQconnectStartParams(keys, vals, expand);
    if (!pg || PQstatus(pg) == CONNECTION_BAD)
        return pg;
    int64_t deadline = timeout_s > 0 ? bt_pg_now_ms() + (int64_t)timeout_s * 1000 : 0;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int64_t left = -1;
        if (deadline) {
            left = deadline - bt_pg_now_ms();
            if (left < 0)
                left = 0;
        }
        /* the socket may be a new one under an old number (libpq tries each
         * address in turn): registered afresh every time */
        int n = bt_io_wait(PQsocket(pg), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, left, 1);
        if (n <= 0) {
            bt_io_forget(PQsocket(pg));
            PQfinish(pg);
            return NULL;
        }
        st = PQconnectPoll(pg);
    }
    return pg;
}

static int bt_pg_connect(const bt_conn_config *cfg, void **conn, bt_err *err)
{
    const char *keys[12], *vals[12];
    char port[16], timeout[16];
    int n = 0, expand = 0, rc = -1;
    bt_pg_conn *c = NULL;
    *conn = NULL;

    keys[n] = "application_name";
    vals[n++] = "benchtop";
    if (cfg->options && cfg->options[0]) {
        /* The first dbname is expanded as a conninfo string; the keywords
         * after it override what it sets. */
        if (!strchr(cfg->options, '=')) {
            bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "",
                       "PostgreSQL options must be conninfo keywords: key=value key=value");
            goto out;
        }
        keys[n] = "dbname";
        vals[n++] = cfg->options;
        expand = 1;
    }
    bt_pg_kv(keys, vals, &n, "host", cfg->host && cfg->host[0] ? cfg->host : cfg->socket);
    if (cfg->port > 0) {
        snprintf(port, sizeof port, "%d", (int)cfg->port);
        bt_pg_kv(keys, vals, &n, "port", port);
    }
    bt_pg_kv(keys, vals, &n, "user", cfg->user);
    bt_pg_kv(keys, vals, &n, "password", cfg->password);
    bt_pg_kv(keys, vals, &n, "dbname", cfg->database);
    if (cfg->ssl > 0)
        bt_pg_kv(keys, vals, &n, "sslmode", cfg->ssl >= 2 ? "verify-full" : "require");
    if (cfg->connect_timeout_s > 0) {
        snprintf(timeout, sizeof timeout, "%d", (int)cfg->connect_timeout_s);
        bt_pg_kv(keys, vals, &n, "connect_timeout", timeout);
    }
    keys[n] = NULL;
    vals[n] = NULL;

    /* on a cache line's start, so its first two lines hold the wire path's fields */
    c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63);
    if (!c) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", "out of memory");
        goto out;
    }
    memset(c, 0, sizeof *c);
    c->last_key = -1;
    c->prepare = cfg->prepare;
    c->pipeline = cfg->pipeline;
    c->timeout_ms = cfg->query_timeout_ms > 0 ? cfg->query_timeout_ms : 0;
    c->async = bt_fiber_self() != NULL;
    c->pg = c->async ? bt_pg_connect_async(keys, vals, expand, cfg->connect_timeout_s)
                     : PQconnectdbParams(keys, vals, expand);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        char msg[sizeof err->msg];
        const char *why = c->async ? (bt_io_aborted() ? BT_CONNECT_UNANSWERED : "timeout expired") : "out of memory";
        bt_pg_msg(msg, sizeof msg, c->pg ? PQerrorMessage(c->pg) : why);
        if (c->pg && c->async)
            bt_io_forget(PQsocket(c->pg));
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", msg);
        goto out;
    }
    /* libpq prints NOTICEs on stderr by default, which would scribble over
     * the live display (DROP ... IF EXISTS during cleanup, for one). */
    PQsetNoticeProcessor(c->pg, bt_pg_ignore_notice, NULL);
    if (c->async && PQsetnonblocking(c->pg, 1) != 0) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", "cannot make the connection non-blocking");
        goto out;
    }
    c->fd = PQsocket(c->pg);
    c->tag = (uint32_t)PQbackendPID(c->pg) * 2654435761u ^ (uint32_t)bt_now_ns();
    c->wire = c->prepare && !c->pipeline && c->timeout_ms == 0 && !PQsslInUse(c->pg) &&
              PQprotocolVersion(c->pg) == 3;
    rc = 0;
out:
    if (rc == 0)
        *conn = c;
    else
        bt_pg_disconnect(c);
    return rc;
}

static int bt_pg_socket(void *conn)
{
    bt_pg_conn *c = conn;
    return c && c->pg ? PQsocket(c->pg) : -1;
}

/* ---- results ---------------------------------------------------------------- */

int64_t bt_pg_parse_i64(const char *s)
{
    int64_t v = 0;
    int neg = (*s == '-');
    if (*s == '-' || *s == '+')
        s++;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (*s - '0');
    return neg ? -v : v;
}

/* Reads (and frees) the result of one statement into res. */
int bt_pg_result(const bt_pg_conn *c, PGresult *r, bt_result *res, bt_err *err)
{
    int rc = -1;
    if (!r)
        return bt_pg_fail(c, NULL, err);
    switch (PQresultStatus(r)) {
    case PGRES_TUPLES_OK:
    case PGRES_SINGLE_TUPLE:
        if (res) {
            res->rows = PQntuples(r);
            if (res->want && res->rows > 0 && PQnfields(r) > 0 && !PQgetisnull(r, 0, 0)) {
                const char *v = PQgetvalue(r, 0, 0);
                res->has_value = 1;
                if (res->want == 1) {
                    res->i = bt_pg_parse_i64(v);
                } else {
                    int len = PQgetlength(r, 0, 0);
                    uint32_t n = len < BT_SREG_CAP - 1 ? (uint32_t)len : BT_SREG_CAP - 1;
                    memcpy(res->s, v, n);
                    res->s[n] = '\0';
                    res->slen = n;
                }
            }
        }
        rc = 0;
        break;
    case PGRES_COMMAND_OK:
    case PGRES_EMPTY_QUERY:
        if (res)
            res->rows = bt_pg_parse_i64(PQcmdTuples(r));
        rc = 0;
        break;
    case PGRES_COPY_IN:
    case PGRES_COPY_OUT:
    case PGRES_COPY_BOTH:
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "COPY is not supported in a workload");
        break;
    default:
        bt_pg_fail(c, r, err);
        break;
    }
    PQclear(r);
    return rc;
}

static void bt_pg_res_reset(bt_result *res)
{
    if (res) {
        res->has_value = 0;
        res->rows = 0;
    }
}

/* ---- text protocol -------------------------------------------------------- */

static size_t bt_pg_quote(void *conn, char *buf, size_t cap, const char *s, size_t len)
{
    bt_pg_conn *c = conn;
    int error = 0;
    if (cap < 2 * len + 3)
        return 0;
    buf[0] = '\'';
    size_t n = PQescapeStringConn(c->pg, buf + 1, s, len, &error);
    /* On invalid multibyte input libpq still writes a safe, truncated string. */
    buf[n + 1] = '\'';
    buf[n + 2] = '\0';
    return n + 2;
}

static int bt_pg_text_execute(bt_pg_conn *c, const char *sql, const bt_value *params,
                              int32_t nparams, bt_result *res, bt_err *err)
{
    if (bt_sql_interpolate(&bt_driver_pgsql, c, sql, params, nparams, &c->text, err) != 0)
        return -1;
    return bt_pg_result(c, bt_pg_exec(c, c->text.buf), res, err);
}

/* ---- prepared statements ------------------------------------------------- */

/* '?' -> $1..$n, leaving quoted literals and identifiers alone. */
static char *bt_pg_rewrite(const char *sql, int *nparams)
{
    size_t len = strlen(sql), q = 0;
    for (const char *p = sql; *p; p++)
        q += (*p == '?');
    char *out = malloc(len + q * 6 + 1);
    if (!out)
        return NULL;
    char *o = out, quote = 0;
    int n = 0;
    for (const char *p = sql; *p; p++) {
        if (quote) {
            if (*p == quote)
                quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (*p == '?') {
            o += sprintf(o, "$%d", ++n);
            continue;
        }
        *o++ = *p;
    }
    *o = '\0';
    *nparams = n;
    return out;
}

static bt_pg_stmt *bt_pg_stmt_get(bt_pg_conn *c, int32_t key, const char *sql, bt_err *err)
{
    /* the table's slot is one more cold line per statement on an event loop */
    if (key == c->last_key)
        return c->last_st;
    int fresh;
    bt_pg_stmt *st = bt_stmt_slots_get(&c->stmts, key, sizeof *st, &fresh, err);
    if (!st)
        return NULL;
    if (fresh) {
        /* in its slot already: freed by disconnect even if half built */
        snprintf(st->name, sizeof st->name, "bt%08x_%d", (unsigned)c->tag, (int)key);
        int np = 0;
        st->sql = bt_pg_rewrite(sql, &np);
        if (!st->sql)
            goto oom;
        if (np > 0) {
            /* one block, the values' pointers then their buffers: one line
             * fewer to fetch per statement for a few parameters */
            st->values = calloc((size_t)np, sizeof *st->values + sizeof *st->pv);
            if (!st->values)
                goto oom;
            st->pv = (bt_pg_param *)(void *)(st->values + np);
        }
        st->nparams = np;
    }
    c->last_key = key;
    c->last_st = st;
    return st;
oom:
    bt_pg_oom(err);
    return NULL;
}

/* Writes v into buf as decimal text, NUL-terminated; returns its length. */
static size_t bt_pg_fmt_i64(char *buf, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    char *o = buf;
    if (v < 0)
        *o++ = '-';
    while (n)
        *o++ = tmp[--n];
    *o = '\0';
    return (size_t)(o - buf);
}

/* Points st->values at this call's parameters, formatted as text (their
 * lengths in st->pv). */
static int bt_pg_bind(bt_pg_stmt *st, const bt_value *params, bt_err *err)
{
    for (int i = 0; i < st->nparams; i++) {
        const bt_value *v = &params[i];
        bt_pg_param *p = &st->pv[i];
        if (v->type == BT_VAL_NULL) {
            st->values[i] = NULL;
            p->len = 0;
        } else if (v->type == BT_VAL_INT) {
            p->len = bt_pg_fmt_i64(p->num, v->i);
            st->values[i] = p->num;
        } else {
            /* text-format parameters are NUL-terminated: copy */
            p->s.len = 0;
            if (bt_textbuf_append(&p->s, v->s, v->len) != 0)
                return bt_pg_oom(err);
            st->values[i] = p->s.buf;
            p->len = strlen(p->s.buf);  /* as libpq reads it: to a NUL inside */
        }
    }
    return 0;
}

int bt_pg_broken_name(const PGresult *r)
{
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return st && (strcmp(st, "26000") == 0 || strcmp(st, "42P05") == 0);
}

/* Named statements failed the way a transaction pooler makes them fail:
 * switch to unnamed ones here and, through the flag, everywhere. */
void bt_pg_note_unnamed(bt_pg_conn *c)
{
    c->unnamed = 1;
    if (atomic_exchange(&bt_pg_unnamed_everywhere, 1) == 0)
        fprintf(stderr, "benchtop: PgBouncer in transaction pooling: using unnamed prepared "
                        "statements\n");
}

int bt_pg_lost_to_pooler(bt_err *err)
{
    bt_err_set(err, BT_DERR_RETRY, BT_ERRK_SERIALIZATION, bt_sqlstate_code("26000"), "26000",
               "named prepared statement lost to transaction pooling; "
               "switched to unnamed statements, transaction retried");
    return -1;
}

/* Returns 1 when the failed statement can simply be re-run, -1 (err filled)
 * when its transaction is lost. */
static int bt_pg_go_unnamed(bt_pg_conn *c, bt_err *err)
{
    bt_pg_note_unnamed(c);
    if (PQtransactionStatus(c->pg) != PQTRANS_INERROR)
        return 1;
    return bt_pg_lost_to_pooler(err);
}

static int bt_pg_exec_text(void *conn, const char *sql, bt_result *res, bt_err *err)
{
    bt_pg_conn *c = conn;
    bt_pg_res_reset(res);
    bt_pg_blocking(c, 0);
    if (c->pipeline) {
        int txn = bt_pg_txn_word(sql);
        if (c->npending) {
            int rc = bt_pg_pipeline_finish(c, NULL, err);
            /* a ROLLBACK discards the queued work and its error anyway */
            if (rc != 0 && (txn != BT_PG_TXN_ROLLBACK || err->kind == BT_DERR_LOST))
                return rc;
        }
        c->in_txn = txn == BT_PG_TXN_BEGIN || (c->in_txn && txn == BT_PG_TXN_NONE);
    }
    return bt_pg_result(c, bt_pg_exec(c, sql), res, err);
}

/* Out of line: its message buffer would widen bt_pg_execute's frame, which a
 * fiber's return from its wait walks through (evloop.c's prefetch_stack). */
__attribute__((noinline)) static int bt_pg_count_mismatch(const bt_pg_stmt *st, int32_t nparams, bt_err *err)
{
    char msg[128];
    snprintf(msg, sizeof msg, "statement has %d placeholders but %d values were given", st->nparams, (int)nparams);
    bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", msg);
    return -1;
}

static int bt_pg_execute(void *conn, int32_t key, const char *sql, const bt_value *params,
                         int32_t nparams, bt_result *res, bt_err *err)
{
    bt_pg_conn *c = conn;
    bt_pg_res_reset(res);
    if (!c->prepare)
        return bt_pg_text_execute(c, sql, params, nparams, res, err);
    bt_pg_stmt *st = bt_pg_stmt_get(c, key, sql, err);
    if (!st)
        return -1;
    if (nparams != st->nparams)
        return bt_pg_count_mismatch(st, nparams, err);
    if (bt_pg_bind(st, params, err) != 0)
        return -1;
    /* A relaxed read: another connection's discovery only needs to show up
     * eventually, and a late one costs one more retried statement at most. */
    if (!c->unnamed && atomic_load_explicit(&bt_pg_unnamed_everywhere, memory_order_relaxed))
        c->unnamed = 1;
    if (c->pipeline && !c->unnamed) {
        int txn = bt_pg_txn_word(sql);
        if (c->npending || c->in_txn || txn == BT_PG_TXN_BEGIN)
            return bt_pg_pipeline_execute(c, st, txn, res, err);
    }
    if (!c->unnamed) {
        PGresult *r;
        if (!st->prepared) {
            bt_pg_blocking(c, 0);
            r = BT_PG_AWAITS(c) ? bt_pg_await(c, PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL))
                                  : PQprepare(c->pg, st->name, st->sql, st->nparams, NULL);
            if (r && PQresultStatus(r) == PGRES_COMMAND_OK) {
                st->prepared = 1;
                PQclear(r);
            } else if (r && bt_pg_broken_name(r)) {
                PQclear(r);
                if (bt_pg_go_unnamed(c, err) < 0)
                    return -1;
            } else {
                bt_pg_fail(c, r, err);
                PQclear(r);
                return -1;
            }
        }
        if (!c->unnamed && c->wire) {
            int w = bt_pg_wire_execute(c, st, res, err);
            if (w <= 0)
                return w;
            bt_pg_note_unnamed(c);
            if (c->txn_status == 'E')
                return bt_pg_lost_to_pooler(err);
        } else if (!c->unnamed) {
            bt_pg_blocking(c, 0);
            r = BT_PG_AWAITS(c)
                    ? bt_pg_await(c, PQsendQueryPrepared(c->pg, st->name, st->nparams, st->values, NULL, NULL, 0))
                    : PQexecPrepared(c->pg, st->name, st->nparams, st->values, NULL, NULL, 0);
            if (!r || PQresultStatus(r) != PGRES_FATAL_ERROR || !bt_pg_broken_name(r))
                return bt_pg_result(c, r, res, err);
            PQclear(r);
            if (bt_pg_go_unnamed(c, err) < 0)
                return -1;
        }
    }
    bt_pg_blocking(c, 0);
    PGresult *r = BT_PG_AWAITS(c)
                      ? bt_pg_await(c, PQsendQueryParams(c->pg, st->sql, st->nparams, NULL, st->values, NULL,
                                                         NULL, 0))
                      : PQexecParams(c->pg, st->sql, st->nparams, NULL, st->values, NULL, NULL, 0);
    return bt_pg_result(c, r, res, err);
}

const bt_driver bt_driver_pgsql = {
    .name = "postgresql",
    .connect = bt_pg_connect,
    .disconnect = bt_pg_disconnect,
    .execute = bt_pg_execute,
    .exec_text = bt_pg_exec_text,
    .quote = bt_pg_quote,
    .thread_end = NULL,
    .socket = bt_pg_socket,
    .loops = 1,
};
