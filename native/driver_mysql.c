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
 * whose result is not captured runs on the wire path: see
 * bt_my_wire_execute).  Statements the server
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

#include "driver.h"
#include "stmt_slots.h"

/* Blocking reads (libmariadb only; see bt_my_blocking_reads).  ma_pvio.h is
 * Connector/C's plugin interface, installed with its headers and stable
 * within the libmariadb.so.3 ABI. */
#if defined(MARIADB_PACKAGE_VERSION_ID) && MARIADB_PACKAGE_VERSION_ID >= 30000 && \
    !defined(BT_MY_NO_BLOCKING_READS)
#define BT_MY_BLOCKING_READS 1
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <ma_pvio.h>

typedef struct {
    PVIO_METHODS m;          /* first: pvio->methods points here */
    int fd;
} bt_my_pvio_methods;
#endif

#if defined(MARIADB_PACKAGE_VERSION_ID) || !defined(MYSQL_VERSION_ID) || MYSQL_VERSION_ID < 80000
typedef my_bool bt_my_bool;
#else
typedef bool bt_my_bool;   /* MySQL 8 removed my_bool */
#endif

/* Error numbers, spelled out because MariaDB's and MySQL's headers name and
 * carry different subsets of them. */
enum {
    BT_MY_CHECKREAD = 1020,          /* record changed since last read (MVCC conflict) */
    BT_MY_SERVER_SHUTDOWN = 1053,
    BT_MY_LOCK_WAIT_TIMEOUT = 1205,
    BT_MY_DEADLOCK = 1213,
    BT_MY_UNKNOWN_STMT = 1243,
    BT_MY_UNSUPPORTED_PS = 1295,
    BT_MY_MAX_PREPARED = 1461,
    BT_MY_NEED_REPREPARE = 1615,
    BT_MY_CONNECTION_KILLED = 1927,
    BT_MY_CR_CONNECTION_ERROR = 2002,
    BT_MY_CR_CONN_HOST_ERROR = 2003,
    BT_MY_CR_SERVER_GONE = 2006,
    BT_MY_CR_SERVER_LOST = 2013,
    BT_MY_CR_SSL_CONNECTION_ERROR = 2026,  /* how a TLS connection reports EOF and timeouts */
    BT_MY_CR_SERVER_LOST_EXT = 2055,
    BT_MY_CLIENT_INTERACTION_TIMEOUT = 4031,  /* MySQL 8: disconnected for inactivity */
    BT_MY_CR_ERR_NET_READ = 5013,             /* libmariadb */
    BT_MY_CR_ERR_NET_WRITE = 5014
};

enum { BT_MY_DEFAULT_IO_TIMEOUT_S = 3600 };

/* How a statement key runs on this connection. */
enum { BT_MYS_NEW = 0, BT_MYS_PREPARED = 1, BT_MYS_TEXT = 2 };

typedef struct {
    int64_t i;
    bt_textbuf s;            /* copy of a string value: MYSQL_BIND keeps a pointer */
    unsigned long len;
    bt_my_bool is_null;
    int type;                /* BT_VAL_* bound in pbind, -1 before the first bind */
} bt_my_param;

typedef struct {
    unsigned long len;
    bt_my_bool is_null;
    bt_my_bool error;
} bt_my_rcol;

typedef struct {
    int mode;                /* BT_MYS_* */
    MYSQL_STMT *stmt;
    unsigned long nparams;
    MYSQL_BIND *pbind;
    bt_my_param *pv;
    unsigned int nrbind;     /* result binds allocated */
    unsigned int rfields;    /* field count the result binds were made for */
    MYSQL_BIND *rbind;
    bt_my_rcol *rcol;        /* their length/null/error slots */
    int rwant;               /* res->want the result binds were made for; 0 = none */
    int64_t ri;
    char rs[BT_SREG_CAP];
} bt_my_stmt;

typedef struct {
    unsigned int read_timeout_s;
    unsigned int write_timeout_s;
    int blocking_reads;
    int32_t query_timeout_ms;  /* --query-timeout: what a lost connection this late is */
} bt_my_opts;

