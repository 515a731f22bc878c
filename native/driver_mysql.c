/* driver_mysql.c: MySQL/MariaDB through the C client library.
 *
 * Builds against libmariadb (Debian's libmariadb-dev: `mariadb_config --cflags
 * --libs`) or Oracle's libmysqlclient (`mysql_config`); compile with
 * -DBT_HAVE_MYSQL.
 *
 * Prepared mode (cfg->prepare != 0): every statement key gets a server-side
 * prepared statement (binary protocol) on first use, with parameter and
 * result bind buffers allocated once per statement, so an execute is one
 * COM_STMT_EXECUTE round trip and no allocation (on plain sockets, one
 * whose result is not captured runs on the wire path of
 * driver_mysql_wire.c).  Statements the server
 * refuses to prepare (ER_UNSUPPORTED_PS) or cannot hold any more of
 * (ER_MAX_PREPARED_STMT_COUNT_REACHED) run through the text protocol instead,
 * for the rest of the connection.  Text mode (--no-prepare): values are
 * interpolated with bt_sql_interpolate and sent with mysql_real_query.
 *
 * Threads: mysql_library_init runs once (pthread_once) on the first connect;
 * mysql_thread_init is called by connect on the calling thread, and the
 * engine calls bt_driver_mysql.thread_end (mysql_thread_end) when a thread
 * that connected exits.  libmariadb needs neither; libmysqlclient leaks
 * per-thread state without them.
 *
 * cfg->options: `key=value;key=value` (spaces around ';' ignored; '_' and '-'
 * interchangeable in keys):
 *   ssl-ca, ssl-capath, ssl-cert, ssl-key, ssl-cipher, ssl-crl, ssl-crlpath
 *   read-timeout=S   seconds a read may wait for the server (default 3600;
 *                    0 = wait forever).  Long queries are legitimate, so it
 *                    is generous: it only keeps a hung server from wedging a
 *                    worker forever.
 *   write-timeout=S  same for writes (default 3600)
 *   charset=NAME     connection character set (library default otherwise)
 *   compress=0|1     protocol compression
 *   init-command=SQL run after every connect (may not contain ';')
 *   get-server-public-key=0|1  fetch the RSA key for caching_sha2_password
 *                    over unencrypted connections (libmysqlclient; libmariadb
 *                    fetches it by itself)
 *   blocking-reads=0 keep libmariadb's own non-blocking reads (see
 *                    bt_my_blocking_reads; for comparisons and diagnosis),
 *                    and with them its own execute (no wire path)
 * cfg->ssl: 0 leaves TLS off, 1 requires TLS without verifying the server
 * certificate, 2 requires TLS and verifies the certificate and host name
 * (give ssl-ca for a private CA).  A connection that was asked for TLS and
 * did not get it fails.
 *
 * Errors: 1213 deadlock, 1205 lock wait timeout and 1020 (record changed
 * since last read) are retryable; 2006/2013/2055, 1927 (killed), 1053
 * (shutdown), 2002/2003, 4031 (MySQL 8 inactivity) and TLS transport errors
 * after the handshake mean a lost connection; the rest are statement errors
 * with the server's errno and message.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

#include "driver_mysql.h"
#include "evloop.h"

enum { BT_MY_DEFAULT_IO_TIMEOUT_S = 3600 };

static pthread_once_t bt_my_lib_once = PTHREAD_ONCE_INIT;
static int bt_my_lib_rc;     /* written once inside bt_my_lib_once */
static pthread_once_t bt_my_max_ps_once = PTHREAD_ONCE_INIT;

static void bt_my_lib_init(void)
{
    bt_my_lib_rc = mysql_library_init(0, NULL, NULL);
}

static void bt_my_warn_max_ps(void)
{
    fprintf(stderr, "benchtop: the server's max_prepared_stmt_count is reached: "
                    "further statements use the text protocol (raise it, or use --no-prepare)\n");
}

static int bt_my_is_lost(unsigned int code)
{
    switch (code) {
    case BT_MY_SERVER_SHUTDOWN:
    case BT_MY_CONNECTION_KILLED:
    case BT_MY_CR_CONNECTION_ERROR:
    case BT_MY_CR_CONN_HOST_ERROR:
    case BT_MY_CR_SERVER_GONE:
    case BT_MY_CR_SERVER_LOST:
    case BT_MY_CR_SERVER_LOST_EXT:
    case BT_MY_CLIENT_INTERACTION_TIMEOUT:
    case BT_MY_CR_ERR_NET_READ:
    case BT_MY_CR_ERR_NET_WRITE:
        return 1;
    default:
        return 0;
    }
}

