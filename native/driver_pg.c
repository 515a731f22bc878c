/* driver_pg.c: PostgreSQL through libpq (`pg_config --includedir`, -lpq;
 * compile with -DBT_HAVE_PGSQL).
 *
 * Prepared mode (cfg->prepare != 0): statement key K is prepared once per
 * connection as "bt_K" (its '?' rewritten to $1..$n) and then run with
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
 * session pooling) never raise those errors and keep named statements.
 *
 * Pipeline mode (cfg->pipeline, prepared mode only): inside an explicit
 * transaction, statements without a captured result are queued and sent in
 * one batch when a result is needed or the transaction ends; see "pipeline
 * mode" below.  Outside transactions, in text mode and on unnamed statements
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
 * Unread rows: libpq reads every row of a result into its PGresult, parsing
 * and copying each value, though a workload reads at most the first column
 * of the first row.  So on a plain socket (no TLS), without --query-timeout,
 * pipeline mode or the pooler fallback, a prepared statement runs on the
 * wire here ("wire path" below): Bind, Execute and Sync in one send, the
 * reply walked message by message in this connection's buffer, DataRows
 * counted and skipped.  libpq made the connection and prepares the
 * statements, and stays idle in between (its replies and ours both end at
 * ReadyForQuery), so its own calls (BEGIN, COMMIT, first prepares) go on
 * working on the same socket.  The wire path's reads block in recv() (the
 * socket is switched to blocking for them, back to non-blocking for libpq).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <libpq-fe.h>

#include "driver.h"
#include "stmt_slots.h"

/* Set once any connection finds named statements broken by a pooler. */
static atomic_int bt_pg_unnamed_everywhere;

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

/* ---- errors --------------------------------------------------------------- */

/* Copies a libpq message without its "ERROR:  " layout: newlines and tabs
 * become spaces so it stays one line, trailing space is dropped. */
static void bt_pg_msg(char *out, size_t cap, const char *msg)
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
static int bt_pg_classify(const bt_pg_conn *c, const char *st, const char *raw, bt_err *err);

static int bt_pg_fail(const bt_pg_conn *c, const PGresult *r, bt_err *err)
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
static int bt_pg_classify(const bt_pg_conn *c, const char *st, const char *raw, bt_err *err)
{
    char msg[sizeof err->msg];
    bt_pg_msg(msg, sizeof msg, raw);
    int kind = BT_DERR_SQL, errk = BT_ERRK_FATAL;
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

/* The reply to a statement sent with PQsend* (`sent`: what it returned), as
 * PQexec would return it, or NULL when the deadline passed (c->timed_out)
 * or the connection broke. */
static PGresult *bt_pg_await(bt_pg_conn *c, int sent)
{
    if (!sent)
        return NULL;
    int64_t deadline = bt_pg_now_ms() + c->timeout_ms;
    struct pollfd pfd = {.fd = PQsocket(c->pg), .events = POLLIN};
    PGresult *last = NULL;
    for (;;) {
        while (PQisBusy(c->pg)) {
            int64_t left = deadline - bt_pg_now_ms();
            int n = left > 0 ? poll(&pfd, 1, (int)left) : 0;
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0) {
                bt_pg_cancel(c);
                c->timed_out = 1;
                PQclear(last);
                return NULL;
            }
            if (n < 0 || !PQconsumeInput(c->pg))
                return last;
        }
        PGresult *r = PQgetResult(c->pg);
        if (!r)
            return last;
        PQclear(last);
        last = r;
    }
}

static PGresult *bt_pg_exec(bt_pg_conn *c, const char *sql)
{
    return c->timeout_ms > 0 ? bt_pg_await(c, PQsendQuery(c->pg, sql)) : PQexec(c->pg, sql);
}

static int bt_pg_oom(bt_err *err)
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
    free(st->pv);
    free(st->values);
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

    c = calloc(1, sizeof *c);
    if (!c) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", "out of memory");
        goto out;
    }
    c->prepare = cfg->prepare;
    c->pipeline = cfg->pipeline;
    c->timeout_ms = cfg->query_timeout_ms > 0 ? cfg->query_timeout_ms : 0;
    c->pg = PQconnectdbParams(keys, vals, expand);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        char msg[sizeof err->msg];
        bt_pg_msg(msg, sizeof msg, c->pg ? PQerrorMessage(c->pg) : "out of memory");
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", msg);
        goto out;
    }
    /* libpq prints NOTICEs on stderr by default, which would scribble over
     * the live display (DROP ... IF EXISTS during cleanup, for one). */
    PQsetNoticeProcessor(c->pg, bt_pg_ignore_notice, NULL);
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

