/* driver_mysql_wire.c: the MySQL driver's own protocol path, past the
 * client library (libmariadb 3 only: it reaches into the connection's
 * MARIADB_PVIO and read-ahead cache).
 *
 * The library makes the connection, prepares statements and runs everything
 * else (driver_mysql.c); on a plain socket without compression this file
 * gives the connection blocking reads, skips the rows nobody reads, and runs
 * a prepared statement whose result is not captured as one hand-built
 * COM_STMT_EXECUTE.  Each exchange here is a whole command and its whole
 * reply, so the library's state is as it left it when it is next called.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "driver_mysql.h"
#include "evloop.h"
#include "sockio.h"

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
    for (;;) {
        r = bt_recv(bm->fd, buf, len, 0);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        /* an event loop's socket stays non-blocking: the fiber waits for it,
         * up to the read timeout (the library's own, in ms: 0 or less is none) */
        if (!bm->async || (errno != EAGAIN && errno != EWOULDBLOCK))
            return r;
        int w = bt_io_wait(bm->fd, POLLIN, bm->read_ms > 0 ? bm->read_ms : -1, 0);
        if (w <= 0) {
            errno = w == 0 ? EAGAIN : ECONNABORTED;
            return -1;
        }
    }
}

/* An event loop's writes and the library's waits (TLS reads and writes
 * wait through wait_io_or_timeout) switch to the loop instead of poll(). */
static ssize_t bt_my_pvio_write(MARIADB_PVIO *pvio, const uchar *buf, size_t len)
{
    const bt_my_pvio_methods *bm = (const bt_my_pvio_methods *)pvio->methods;
    for (;;) {
        ssize_t r = bt_send(bm->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return r;
        int t = pvio->timeout[PVIO_WRITE_TIMEOUT];
        int w = bt_io_wait(bm->fd, POLLOUT, t > 0 ? t : -1, 0);
        if (w <= 0) {
            errno = w == 0 ? EAGAIN : ECONNABORTED;
            return -1;
        }
    }
}

static int bt_my_pvio_wait(MARIADB_PVIO *pvio, my_bool is_read, int timeout)
{
    const bt_my_pvio_methods *bm = (const bt_my_pvio_methods *)pvio->methods;
    return bt_io_wait(bm->fd, is_read ? POLLIN : POLLOUT, timeout, 0);
}

void bt_my_blocking_reads(bt_my_conn *c)
{
    MARIADB_PVIO *pvio = c->my->net.pvio;
    if (c->opts.async && pvio && pvio->methods) {
        /* an event loop: the socket stays non-blocking and every wait, the
         * library's included (TLS), switches to the loop */
        int fd = (int)mysql_get_socket(c->my);
        int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
        /* the library leaves it blocking after its non-blocking connect */
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
            return;
        c->pvio_methods.m = *pvio->methods;
        c->pvio_methods.fd = fd;
        c->pvio_methods.async = 1;
        c->pvio_methods.read_ms = c->opts.query_timeout_ms > 0 ? c->opts.query_timeout_ms
                                                               : (int)c->opts.read_timeout_s * 1000;
        c->pvio_methods.m.wait_io_or_timeout = bt_my_pvio_wait;
        if (!pvio->ctls) {
            c->pvio_methods.m.read = bt_my_pvio_read;
            c->pvio_methods.m.write = bt_my_pvio_write;
        }
        pvio->methods = &c->pvio_methods.m;
        return;
    }
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

int bt_my_lost(bt_err *err, const char *why)
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
int64_t bt_my_skip_rows(bt_my_conn *c)
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
int bt_my_wire_execute(bt_my_conn *c, bt_my_stmt *st, const bt_value *params, int32_t n,
                       bt_result *res, bt_err *err)
{
    int rc = bt_my_wire_request(c, st, params, n, err);
    if (rc != 0)
        return rc;
    /* the library sends its own types again on its next execute of this statement */
    st->stmt->send_types_to_server = 1;
    for (size_t off = 0; off < c->wire.len;) {
        ssize_t w = bt_send(c->pvio_methods.fd, c->wire.buf + off, c->wire.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && c->pvio_methods.async &&
            bt_io_wait(c->pvio_methods.fd, POLLOUT, -1, 0) > 0)
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