/* Classifies a statement error; always returns -1 for the caller to pass on.
 * (Connect errors are classified in bt_my_connect.) */
int bt_my_fail(bt_err *err, unsigned int code, const char *sqlstate, const char *msg)
{
    int kind = BT_DERR_SQL, errk = BT_ERRK_FATAL;
    if (code == BT_MY_DEADLOCK) {
        kind = BT_DERR_RETRY;
        errk = BT_ERRK_DEADLOCK;
    } else if (code == BT_MY_LOCK_WAIT_TIMEOUT) {
        kind = BT_DERR_RETRY;
        errk = BT_ERRK_LOCK_TIMEOUT;
    } else if (code == BT_MY_CHECKREAD) {
        /* sysbench retries it with deadlocks: a snapshot conflict */
        kind = BT_DERR_RETRY;
        errk = BT_ERRK_SERIALIZATION;
    } else if (bt_my_is_lost(code) || code == BT_MY_CR_SSL_CONNECTION_ERROR) {
        /* after the handshake a TLS error is the transport failing under the
         * session (EOF, read timeout): lost, as 2013 is without TLS */
        kind = BT_DERR_LOST;
        errk = BT_ERRK_LOST_CONNECTION;
    }
    bt_err_set(err, kind, errk, (int32_t)code, sqlstate, msg);
    return -1;
}

static int bt_my_fail_conn(bt_my_conn *c, bt_err *err)
{
    return bt_my_fail(err, mysql_errno(c->my), mysql_sqlstate(c->my), mysql_error(c->my));
}

static int bt_my_fail_stmt(bt_my_stmt *st, bt_err *err)
{
    return bt_my_fail(err, mysql_stmt_errno(st->stmt), mysql_stmt_sqlstate(st->stmt),
                      mysql_stmt_error(st->stmt));
}

/* ---- connect -------------------------------------------------------------- */

static int bt_my_opt_bool(const char *v)
{
    return strcmp(v, "1") == 0 || strcmp(v, "on") == 0 || strcmp(v, "true") == 0 ||
           strcmp(v, "yes") == 0;
}

static int bt_my_opt_uint(const char *v, unsigned int *out)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || end == v || *end || n > 1000000000UL)
        return -1;
    *out = (unsigned int)n;
    return 0;
}

/* Applies one `key=value` of cfg->options; fills err when it is not accepted. */
static int bt_my_apply_option(MYSQL *my, char *kv, bt_my_opts *o, bt_err *err)
{
    char msg[sizeof err->msg];
    char *eq = strchr(kv, '=');
    if (!eq) {
        snprintf(msg, sizeof msg, "MySQL option '%.80s' needs a value (key=value)", kv);
        goto bad;
    }
    *eq = '\0';
    const char *v = eq + 1;
    for (char *p = kv; *p; p++)
        if (*p == '_')
            *p = '-';
    static const struct { const char *key; enum mysql_option opt; } paths[] = {
        {"ssl-ca", MYSQL_OPT_SSL_CA},         {"ssl-capath", MYSQL_OPT_SSL_CAPATH},
        {"ssl-cert", MYSQL_OPT_SSL_CERT},     {"ssl-key", MYSQL_OPT_SSL_KEY},
        {"ssl-cipher", MYSQL_OPT_SSL_CIPHER}, {"ssl-crl", MYSQL_OPT_SSL_CRL},
        {"ssl-crlpath", MYSQL_OPT_SSL_CRLPATH}, {"charset", MYSQL_SET_CHARSET_NAME},
        {"init-command", MYSQL_INIT_COMMAND},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        if (strcmp(kv, paths[i].key) != 0)
            continue;
        if (mysql_options(my, paths[i].opt, v) == 0)
            return 0;
        snprintf(msg, sizeof msg, "MySQL option %s rejected by the client library", kv);
        goto bad;
    }
    if (strcmp(kv, "read-timeout") == 0 || strcmp(kv, "write-timeout") == 0) {
        unsigned int s;
        if (bt_my_opt_uint(v, &s) != 0) {
            snprintf(msg, sizeof msg, "MySQL option %s wants whole seconds, got '%.40s'", kv, v);
            goto bad;
        }
        *(kv[0] == 'r' ? &o->read_timeout_s : &o->write_timeout_s) = s;
        return 0;
    }
    if (strcmp(kv, "blocking-reads") == 0) {
        o->blocking_reads = bt_my_opt_bool(v);
        return 0;
    }
    if (strcmp(kv, "compress") == 0) {
        if (bt_my_opt_bool(v))
            mysql_options(my, MYSQL_OPT_COMPRESS, NULL);
        return 0;
    }
    if (strcmp(kv, "get-server-public-key") == 0) {
#if defined(MYSQL_OPT_GET_SERVER_PUBLIC_KEY) || !defined(MARIADB_PACKAGE_VERSION_ID)
        bt_my_bool on = (bt_my_bool)bt_my_opt_bool(v);
        mysql_options(my, MYSQL_OPT_GET_SERVER_PUBLIC_KEY, &on);
#endif
        return 0;
    }
    snprintf(msg, sizeof msg,
             "unknown MySQL option '%.60s' (accepted: ssl-ca, ssl-capath, ssl-cert, ssl-key, "
             "ssl-cipher, ssl-crl, ssl-crlpath, read-timeout, write-timeout, charset, compress, "
             "init-command, get-server-public-key, blocking-reads)", kv);
bad:
    bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", msg);
    return -1;
}