static int64_t bt_pg_parse_i64(const char *s)
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
static int bt_pg_result(const bt_pg_conn *c, PGresult *r, bt_result *res, bt_err *err)
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
    int fresh;
    bt_pg_stmt *st = bt_stmt_slots_get(&c->stmts, key, sizeof *st, &fresh, err);
    if (!st || !fresh)
        return st;
    /* in its slot already: freed by disconnect even if half built */
    snprintf(st->name, sizeof st->name, "bt_%d", (int)key);
    int np = 0;
    st->sql = bt_pg_rewrite(sql, &np);
    if (!st->sql)
        goto oom;
    if (np > 0) {
        st->values = calloc((size_t)np, sizeof *st->values);
        st->pv = calloc((size_t)np, sizeof *st->pv);
        if (!st->values || !st->pv)
            goto oom;
    }
    st->nparams = np;
    return st;
oom:
    bt_pg_oom(err);
    return NULL;
}

static char *bt_pg_fmt_i64(char *buf, int64_t v)
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
    return buf;
}

/* Points st->values at this call's parameters, formatted as text. */
static int bt_pg_bind(bt_pg_stmt *st, const bt_value *params, bt_err *err)
{
    for (int i = 0; i < st->nparams; i++) {
        const bt_value *v = &params[i];
        bt_pg_param *p = &st->pv[i];
        if (v->type == BT_VAL_NULL) {
            st->values[i] = NULL;
        } else if (v->type == BT_VAL_INT) {
            st->values[i] = bt_pg_fmt_i64(p->num, v->i);
        } else {
            /* text-format parameters are NUL-terminated: copy */
            p->s.len = 0;
            if (bt_textbuf_append(&p->s, v->s, v->len) != 0)
                return bt_pg_oom(err);
            st->values[i] = p->s.buf;
        }
    }
    return 0;
}

static int bt_pg_broken_name(const PGresult *r)
{
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return st && (strcmp(st, "26000") == 0 || strcmp(st, "42P05") == 0);
}

/* Named statements failed the way a transaction pooler makes them fail:
 * switch to unnamed ones here and, through the flag, everywhere. */
static void bt_pg_note_unnamed(bt_pg_conn *c)
{
    c->unnamed = 1;
    if (atomic_exchange(&bt_pg_unnamed_everywhere, 1) == 0)
        fprintf(stderr, "benchtop: PgBouncer in transaction pooling: using unnamed prepared "
                        "statements\n");
}

static int bt_pg_lost_to_pooler(bt_err *err)
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

/* ---- wire path ---------------------------------------------------------------
 * (see the top of this file).  Protocol 3 messages: a type byte, then a
 * big-endian int32 length that counts itself but not the type. */

/* The wire path waits for a reply inside recv(): one system call per
 * reply instead of poll() + recv(), 3-4% of a point select's client CPU.
 * libpq needs its socket non-blocking (it reads on until EAGAIN), so every
 * libpq call switches it back first; a workload that mixes the two (BEGIN
 * and COMMIT around prepared statements) switches twice per transaction.
 * When fcntl fails the socket stays as it is and the reads poll. */
static void bt_pg_blocking(bt_pg_conn *c, int on)
{
    if (c->blocking == on)
        return;
    int fd = PQsocket(c->pg);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fl >= 0 && fcntl(fd, F_SETFL, on ? fl & ~O_NONBLOCK : fl | O_NONBLOCK) == 0)
        c->blocking = on;
}

enum { BT_PG_IN_MIN = 65536, BT_PG_MSG_MAX = 1 << 30 };