typedef struct {
    MYSQL *my;
    int prepare;
    bt_my_opts opts;
#ifdef BT_MY_BLOCKING_READS
    bt_my_pvio_methods pvio_methods;   /* must outlive mysql_close */
#endif
    bt_stmt_slots stmts;     /* bt_my_stmt by key */
    bt_textbuf text;         /* interpolation buffer for the text protocol */
    bt_textbuf wire;         /* wire path: the COM_STMT_EXECUTE being sent */
} bt_my_conn;

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
static int bt_my_fail(bt_err *err, unsigned int code, const char *sqlstate, const char *msg)
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
    if (c->my)
        mysql_close(c->my);
    bt_stmt_slots_free(&c->stmts, bt_my_stmt_free);
    bt_textbuf_free(&c->text);
    bt_textbuf_free(&c->wire);
    free(c);
}

#ifdef BT_MY_BLOCKING_READS
/* libmariadb reads with recv(MSG_DONTWAIT) and, when the reply is not there
 * yet (nearly always: the server is still working), polls and reads again:
 * three system calls per reply where one blocking recv does.  System calls
 * are most of a benchmark client's cost, so plain TCP/Unix connections get
 * this read method instead: a blocking recv on the socket, with the read
 * timeout enforced by SO_RCVTIMEO rather than poll.  A timeout or a closed
 * socket returns -1/0 exactly as the original does, so the library reports
 * the usual lost-connection errors.  TLS connections keep the library's own
 * path (OpenSSL reads the socket itself). */