static int bt_my_apply_options(MYSQL *my, const bt_conn_config *cfg, bt_my_opts *o,
                               bt_err *err)
{
    char *copy = NULL;
    o->read_timeout_s = BT_MY_DEFAULT_IO_TIMEOUT_S;
    o->write_timeout_s = BT_MY_DEFAULT_IO_TIMEOUT_S;
    o->blocking_reads = 1;
    int rc = -1;
    if (cfg->options && cfg->options[0]) {
        copy = strdup(cfg->options);
        if (!copy) {
            bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", "out of memory");
            goto out;
        }
        char *save = NULL;
        for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
            while (*kv == ' ')
                kv++;
            size_t n = strlen(kv);
            while (n > 0 && kv[n - 1] == ' ')
                kv[--n] = '\0';
            if (n && bt_my_apply_option(my, kv, o, err) != 0)
                goto out;
        }
    }
    if (cfg->query_timeout_ms > 0) {
        /* the client library counts whole seconds; blocking reads use the ms */
        o->query_timeout_ms = cfg->query_timeout_ms;
        o->read_timeout_s = o->write_timeout_s = (unsigned int)(cfg->query_timeout_ms + 999) / 1000;
    }
    if (o->read_timeout_s)
        mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &o->read_timeout_s);
    if (o->write_timeout_s)
        mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &o->write_timeout_s);
    if (cfg->connect_timeout_s > 0) {
        unsigned int ct = (unsigned int)cfg->connect_timeout_s;
        mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
    }
#ifdef MARIADB_PACKAGE_VERSION_ID
    /* The engine reconnects itself and counts it; a silent library reconnect
     * would lose the session (prepared statements, transaction) unnoticed.
     * Off is libmysqlclient's default, and MySQL 8.0.34+ prints a deprecation
     * warning when the option is set at all, so only libmariadb is told. */
    bt_my_bool reconnect = 0;
    mysql_options(my, MYSQL_OPT_RECONNECT, &reconnect);
#endif
    if (cfg->ssl > 0) {
#ifdef MARIADB_PACKAGE_VERSION_ID
        bt_my_bool on = 1, verify = (bt_my_bool)(cfg->ssl >= 2);
        mysql_options(my, MYSQL_OPT_SSL_ENFORCE, &on);
        mysql_options(my, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
#else
        unsigned int mode = cfg->ssl >= 2 ? SSL_MODE_VERIFY_IDENTITY : SSL_MODE_REQUIRED;
        mysql_options(my, MYSQL_OPT_SSL_MODE, &mode);
#endif
    } else {
#ifndef MARIADB_PACKAGE_VERSION_ID
        unsigned int mode = SSL_MODE_DISABLED;
        mysql_options(my, MYSQL_OPT_SSL_MODE, &mode);
#endif
    }
    rc = 0;
out:
    free(copy);
    return rc;
}

/* Forgets a statement (closing it on the server if still connected). */
static void bt_my_stmt_reset(bt_my_stmt *st)
{
    if (st->stmt)
        mysql_stmt_close(st->stmt);
    for (unsigned long i = 0; st->pv && i < st->nparams; i++)
        bt_textbuf_free(&st->pv[i].s);
    free(st->pv);
    free(st->pbind);
    free(st->rbind);
    free(st->rcol);
    memset(st, 0, sizeof *st);
}