static int bt_pg_put32(bt_textbuf *b, uint32_t v)
{
    char x[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
    return bt_textbuf_append(b, x, 4);
}

static int bt_pg_put16(bt_textbuf *b, uint16_t v)
{
    char x[2] = {(char)(v >> 8), (char)v};
    return bt_textbuf_append(b, x, 2);
}

static uint32_t bt_pg_get32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static int bt_pg_wire_lost(bt_err *err, const char *why)
{
    bt_err_set(err, BT_DERR_LOST, BT_ERRK_LOST_CONNECTION, 0, "", why);
    return -1;
}

/* Bind (text parameters, text results), Execute (all rows), Sync. */
static int bt_pg_wire_message(bt_pg_conn *c, const bt_pg_stmt *st)
{
    bt_textbuf *b = &c->out;
    b->len = 0;
    /* Bind's length is written once its body is (one pass over the values) */
    if (bt_textbuf_append(b, "B", 1) || bt_pg_put32(b, 0) || bt_textbuf_append(b, "", 1) ||
        bt_textbuf_append(b, st->name, strlen(st->name) + 1) || bt_pg_put16(b, 0) ||
        bt_pg_put16(b, (uint16_t)st->nparams))
        return -1;
    for (int i = 0; i < st->nparams; i++) {
        const char *v = st->values[i];
        size_t n = v ? strlen(v) : 0;
        if (bt_pg_put32(b, v ? (uint32_t)n : 0xffffffffu) || (n && bt_textbuf_append(b, v, n)))
            return -1;
    }
    if (bt_pg_put16(b, 0))  /* result formats: all text */
        return -1;
    size_t body = b->len - 1;
    if (body > BT_PG_MSG_MAX)
        return -1;
    b->buf[1] = (char)(body >> 24);
    b->buf[2] = (char)(body >> 16);
    b->buf[3] = (char)(body >> 8);
    b->buf[4] = (char)body;
    /* bt_textbuf_append copies the NULs inside: the messages are binary */
    static const char tail[] = {'E', 0, 0, 0, 9, 0, 0, 0, 0, 0,
                                'S', 0, 0, 0, 4};
    return bt_textbuf_append(b, tail, sizeof tail);
}

static int bt_pg_wire_send(bt_pg_conn *c, bt_err *err)
{
    int fd = PQsocket(c->pg);
    size_t off = 0;
    while (off < c->out.len) {
        ssize_t n = send(fd, c->out.buf + off, c->out.len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return bt_pg_wire_lost(err, strerror(errno));
        } else {
            return bt_pg_wire_lost(err, n < 0 ? strerror(errno) : "server closed the connection");
        }
    }
    return 0;
}

/* At least `need` unread bytes in c->in (a blocking socket waits in recv; a
 * non-blocking one with poll, then reads all there is). */
static int bt_pg_wire_fill(bt_pg_conn *c, size_t need, bt_err *err)
{
    if (c->in_len - c->in_pos >= need)
        return 0;
    if (c->in_pos > 0) {
        memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
        c->in_len -= c->in_pos;
        c->in_pos = 0;
    }
    if (need > c->in_cap || c->in_cap - c->in_len < BT_PG_IN_MIN / 4) {
        size_t cap = c->in_cap ? c->in_cap : BT_PG_IN_MIN;
        while (cap < need || cap - c->in_len < BT_PG_IN_MIN / 4)
            cap *= 2;
        char *in = realloc(c->in, cap);
        if (!in)
            return bt_pg_oom(err);
        c->in = in;
        c->in_cap = cap;
    }
    int fd = PQsocket(c->pg);
    while (c->in_len < need) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (!c->blocking && poll(&pfd, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return bt_pg_wire_lost(err, strerror(errno));
        }
        ssize_t n = recv(fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0)
            c->in_len += (size_t)n;
        else if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        else
            return bt_pg_wire_lost(err, n < 0 ? strerror(errno) : "server closed the connection");
    }
    return 0;
}

/* Passes over `n` bytes without keeping them (a DataRow nobody reads). */
static int bt_pg_wire_skip(bt_pg_conn *c, size_t n, bt_err *err)
{
    while (n > 0) {
        if (c->in_pos == c->in_len) {
            c->in_pos = c->in_len = 0;
            if (bt_pg_wire_fill(c, 1, err) != 0)
                return -1;
        }
        size_t take = c->in_len - c->in_pos < n ? c->in_len - c->in_pos : n;
        c->in_pos += take;
        n -= take;
    }
    return 0;
}

/* The first column of a DataRow `body` (`len` bytes) into res. */
static void bt_pg_wire_capture(const char *body, size_t len, bt_result *res)
{
    if (len < 6 || ((unsigned char)body[0] << 8 | (unsigned char)body[1]) == 0)
        return;
    uint32_t n = bt_pg_get32(body + 2);
    if (n == 0xffffffffu || 6 + (size_t)n > len)
        return;  /* NULL */
    const char *v = body + 6;
    res->has_value = 1;
    if (res->want == 1) {
        char num[32];
        size_t k = n < sizeof num - 1 ? n : sizeof num - 1;
        memcpy(num, v, k);
        num[k] = '\0';
        res->i = bt_pg_parse_i64(num);
    } else {
        uint32_t k = n < BT_SREG_CAP - 1 ? n : BT_SREG_CAP - 1;
        memcpy(res->s, v, k);
        res->s[k] = '\0';
        res->slen = k;
    }
}

/* The number at the end of a command tag ("UPDATE 3", "INSERT 0 1"), as
 * PQcmdTuples reads it; 0 for tags without one ("BEGIN"). */
static int64_t bt_pg_tag_rows(const char *tag, size_t len)
{
    size_t i = len;
    while (i > 0 && tag[i - 1] >= '0' && tag[i - 1] <= '9')
        i--;
    if (i == len || i == 0 || tag[i - 1] != ' ')
        return 0;
    int64_t v = 0;
    for (; i < len; i++)
        v = v * 10 + (tag[i] - '0');
    return v;
}

/* Runs prepared statement `st` (bound) on the wire: 0 done, -1 failed (err
 * filled), 1 its name is unknown to the server (a pooler: c->txn_status says
 * whether the transaction survived). */
static int bt_pg_wire_execute(bt_pg_conn *c, const bt_pg_stmt *st, bt_result *res, bt_err *err)
{
    bt_pg_blocking(c, 1);
    if (bt_pg_wire_message(c, st) != 0)
        return bt_pg_oom(err);
    if (bt_pg_wire_send(c, err) != 0)
        return -1;
    char state[6] = "", msg[sizeof err->msg] = "";
    int64_t rows = 0, tag_rows = 0;
    int failed = 0;
    c->in_pos = c->in_len = 0;
    for (;;) {
        if (bt_pg_wire_fill(c, 5, err) != 0)
            return -1;
        char type = c->in[c->in_pos];
        uint32_t len = bt_pg_get32(c->in + c->in_pos + 1);
        if (len < 4 || len > BT_PG_MSG_MAX)
            return bt_pg_wire_lost(err, "malformed reply from the server");
        size_t body = len - 4;
        if (type == 'D' && !(rows == 0 && res && res->want)) {
            rows++;
            if (bt_pg_wire_skip(c, 5 + body, err) != 0)
                return -1;
            continue;
        }
        if (type != 'D' && type != 'C' && type != 'E' && type != 'Z' && type != '2' && type != 'n' &&
            type != 'I' && type != 'N' && type != 'S' && type != 'A')
            return bt_pg_wire_lost(err, "unexpected message from the server");
        if (bt_pg_wire_fill(c, 5 + body, err) != 0)
            return -1;
        const char *b = c->in + c->in_pos + 5;
        if (type == 'D') {
            bt_pg_wire_capture(b, body, res);
            rows++;
        } else if (type == 'C') {
            tag_rows = bt_pg_tag_rows(b, body > 0 && b[body - 1] == '\0' ? body - 1 : body);
        } else if (type == 'E') {
            failed = 1;
            for (size_t i = 0; i < body && b[i];) {
                const char *v = b + i + 1;
                size_t n = strnlen(v, body - i - 1);
                if (b[i] == 'C')
                    snprintf(state, sizeof state, "%.*s", (int)n, v);
                else if (b[i] == 'M')
                    snprintf(msg, sizeof msg, "%.*s", (int)n, v);
                i += n + 2;
            }
        } else if (type == 'Z') {
            c->txn_status = body > 0 ? b[0] : 'I';
            c->in_pos += 5 + body;
            break;
        }
        c->in_pos += 5 + body;
    }
    if (failed) {
        if (strcmp(state, "26000") == 0 || strcmp(state, "42P05") == 0)
            return 1;
        return bt_pg_classify(c, state[0] ? state : NULL, msg[0] ? msg : "statement failed", err);
    }
    if (res)
        res->rows = rows > 0 ? rows : tag_rows;
    return 0;
}

/* ---- pipeline mode ----------------------------------------------------------
 * Inside an explicit transaction, statements whose result nobody reads (no
 * capture) are only queued; they go out together, with one Sync, when a
 * statement needs its result, when the transaction ends (COMMIT/ROLLBACK,
 * through execute or exec_text) or when the queue is full.  A whole
 * sysbench read-write transaction is then one round trip.  The price: an
 * error in a queued statement is reported by the statement that flushed the
 * queue (usually COMMIT), with the failing statement's own message and code,
 * and the rows count of a queued statement is not known (reported as 0).
 */

enum { BT_PG_TXN_NONE = 0, BT_PG_TXN_BEGIN = 1, BT_PG_TXN_COMMIT = 2, BT_PG_TXN_ROLLBACK = 3 };

static int bt_pg_word_is(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < n; i++)
        if ((s[i] & ~0x20) != word[i])
            return 0;
    char next = s[n];
    return !((next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') || next == '_');
}

static int bt_pg_txn_word(const char *sql)
{
    while (*sql == ' ' || *sql == '\t' || *sql == '\n' || *sql == '\r')
        sql++;
    if (bt_pg_word_is(sql, "BEGIN") || bt_pg_word_is(sql, "START"))
        return BT_PG_TXN_BEGIN;
    if (bt_pg_word_is(sql, "COMMIT") || bt_pg_word_is(sql, "END"))
        return BT_PG_TXN_COMMIT;
    if (bt_pg_word_is(sql, "ROLLBACK") || bt_pg_word_is(sql, "ABORT"))
        return BT_PG_TXN_ROLLBACK;
    return BT_PG_TXN_NONE;
}

/* Syncs and reads back every queued statement, in order; the first error is
 * reported, and the last statement's result goes to res. */
static int bt_pg_pipeline_finish(bt_pg_conn *c, bt_result *res, bt_err *err)
{
    int rc = 0, pooler = 0;
    if (PQpipelineSync(c->pg) != 1) {
        rc = bt_pg_fail(c, NULL, err);
        goto out;
    }
    for (int i = 0; i < c->npending; i++) {
        bt_pg_pending *p = &c->pending[i];
        PGresult *r = PQgetResult(c->pg);
        if (!r) {
            if (rc == 0)
                rc = bt_pg_fail(c, NULL, err);
            goto out;
        }
        ExecStatusType status = PQresultStatus(r);
        if (status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED) {
            if (p->is_prepare)
                p->st->prepared = 0;
            if (status == PGRES_FATAL_ERROR && rc == 0) {
                pooler = bt_pg_broken_name(r);
                rc = bt_pg_fail(c, r, err);
            }
            PQclear(r);
        } else if (i == c->npending - 1 && rc == 0) {
            rc = bt_pg_result(c, r, res, err);
        } else {
            PQclear(r);
        }
        /* each statement's results end with a NULL */
        while ((r = PQgetResult(c->pg)) != NULL)
            PQclear(r);
    }
    PGresult *r = PQgetResult(c->pg);
    if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
        if (rc == 0)
            rc = bt_pg_fail(c, r, err);
    }
    PQclear(r);
out:
    c->npending = 0;
    if (pooler) {
        bt_pg_note_unnamed(c);
        rc = bt_pg_lost_to_pooler(err);
    }
    if (PQpipelineStatus(c->pg) != PQ_PIPELINE_OFF && PQexitPipelineMode(c->pg) != 1) {
        /* results still owed: the connection cannot be trusted any more */
        char msg[sizeof err->msg];
        bt_pg_msg(msg, sizeof msg, PQerrorMessage(c->pg));
        bt_err_set(err, BT_DERR_LOST, BT_ERRK_LOST_CONNECTION, 0, "", msg);
        rc = -1;
    }
    return rc;
}

static int bt_pg_pipeline_execute(bt_pg_conn *c, bt_pg_stmt *st, int txn, bt_result *res,
                                  bt_err *err)
{
    if (c->npending == 0 && PQenterPipelineMode(c->pg) != 1)
        return bt_pg_fail(c, NULL, err);
    if (!st->prepared) {
        if (PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL) != 1)
            goto send_failed;
        c->pending[c->npending++] = (bt_pg_pending){st, 1};
        st->prepared = 1;   /* the drain clears it again if the Parse fails */
    }
    if (PQsendQueryPrepared(c->pg, st->name, st->nparams, st->values, NULL, NULL, 0) != 1)
        goto send_failed;
    c->pending[c->npending++] = (bt_pg_pending){st, 0};
    if (txn == BT_PG_TXN_BEGIN)
        c->in_txn = 1;
    if ((txn == BT_PG_TXN_NONE || txn == BT_PG_TXN_BEGIN) && c->in_txn &&
        !(res && res->want) && c->npending + 2 <= BT_PG_MAX_PENDING)
        return 0;
    if (txn == BT_PG_TXN_COMMIT || txn == BT_PG_TXN_ROLLBACK)
        c->in_txn = 0;
    return bt_pg_pipeline_finish(c, res, err);
send_failed:
    /* part of the queue may be on the wire: nothing sensible is left to do
     * with this connection but drop it */
    bt_pg_fail(c, NULL, err);
    err->kind = BT_DERR_LOST;
    err->errk = BT_ERRK_LOST_CONNECTION;
    c->npending = 0;
    return -1;
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
    if (nparams != st->nparams) {
        char msg[128];
        snprintf(msg, sizeof msg, "statement has %d placeholders but %d values were given",
                 st->nparams, (int)nparams);
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", msg);
        return -1;
    }
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
            r = c->timeout_ms > 0 ? bt_pg_await(c, PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL))
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
            r = c->timeout_ms > 0
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
    PGresult *r = c->timeout_ms > 0
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
};
