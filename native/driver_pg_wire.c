/* driver_pg_wire.c: the PostgreSQL driver's own protocol path, past libpq.
 *
 * libpq reads every row of a result into its PGresult, parsing and copying
 * each value, though a workload reads at most the first column of the first
 * row.  So on a plain socket (no TLS), without --query-timeout, pipeline
 * mode or the pooler fallback (driver_pg.c's connect sets c->wire), a
 * prepared statement runs on the wire here: Bind, Execute and Sync in one
 * send, the reply walked message by message in this connection's buffer,
 * DataRows counted and skipped.  libpq made the connection and prepares the
 * statements, and stays idle in between (its replies and ours both end at
 * ReadyForQuery), so its own calls (BEGIN, COMMIT, first prepares) go on
 * working on the same socket.  The wire path's reads block in recv() (the
 * socket is switched to blocking for them, back to non-blocking for libpq).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "driver_pg.h"
#include "evloop.h"
#include "sockio.h"

/* The wire path waits for a reply inside recv(): one system call per
 * reply instead of poll() + recv(), 3-4% of a point select's client CPU.
 * libpq needs its socket non-blocking (it reads on until EAGAIN), so every
 * libpq call switches it back first; a workload that mixes the two (BEGIN
 * and COMMIT around prepared statements) switches twice per transaction.
 * When fcntl fails the socket stays as it is and the reads poll. */
void bt_pg_blocking(bt_pg_conn *c, int on)
{
    /* a libpq call follows: it may drop the socket, whose number a new one
     * can then take (read it again before the wire path's next send) */
    if (!on)
        c->fd_stale = 1;
    if (c->blocking == on || c->async)
        return;
    int fd = on ? c->fd : PQsocket(c->pg);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fl >= 0 && fcntl(fd, F_SETFL, on ? fl & ~O_NONBLOCK : fl | O_NONBLOCK) == 0)
        c->blocking = on;
}

/* Protocol 3 messages: a type byte, then a big-endian int32 length that
 * counts itself but not the type. */
enum { BT_PG_IN_MIN = 65536, BT_PG_MSG_MAX = 1 << 30 };

static char *bt_pg_put32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
    return p + 4;
}

static char *bt_pg_put16(char *p, uint16_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
    return p + 2;
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

/* Bind (text parameters, text results), Execute (all rows), Sync: sized
 * first, then written in place (an append per field, each checking room,
 * was 7% of a point select's client CPU on an event loop). */
static int bt_pg_wire_message(bt_pg_conn *c, const bt_pg_stmt *st)
{
    static const char tail[] = {'E', 0, 0, 0, 9, 0, 0, 0, 0, 0,
                                'S', 0, 0, 0, 4};
    size_t name = strlen(st->name) + 1;
    size_t body = 4 + 1 + name + 2 + 2 + 2;  /* its length, portal, name, formats, count, result formats */
    for (int i = 0; i < st->nparams; i++) {
        body += 4 + st->pv[i].len;
        if (body > BT_PG_MSG_MAX)
            return -1;
    }
    if (bt_textbuf_reserve(&c->out, 1 + body + sizeof tail) != 0)
        return -1;
    char *p = c->out.buf;
    *p++ = 'B';
    p = bt_pg_put32(p, (uint32_t)body);
    *p++ = '\0';  /* the unnamed portal */
    memcpy(p, st->name, name);
    p = bt_pg_put16(p + name, 0);  /* parameter formats: all text */
    p = bt_pg_put16(p, (uint16_t)st->nparams);
    for (int i = 0; i < st->nparams; i++) {
        const char *v = st->values[i];
        size_t n = st->pv[i].len;
        p = bt_pg_put32(p, v ? (uint32_t)n : 0xffffffffu);
        memcpy(p, v ? v : "", n);
        p += n;
    }
    p = bt_pg_put16(p, 0);  /* result formats: all text */
    memcpy(p, tail, sizeof tail);
    c->out.len = (size_t)(p - c->out.buf) + sizeof tail;
    return 0;
}

static int bt_pg_wire_send(bt_pg_conn *c, bt_err *err)
{
    int fd = c->fd;
    size_t off = 0;
    while (off < c->out.len) {
        ssize_t n = bt_send(fd, c->out.buf + off, c->out.len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (bt_io_wait(fd, POLLOUT, -1, 0) < 0)
                return bt_pg_wire_lost(err, bt_io_aborted() ? "stopped" : strerror(errno));
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
    int fd = c->fd;
    while (c->in_len < need) {
        /* on a loop the first read after a send waits first: the reply is
         * never there yet, and a recv that says so is a wasted system call */
        if (!c->blocking && (!c->async || c->just_sent) && bt_io_wait(fd, POLLIN, -1, 0) < 0) {
            c->just_sent = 0;
            return bt_pg_wire_lost(err, bt_io_aborted() ? "stopped" : strerror(errno));
        }
        c->just_sent = 0;
        ssize_t n = bt_recv(fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0)
            c->in_len += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->async && bt_io_wait(fd, POLLIN, -1, 0) < 0)
                return bt_pg_wire_lost(err, bt_io_aborted() ? "stopped" : strerror(errno));
            continue;
        }
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
int bt_pg_wire_execute(bt_pg_conn *c, const bt_pg_stmt *st, bt_result *res, bt_err *err)
{
    /* PQsocket reads a line of libpq's PGconn that nothing else here needs */
    if (c->fd_stale) {
        c->fd = PQsocket(c->pg);
        c->fd_stale = 0;
    }
    bt_pg_blocking(c, 1);
    if (bt_pg_wire_message(c, st) != 0)
        return bt_pg_oom(err);
    if (bt_pg_wire_send(c, err) != 0)
        return -1;
    c->just_sent = c->async;
    /* the server's message goes straight to err's: a buffer of its own here
     * made this frame 500 bytes, between a fiber's wait and the frames above */
    char state[6];
    state[0] = err->msg[0] = '\0';
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
                    snprintf(err->msg, sizeof err->msg, "%.*s", (int)n, v);
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
        if (strcmp(state, "26000") == 0 || strcmp(state, "42P05") == 0) {
            err->msg[0] = '\0';
            return 1;
        }
        /* bt_pg_classify copies the message before it sets err */
        return bt_pg_classify(c, state[0] ? state : NULL, err->msg[0] ? err->msg : "statement failed", err);
    }
    if (res)
        res->rows = rows > 0 ? rows : tag_rows;
    return 0;
}