static void bt_my_stmt_free(void *st)
{
    bt_my_stmt_reset(st);
    free(st);
}

static void bt_my_disconnect(void *conn)
{
    bt_my_conn *c = conn;
    if (!c)
        return;
    /* Closing the connection first detaches the statements, so closing them
     * afterwards only frees memory instead of sending one COM_STMT_CLOSE each. */
    if (c->my) {
        bt_io_forget((int)mysql_get_socket(c->my));  /* an event loop's: before the close */
        mysql_close(c->my);
    }
    bt_stmt_slots_free(&c->stmts, bt_my_stmt_free);
    bt_textbuf_free(&c->text);
    bt_textbuf_free(&c->wire);
    free(c);
}

/* On an event loop: the client library's non-blocking connect
 * (mysql_real_connect_start/_cont), each wait in bt_io_wait; the library
 * keeps the connect timeout (MYSQL_WAIT_TIMEOUT).  Afterwards its blocking
 * calls run with our read, write and wait methods (bt_my_blocking_reads),
 * which switch to the loop where the library would poll. */
static MYSQL *bt_my_connect_async(MYSQL *my, const char *host, const char *user, const char *pw,
                                  const char *db, unsigned int port, const char *sock)
{
    MYSQL *ret = NULL;
    if (mysql_options(my, MYSQL_OPT_NONBLOCK, 0) != 0)
        return NULL;
    int status = mysql_real_connect_start(&ret, my, host, user, pw, db, port, sock, CLIENT_MULTI_RESULTS);
    while (status) {
        int fd = (int)mysql_get_socket(my);
        int ev = ((status & MYSQL_WAIT_READ) ? POLLIN : 0) | ((status & MYSQL_WAIT_WRITE) ? POLLOUT : 0);
        int64_t to = (status & MYSQL_WAIT_TIMEOUT) ? (int64_t)mysql_get_timeout_value_ms(my) : -1;
        int r;
        if (fd >= 0 && ev) {
            /* a new socket may have an old number (one address after another) */
            r = bt_io_wait(fd, ev, to, 1);
        } else {
            r = bt_io_sleep_until(bt_evloop_now_ns() + (uint64_t)(to > 0 ? to : 0) * 1000000ULL) == 0 ? 0 : -1;
        }
        if (r < 0) {
            bt_io_forget(fd);
            return NULL;   /* aborted: the caller closes (which ends the library's connect) */
        }
        int got = r == 0 ? MYSQL_WAIT_TIMEOUT : 0;
        if (r > 0) {
            if (r & POLLIN)
                got |= MYSQL_WAIT_READ;
            if (r & POLLOUT)
                got |= MYSQL_WAIT_WRITE;
            if (r & (POLLERR | POLLHUP))
                got |= status & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE);
        }
        status = mysql_real_connect_cont(&ret, my, got);
    }
    return ret;
}

static int bt_my_connect(const bt_conn_config *cfg, void **conn, bt_err *err)
{
    bt_my_conn *c = NULL;
    int rc = -1;
    *conn = NULL;
    pthread_once(&bt_my_lib_once, bt_my_lib_init);
    if (bt_my_lib_rc != 0) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "",
                   "could not initialise the MySQL client library");
        goto out;
    }
    mysql_thread_init();
    c = calloc(1, sizeof *c);
    if (!c || !(c->my = mysql_init(NULL))) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "", "out of memory");
        goto out;
    }
    c->prepare = cfg->prepare;
    if (bt_my_apply_options(c->my, cfg, &c->opts, err) != 0)
        goto out;
    const char *host = cfg->host && cfg->host[0] ? cfg->host : NULL;
    const char *sock = cfg->socket && cfg->socket[0] ? cfg->socket : NULL;
    const char *db = cfg->database && cfg->database[0] ? cfg->database : NULL;
    const char *user = cfg->user && cfg->user[0] ? cfg->user : NULL;
    unsigned int port = cfg->port > 0 ? (unsigned int)cfg->port : 0;
#ifdef BT_MY_BLOCKING_READS
    c->opts.async = bt_fiber_self() != NULL;