static ssize_t bt_my_pvio_read(MARIADB_PVIO *pvio, uchar *buf, size_t len)
{
    const bt_my_pvio_methods *bm = (const bt_my_pvio_methods *)pvio->methods;
    ssize_t r;
    do
        r = recv(bm->fd, buf, len, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

static void bt_my_blocking_reads(bt_my_conn *c)
{
    MARIADB_PVIO *pvio = c->my->net.pvio;
    if (!c->opts.blocking_reads || !pvio || pvio->ctls || !pvio->methods ||
        (pvio->type != PVIO_TYPE_SOCKET && pvio->type != PVIO_TYPE_UNIXSOCKET))
        return;
    int fd = (int)mysql_get_socket(c->my);
    struct timeval tv = {.tv_sec = (time_t)c->opts.read_timeout_s, .tv_usec = 0};
    if (c->opts.query_timeout_ms > 0) {
        tv.tv_sec = c->opts.query_timeout_ms / 1000;
        tv.tv_usec = (c->opts.query_timeout_ms % 1000) * 1000;
    }
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    /* Any failure leaves the library's own (non-blocking) path in place. */
    if (fl < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        return;
    c->pvio_methods.m = *pvio->methods;
    c->pvio_methods.m.read = bt_my_pvio_read;
    c->pvio_methods.fd = fd;
    pvio->methods = &c->pvio_methods.m;
}

static inline size_t bt_my_cached(const MARIADB_PVIO *pvio)
{
    return (size_t)(pvio->cache + pvio->cache_size - pvio->cache_pos);
}

/* Reads more of the socket into the library's read-ahead cache until `need`
 * bytes are there from cache_pos on (unread bytes move to its start). */
static int bt_my_cache_fill(MARIADB_PVIO *pvio, size_t need)
{
    size_t have = bt_my_cached(pvio);
    memmove(pvio->cache, pvio->cache_pos, have);
    pvio->cache_pos = pvio->cache;
    pvio->cache_size = have;
    while (pvio->cache_size < need) {
        ssize_t r = bt_my_pvio_read(pvio, pvio->cache + pvio->cache_size,
                                    PVIO_READ_AHEAD_CACHE_SIZE - pvio->cache_size);
        if (r <= 0)
            return -1;
        pvio->cache_size += (size_t)r;
    }
    return 0;
}

/* Passes over `skip` bytes from cache_pos on, reading past the cache when
 * they go beyond it (a row longer than the cache). */
static int bt_my_cache_skip(MARIADB_PVIO *pvio, size_t skip)
{
    size_t have = bt_my_cached(pvio);
    if (skip <= have) {
        pvio->cache_pos += skip;
        return 0;
    }
    skip -= have;
    for (;;) {
        ssize_t r = bt_my_pvio_read(pvio, pvio->cache, PVIO_READ_AHEAD_CACHE_SIZE);
        if (r <= 0)
            return -1;
        pvio->cache_size = (size_t)r;
        if ((size_t)r >= skip) {
            pvio->cache_pos = pvio->cache + skip;
            return 0;
        }
        skip -= (size_t)r;
    }
}

/* The reply can be read here, past the library: a plain socket with our
 * blocking reads and its read-ahead cache, no compression (TLS keeps the
 * library's reads). */
static int bt_my_own_reads(const bt_my_conn *c)
{
    const NET *net = &c->my->net;
    const MARIADB_PVIO *pvio = net->pvio;
    return pvio && pvio->methods == &c->pvio_methods.m && pvio->cache && !net->compress;
}

static int bt_my_lost(bt_err *err, const char *why)
{
    return bt_my_fail(err, BT_MY_CR_SERVER_LOST, "HY000", why);
}

/* Skips the rows of the pending binary-protocol result set, reading packet
 * headers straight from the library's read-ahead cache and the socket: the
 * library spends ~200 instructions per row packet (two cached reads, a copy
 * and its checks) where this needs a few.  It stops in front of the first
 * packet that is not a row (the end of the result, an error, anything
 * unexpected, including a sequence number out of step) and leaves it to the
 * library, so every check the library makes on how a result ends still
 * happens.  Only on plain sockets with our blocking reads: TLS and
 * compression keep the library's path.  Returns the rows skipped, -1 when
 * the connection failed. */
static int64_t bt_my_skip_rows(bt_my_conn *c)
{
    if (!bt_my_own_reads(c))
        return 0;
    NET *net = &c->my->net;
    MARIADB_PVIO *pvio = net->pvio;
    int64_t rows = 0;
    int continued = 0;   /* the previous packet was a full one (16 MB - 1): this one continues it */
    for (;;) {
        if (bt_my_cached(pvio) < 4 && bt_my_cache_fill(pvio, 4) != 0)
            return -1;
        const uchar *h = pvio->cache_pos;
        size_t len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
        if (h[3] != (uchar)net->pkt_nr)
            break;
        if (!continued) {
            if (len == 0)
                break;
            if (bt_my_cached(pvio) < 5 && bt_my_cache_fill(pvio, 5) != 0)
                return -1;
            if (pvio->cache_pos[4] != 0)   /* every binary row starts with 0x00 */
                break;
            rows++;
        }
        continued = len == 0xffffff;
        net->pkt_nr++;
        net->compress_pkt_nr = net->pkt_nr;
        if (bt_my_cache_skip(pvio, 4 + len) != 0)
            return -1;
    }
    return rows;
}

/* ---- wire path -------------------------------------------------------------
 * A prepared statement whose result nobody reads (no capture) is executed
 * here: COM_STMT_EXECUTE built and sent in one send(), its reply walked
 * packet by packet in the library's read-ahead cache (as bt_my_skip_rows
 * does), rows counted and skipped.  mysql_stmt_execute allocates and frees
 * a request buffer per call and reads the reply through its packet layers
 * and statement state machine: without them a point select took 6% less
 * client CPU, a read-only transaction 8% less (alternating 10 s runs).  The
 * library made the connection and prepared the statement, and stays idle in
 * between (every exchange of ours is a whole command and its whole reply),
 * so its own calls (prepares, captured results, text statements) go on
 * working.  Only where bt_my_own_reads holds, as for bt_my_skip_rows. */
enum { BT_MY_COM_STMT_EXECUTE = 0x17, BT_MY_TYPE_NULL = 6, BT_MY_TYPE_LONGLONG = 8,
       BT_MY_TYPE_STRING = 0xfe, BT_MY_MAX_PACKET = 0xffffff };
#define BT_MY_DEPRECATE_EOF (1UL << 24)

static uchar *bt_my_put_lenenc(uchar *p, uint64_t v)
{
    int n = 0;
    if (v < 251) {
        *p++ = (uchar)v;
        return p;
    }
    if (v < 65536) {
        *p++ = 0xfc;
        n = 2;
    } else if (v < 16777216) {
        *p++ = 0xfd;
        n = 3;
    } else {
        *p++ = 0xfe;
        n = 8;
    }
    for (int i = 0; i < n; i++)
        *p++ = (uchar)(v >> (8 * i));
    return p;
}

/* A length-encoded integer at *p (not past end); -1 when malformed. */
static int bt_my_get_lenenc(const uchar **p, const uchar *end, uint64_t *v)
{
    if (*p >= end)
        return -1;
    uchar b = *(*p)++;
    int n = b < 251 ? 0 : b == 0xfc ? 2 : b == 0xfd ? 3 : b == 0xfe ? 8 : -1;
    if (n < 0 || end - *p < n)
        return -1;
    *v = n ? 0 : b;
    for (int i = 0; i < n; i++)
        *v |= (uint64_t)(*p)[i] << (8 * i);
    *p += n;
    return 0;
}

/* COM_STMT_EXECUTE with every parameter's type (so the server never holds
 * the library's older ones) in c->wire; 1 when too big for one packet. */
static int bt_my_wire_request(bt_my_conn *c, const bt_my_stmt *st, const bt_value *params, int32_t n,
                              bt_err *err)
{
    size_t need = 4 + 1 + 4 + 1 + 4 + (size_t)(n + 7) / 8 + 1 + 2 * (size_t)n;
    for (int32_t i = 0; i < n; i++)
        need += params[i].type == BT_VAL_INT ? 8 : params[i].type == BT_VAL_STR ? 9 + params[i].len : 0;
    if (need - 4 >= BT_MY_MAX_PACKET)
        return 1;
    if (bt_textbuf_reserve(&c->wire, need) != 0) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "out of memory");
        return -1;
    }
    uchar *b = (uchar *)c->wire.buf, *p = b + 4;
    unsigned long id = st->stmt->stmt_id;
    *p++ = BT_MY_COM_STMT_EXECUTE;
    for (int i = 0; i < 4; i++)
        *p++ = (uchar)(id >> (8 * i));
    *p++ = 0;                                   /* no cursor */
    *p++ = 1, *p++ = 0, *p++ = 0, *p++ = 0;     /* iteration count */
    uchar *nulls = p;
    memset(nulls, 0, (size_t)(n + 7) / 8);
    p += (n + 7) / 8;
    *p++ = 1;                                   /* types follow */
    for (int32_t i = 0; i < n; i++) {
        int t = params[i].type;
        if (t == BT_VAL_NULL)
            nulls[i / 8] |= (uchar)(1 << (i % 8));
        *p++ = t == BT_VAL_INT ? BT_MY_TYPE_LONGLONG : t == BT_VAL_STR ? BT_MY_TYPE_STRING : BT_MY_TYPE_NULL;
        *p++ = 0;
    }
    for (int32_t i = 0; i < n; i++) {
        const bt_value *v = &params[i];
        if (v->type == BT_VAL_INT) {
            for (int k = 0; k < 8; k++)
                *p++ = (uchar)((uint64_t)v->i >> (8 * k));
        } else if (v->type == BT_VAL_STR) {
            p = bt_my_put_lenenc(p, v->len);
            memcpy(p, v->s, v->len);
            p += v->len;
        }
    }
    size_t len = (size_t)(p - b) - 4;
    b[0] = (uchar)len, b[1] = (uchar)(len >> 8), b[2] = (uchar)(len >> 16), b[3] = 0;
    c->wire.len = len + 4;
    return 0;
}

/* The next packet of the reply: its payload's length and, when it fits the
 * read-ahead cache, the payload itself (consumed); a longer one (a big row)
 * is skipped, with only its first byte kept (*first; -1 when empty). */
static int bt_my_wire_next(bt_my_conn *c, uchar *seq, const uchar **payload, size_t *len, int *first)
{
    MARIADB_PVIO *pvio = c->my->net.pvio;
    if (bt_my_cached(pvio) < 4 && bt_my_cache_fill(pvio, 4) != 0)
        return -1;
    const uchar *h = pvio->cache_pos;
    size_t l = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    if (h[3] != *seq)
        return -1;
    (*seq)++;
    *len = l;
    *first = -1;
    if (4 + l <= PVIO_READ_AHEAD_CACHE_SIZE) {
        if (bt_my_cached(pvio) < 4 + l && bt_my_cache_fill(pvio, 4 + l) != 0)
            return -1;
        *payload = pvio->cache_pos + 4;
        if (l > 0)
            *first = (*payload)[0];
        pvio->cache_pos += 4 + l;
        return 0;
    }
    if (bt_my_cached(pvio) < 5 && bt_my_cache_fill(pvio, 5) != 0)
        return -1;
    *first = pvio->cache_pos[4];
    *payload = NULL;
    return bt_my_cache_skip(pvio, 4 + l);
}

/* An ERR packet's code, SQLSTATE and message as the library reports them. */
static int bt_my_wire_error(const uchar *p, size_t len, bt_err *err)
{
    if (!p || len < 3)
        return bt_my_lost(err, "malformed error packet from the server");
    unsigned int code = (unsigned int)p[1] | (unsigned int)p[2] << 8;
    char state[6] = "HY000", msg[sizeof err->msg];
    size_t at = 3;
    if (len >= 9 && p[3] == '#') {
        memcpy(state, p + 4, 5);
        at = 9;
    }
    size_t n = len - at < sizeof msg - 1 ? len - at : sizeof msg - 1;
    memcpy(msg, p + at, n);
    msg[n] = '\0';
    return bt_my_fail(err, code, state, msg);
}

/* Server status of an OK packet (0x00, or 0xfe ending rows with
 * CLIENT_DEPRECATE_EOF) or of an EOF packet; -1 when malformed.  OK packets
 * add their affected rows to *rows. */
static int bt_my_wire_status(const uchar *p, size_t len, int64_t *rows)
{
    if (!p)
        return -1;
    if (p[0] == 0xfe && len < 9)   /* EOF: warnings, status */
        return len >= 5 ? (int)(p[3] | p[4] << 8) : -1;
    const uchar *q = p + 1, *end = p + len;
    uint64_t affected, id;
    if (bt_my_get_lenenc(&q, end, &affected) != 0 || bt_my_get_lenenc(&q, end, &id) != 0 || end - q < 2)
        return -1;
    if (p[0] == 0x00)
        *rows += (int64_t)affected;
    return (int)(q[0] | q[1] << 8);
}

/* Executes `st` on the wire: 0, -1 with err filled, or 1 when it cannot
 * (nothing was sent: the library's path runs it). */
static int bt_my_wire_execute(bt_my_conn *c, bt_my_stmt *st, const bt_value *params, int32_t n,
                              bt_result *res, bt_err *err)
{
    int rc = bt_my_wire_request(c, st, params, n, err);
    if (rc != 0)
        return rc;
    /* the library sends its own types again on its next execute of this statement */
    st->stmt->send_types_to_server = 1;
    for (size_t off = 0; off < c->wire.len;) {
        ssize_t w = send(c->pvio_methods.fd, c->wire.buf + off, c->wire.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return bt_my_fail(err, BT_MY_CR_SERVER_GONE, "HY000", "lost connection to the server while sending");
        off += (size_t)w;
    }
    int deprecate_eof = (c->my->client_flag & c->my->server_capabilities & BT_MY_DEPRECATE_EOF) != 0;
    uchar seq = 1;
    int64_t rows = 0;
    const uchar *p;
    size_t len;
    int first, status;
    for (;;) {
        if (bt_my_wire_next(c, &seq, &p, &len, &first) != 0)
            return bt_my_lost(err, "lost connection to the server during a statement");
        if (first == 0xff)
            return bt_my_wire_error(p, len, err);
        if (first == 0x00) {
            status = bt_my_wire_status(p, len, &rows);
        } else {
            /* a result set: its column count (and MariaDB's "metadata
             * follows" flag: with cached metadata no definitions come, the
             * EOF after them does) */
            const uchar *q = p, *end = p ? p + len : NULL;
            uint64_t ncols;
            if (!p || bt_my_get_lenenc(&q, end, &ncols) != 0)
                return bt_my_lost(err, "malformed result from the server");
            uint64_t defs = (q < end && q[0] == 0 ? 0 : ncols) + !deprecate_eof;
            for (uint64_t i = 0; i < defs; i++)
                if (bt_my_wire_next(c, &seq, &p, &len, &first) != 0)
                    return bt_my_lost(err, "lost connection to the server during a statement");
            int continued = 0;
            for (;;) {
                if (bt_my_wire_next(c, &seq, &p, &len, &first) != 0)
                    return bt_my_lost(err, "lost connection to the server while skipping rows");
                if (continued) {
                    continued = len == BT_MY_MAX_PACKET;
                    continue;
                }
                continued = len == BT_MY_MAX_PACKET;
                if (first == 0x00) {
                    rows++;
                    continue;
                }
                if (first == 0xff)
                    return bt_my_wire_error(p, len, err);
                break;
            }
            status = first == 0xfe ? bt_my_wire_status(p, len, &rows) : -1;
        }
        if (status < 0)
            return bt_my_lost(err, "malformed reply from the server");
        c->my->server_status = (unsigned int)status;
        if (!(status & SERVER_MORE_RESULTS_EXIST))
            break;
    }
    c->my->net.pkt_nr = c->my->net.compress_pkt_nr = seq;
    if (res)
        res->rows = rows;
    return 0;
}
#endif

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
    if (!mysql_real_connect(c->my, host, user, cfg->password, db, port, sock,
                            CLIENT_MULTI_RESULTS)) {
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
};