#endif
    MYSQL *ok = c->opts.async ? bt_my_connect_async(c->my, host, user, cfg->password, db, port, sock)
                              : mysql_real_connect(c->my, host, user, cfg->password, db, port, sock,
                                                   CLIENT_MULTI_RESULTS);
    if (!ok && c->opts.async && bt_io_aborted()) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_LOST_CONNECTION, 0, "", BT_CONNECT_UNANSWERED);
        goto out;
    }
    if (!ok) {
        unsigned int code = mysql_errno(c->my);
        bt_err_set(err, BT_DERR_CONNECT,
                   bt_my_is_lost(code) ? BT_ERRK_LOST_CONNECTION : BT_ERRK_FATAL,
                   (int32_t)code, mysql_sqlstate(c->my), mysql_error(c->my));
        goto out;
    }
    /* libmariadb quietly stays in clear text when the server has no TLS and
     * the certificate is not to be verified: required means required. */
    if (cfg->ssl > 0 && !mysql_get_ssl_cipher(c->my)) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, "",
                   "TLS is required (--mysql-ssl) but the server does not support it");
        goto out;
    }
#ifdef BT_MY_BLOCKING_READS
    bt_my_blocking_reads(c);
#endif
    rc = 0;
out:
    if (rc == 0)
        *conn = c;
    else
        bt_my_disconnect(c);
    return rc;
}

static void bt_my_thread_end(void)
{
    mysql_thread_end();
}

static int bt_my_socket(void *conn)
{
    bt_my_conn *c = conn;
    return c && c->my ? (int)mysql_get_socket(c->my) : -1;
}

/* ---- text protocol ------------------------------------------------------- */

static int64_t bt_my_parse_i64(const char *s, unsigned long len)
{
    int64_t v = 0;
    unsigned long i = 0;
    int neg = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        v = v * 10 + (s[i] - '0');
    return neg ? -v : v;
}

static void bt_my_capture(bt_result *res, const char *s, unsigned long len)
{
    if (!s) {
        res->has_value = 0;
        return;
    }
    res->has_value = 1;
    if (res->want == 1) {
        res->i = bt_my_parse_i64(s, len);
    } else {
        uint32_t n = len < BT_SREG_CAP - 1 ? (uint32_t)len : BT_SREG_CAP - 1;
        memcpy(res->s, s, n);
        res->s[n] = '\0';
        res->slen = n;
    }
}

/* Runs `sql` and drains every result set (unbuffered: no per-row copies). */
static int bt_my_query(bt_my_conn *c, const char *sql, size_t len, bt_result *res, bt_err *err)
{
    int64_t rows = 0;
    int first = 1;
    if (mysql_real_query(c->my, sql, (unsigned long)len) != 0)
        return bt_my_fail_conn(c, err);
    for (;;) {
        MYSQL_RES *r = mysql_use_result(c->my);
        if (r) {
            MYSQL_ROW row;
            while ((row = mysql_fetch_row(r)) != NULL) {
                if (first && rows == 0 && res && res->want) {
                    unsigned long *lens = mysql_fetch_lengths(r);
                    bt_my_capture(res, row[0], lens ? lens[0] : 0);
                }
                rows++;
            }
            mysql_free_result(r);
            if (mysql_errno(c->my))
                return bt_my_fail_conn(c, err);
        } else if (mysql_field_count(c->my) == 0) {
            uint64_t n = mysql_affected_rows(c->my);
            if (n != (uint64_t)-1)
                rows += (int64_t)n;
        } else {
            return bt_my_fail_conn(c, err);
        }
        first = 0;
        int more = mysql_next_result(c->my);
        if (more > 0)
            return bt_my_fail_conn(c, err);
        if (more < 0)
            break;
    }
    if (res)
        res->rows = rows;
    return 0;
}

static size_t bt_my_quote(void *conn, char *buf, size_t cap, const char *s, size_t len)
{
    bt_my_conn *c = conn;
    if (cap < 2 * len + 3)
        return 0;
    buf[0] = '\'';
#ifdef MARIADB_PACKAGE_VERSION_ID
    /* libmariadb doubles quotes itself under NO_BACKSLASH_ESCAPES */
    unsigned long n = mysql_real_escape_string(c->my, buf + 1, s, (unsigned long)len);
#else
    /* libmysqlclient refuses plain escaping under NO_BACKSLASH_ESCAPES */
    unsigned long n = mysql_real_escape_string_quote(c->my, buf + 1, s, (unsigned long)len, '\'');
#endif
    if (n == (unsigned long)-1)
        return 0;
    buf[n + 1] = '\'';
    buf[n + 2] = '\0';
    return n + 2;
}

static int bt_my_text_execute(bt_my_conn *c, const char *sql, const bt_value *params,
                              int32_t nparams, bt_result *res, bt_err *err)
{
    if (bt_sql_interpolate(&bt_driver_mysql, c, sql, params, nparams, &c->text, err) != 0)
        return -1;
    return bt_my_query(c, c->text.buf, c->text.len, res, err);
}

static int bt_my_exec_text(void *conn, const char *sql, bt_result *res, bt_err *err)
{
    bt_my_conn *c = conn;
    if (res) {
        res->has_value = 0;
        res->rows = 0;
    }
    return bt_my_query(c, sql, strlen(sql), res, err);
}

/* ---- prepared statements ------------------------------------------------- */

/* Prepares statement `st`; returns 0 with st->mode set (PREPARED, or TEXT when
 * the server will not prepare it), -1 with err filled otherwise. */
static int bt_my_prepare(bt_my_conn *c, bt_my_stmt *st, const char *sql, bt_err *err)
{
    int rc = -1;
    st->stmt = mysql_stmt_init(c->my);
    if (!st->stmt) {
        bt_my_fail_conn(c, err);
        goto out;
    }
    if (mysql_stmt_prepare(st->stmt, sql, (unsigned long)strlen(sql)) != 0) {
        unsigned int code = mysql_stmt_errno(st->stmt);
        if (code == BT_MY_UNSUPPORTED_PS || code == BT_MY_MAX_PREPARED) {
            if (code == BT_MY_MAX_PREPARED)
                pthread_once(&bt_my_max_ps_once, bt_my_warn_max_ps);
            mysql_stmt_close(st->stmt);
            st->stmt = NULL;
            st->mode = BT_MYS_TEXT;
            rc = 0;
            goto out;
        }
        bt_my_fail_stmt(st, err);
        goto out;
    }
    st->nparams = mysql_stmt_param_count(st->stmt);
    if (st->nparams) {
        st->pbind = calloc(st->nparams, sizeof *st->pbind);
        st->pv = calloc(st->nparams, sizeof *st->pv);
        if (!st->pbind || !st->pv) {
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "out of memory");
            goto out;
        }
        for (unsigned long i = 0; i < st->nparams; i++) {
            st->pv[i].type = -1;
            st->pbind[i].is_null = &st->pv[i].is_null;
            st->pbind[i].length = &st->pv[i].len;
        }
    }
    st->mode = BT_MYS_PREPARED;
    rc = 0;
out:
    if (rc != 0 && st->stmt) {
        mysql_stmt_close(st->stmt);
        st->stmt = NULL;
    }
    if (rc != 0 || st->mode != BT_MYS_PREPARED) {
        free(st->pbind);
        free(st->pv);
        st->pbind = NULL;
        st->pv = NULL;
        st->nparams = 0;
    }
    return rc;
}

/* Copies the values into the bound buffers; rebinds only when a parameter's
 * type changed (in practice: on the first execute). */
static int bt_my_bind_params(bt_my_stmt *st, const bt_value *params, bt_err *err)
{
    int rebind = 0;
    for (unsigned long i = 0; i < st->nparams; i++) {
        const bt_value *v = &params[i];
        bt_my_param *p = &st->pv[i];
        MYSQL_BIND *b = &st->pbind[i];
        if (v->type == BT_VAL_NULL) {
            p->is_null = 1;
            if (p->type < 0) {
                b->buffer_type = MYSQL_TYPE_NULL;
                p->type = BT_VAL_NULL;
                rebind = 1;
            }
            continue;
        }
        p->is_null = 0;
        if (v->type == BT_VAL_INT) {
            p->i = v->i;
            if (p->type != BT_VAL_INT) {
                b->buffer_type = MYSQL_TYPE_LONGLONG;
                b->buffer = &p->i;
                b->buffer_length = sizeof p->i;
                p->type = BT_VAL_INT;
                rebind = 1;
            }
            continue;
        }
        size_t old_cap = p->s.cap;
        if (bt_textbuf_reserve(&p->s, v->len) != 0) {
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "out of memory");
            return -1;
        }
        if (p->s.cap != old_cap)
            p->type = -1;   /* the buffer moved or grew: bind it again */
        memcpy(p->s.buf, v->s, v->len);
        p->len = v->len;
        if (p->type != BT_VAL_STR) {
            b->buffer_type = MYSQL_TYPE_STRING;
            b->buffer = p->s.buf;
            b->buffer_length = (unsigned long)p->s.cap;
            p->type = BT_VAL_STR;
            rebind = 1;
        }
    }
    if (rebind && mysql_stmt_bind_param(st->stmt, st->pbind) != 0)
        return bt_my_fail_stmt(st, err);
    return 0;
}

/* Binds the first result column for capture as int (want 1) or string (2);
 * the other columns get zero-length buffers, so their data is skipped. */
static int bt_my_bind_result(bt_my_stmt *st, unsigned int nfields, int want, bt_err *err)
{
    if (nfields > st->nrbind) {
        MYSQL_BIND *nb = realloc(st->rbind, nfields * sizeof *nb);
        if (nb)
            st->rbind = nb;
        bt_my_rcol *nc = realloc(st->rcol, nfields * sizeof *nc);
        if (nc)
            st->rcol = nc;
        if (!nb || !nc) {
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "out of memory");
            return -1;
        }
        st->nrbind = nfields;
    }
    memset(st->rbind, 0, nfields * sizeof *st->rbind);
    for (unsigned int i = 0; i < nfields; i++) {
        st->rbind[i].buffer_type = MYSQL_TYPE_STRING;
        st->rbind[i].length = &st->rcol[i].len;
        st->rbind[i].is_null = &st->rcol[i].is_null;
        st->rbind[i].error = &st->rcol[i].error;
    }
    if (want == 1) {
        st->rbind[0].buffer_type = MYSQL_TYPE_LONGLONG;
        st->rbind[0].buffer = &st->ri;
        st->rbind[0].buffer_length = sizeof st->ri;
    } else {
        st->rbind[0].buffer = st->rs;
        st->rbind[0].buffer_length = sizeof st->rs;
    }
    if (mysql_stmt_bind_result(st->stmt, st->rbind) != 0)
        return bt_my_fail_stmt(st, err);
    st->rwant = want;
    st->rfields = nfields;
    return 0;
}

static void bt_my_capture_bound(const bt_my_stmt *st, bt_result *res)
{
    if (st->rcol[0].is_null) {
        res->has_value = 0;
        return;
    }
    res->has_value = 1;
    if (res->want == 1) {
        res->i = st->ri;
    } else {
        unsigned long len = st->rcol[0].len;
        uint32_t n = len < BT_SREG_CAP - 1 ? (uint32_t)len : BT_SREG_CAP - 1;
        memcpy(res->s, st->rs, n);
        res->s[n] = '\0';
        res->slen = n;
    }
}

/* Reads every result set of an executed statement to its end: affected rows
 * are counted, the captured column is copied, other rows are skipped. */
static int bt_my_drain(bt_my_conn *c, bt_my_stmt *st, bt_result *res, bt_err *err)
{
    int64_t rows = 0;
    int first = 1;
    for (;;) {
        unsigned int nfields = mysql_stmt_field_count(st->stmt);
        if (nfields == 0) {
            uint64_t n = mysql_stmt_affected_rows(st->stmt);
            if (n != (uint64_t)-1)
                rows += (int64_t)n;
        } else {
            /* Only the first row of the first result set is ever read (a
             * capture).  The rest is skipped, without mysql_stmt_fetch's
             * per-row state checks and column walk (most of the library's
             * time on range selects): by bt_my_skip_rows, which counts them,
             * and by free_result, which reads the end of the result (and is
             * all there is with TLS or compression: rows are not counted). */
            int fetched = 1;
            if (first && res && res->want) {
                if ((st->rwant != res->want || nfields != st->rfields) &&
                    bt_my_bind_result(st, nfields, res->want, err) != 0) {
                    mysql_stmt_free_result(st->stmt);
                    return -1;
                }
                int frc = mysql_stmt_fetch(st->stmt);
                if (frc == 0 || frc == MYSQL_DATA_TRUNCATED) {
                    bt_my_capture_bound(st, res);
                    rows++;
                } else if (frc != MYSQL_NO_DATA) {
                    bt_my_fail_stmt(st, err);
                    mysql_stmt_free_result(st->stmt);
                    return -1;
                } else {
                    fetched = 0;   /* no rows: the result is over */
                }
            }
#ifdef BT_MY_BLOCKING_READS
            if (fetched) {
                int64_t n = bt_my_skip_rows(c);
                if (n < 0)
                    return bt_my_lost(err, "lost connection to the server while skipping rows");
                rows += n;
            }
#else
            (void)fetched;
#endif
            /* the end of the result (or an error packet, or a lost connection) */
            if (mysql_stmt_free_result(st->stmt) || mysql_errno(c->my))
                return bt_my_fail_conn(c, err);
        }
        first = 0;
        if (!mysql_more_results(c->my))
            break;
        int more = mysql_stmt_next_result(st->stmt);
        if (more > 0)
            return bt_my_fail_stmt(st, err);
        if (more < 0)
            break;
    }
    if (res)
        res->rows = rows;
    return 0;
}

/* Whether a failed execute is prepared and run again (see bt_my_execute). */
static int bt_my_reprepare(int attempt, unsigned int code)
{
    return attempt == 0 && (code == BT_MY_UNKNOWN_STMT || code == BT_MY_NEED_REPREPARE);
}

static int bt_my_execute(void *conn, int32_t key, const char *sql, const bt_value *params,
                         int32_t nparams, bt_result *res, bt_err *err)
{
    bt_my_conn *c = conn;
    if (res) {
        res->has_value = 0;
        res->rows = 0;
    }
    if (!c->prepare)
        return bt_my_text_execute(c, sql, params, nparams, res, err);
    bt_my_stmt *st = bt_stmt_slots_get(&c->stmts, key, sizeof *st, NULL, err);
    if (!st)
        return -1;
    /* One re-prepare when the server forgot the statement or its tables
     * changed shape under it (DDL during the run). */
    for (int attempt = 0;; attempt++) {
        if (st->mode == BT_MYS_NEW && bt_my_prepare(c, st, sql, err) != 0)
            return -1;
        if (st->mode == BT_MYS_TEXT)
            return bt_my_text_execute(c, sql, params, nparams, res, err);
        if ((unsigned long)nparams != st->nparams) {
            char msg[128];
            snprintf(msg, sizeof msg, "statement has %lu placeholders but %d values were given",
                     st->nparams, (int)nparams);
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", msg);
            return -1;
        }
#ifdef BT_MY_BLOCKING_READS
        if (!(res && res->want) && bt_my_own_reads(c)) {
            int w = bt_my_wire_execute(c, st, params, nparams, res, err);
            if (w == 0)
                return 0;
            if (w < 0 && bt_my_reprepare(attempt, (unsigned int)err->code)) {
                bt_my_stmt_reset(st);
                continue;
            }
            if (w < 0)
                return -1;
        }
#endif
        if (st->nparams && bt_my_bind_params(st, params, err) != 0)
            return -1;
        if (mysql_stmt_execute(st->stmt) == 0)
            return bt_my_drain(c, st, res, err);
        unsigned int code = mysql_stmt_errno(st->stmt);
        if (bt_my_reprepare(attempt, code)) {
            bt_my_stmt_reset(st);
            continue;
        }
        return bt_my_fail_stmt(st, err);
    }
}

/* A connection lost after --query-timeout is the timeout expiring (a read
 * or write timed out): counted as its own error kind, the worker then
 * reconnects as for any lost connection. */
static int bt_my_timed(bt_my_conn *c, struct timespec t0, int rc, bt_err *err)
{
    if (rc == 0 || err->kind != BT_DERR_LOST || c->opts.query_timeout_ms <= 0)
        return rc;
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    if (ms + 50 >= c->opts.query_timeout_ms) {
        err->errk = BT_ERRK_TIMEOUT;
        snprintf(err->msg, sizeof err->msg, "no reply within --query-timeout %.3g s",
                 c->opts.query_timeout_ms / 1000.0);
    }
    return rc;
}

static int bt_my_execute_timed(void *conn, int32_t key, const char *sql, const bt_value *params,
                               int32_t nparams, bt_result *res, bt_err *err)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    return bt_my_timed(conn, t0, bt_my_execute(conn, key, sql, params, nparams, res, err), err);
}

static int bt_my_exec_text_timed(void *conn, const char *sql, bt_result *res, bt_err *err)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    return bt_my_timed(conn, t0, bt_my_exec_text(conn, sql, res, err), err);
}

const bt_driver bt_driver_mysql = {
    .name = "mysql",
    .connect = bt_my_connect,
    .disconnect = bt_my_disconnect,
    .execute = bt_my_execute_timed,
    .exec_text = bt_my_exec_text_timed,
    .quote = bt_my_quote,
    .thread_end = bt_my_thread_end,
    .socket = bt_my_socket,
#ifdef BT_MY_BLOCKING_READS
    .loops = 1,
#endif
};
