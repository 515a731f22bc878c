/* roundtrip_floor.c: the least client CPU a PostgreSQL point select can cost
 * on this machine, to set benchtop's figure against.  sysbench's
 * oltp_point_select on sbtest1..4 (a random table and id per transaction),
 * or with --pgbench pgbench's select-only (pgbench_accounts, TABLE_SIZE rows:
 * 100000 x scale), nothing else: libpq connects and prepares, then each
 * transaction is Bind/Execute/Sync in one send() and its reply read with
 * recv(), as benchtop's wire path does, with no latency recording, no result
 * and no controller.  Built and run by bench/vs_peers.py --floor.
 *
 *     roundtrip_floor CONNINFO THREADS CONNS_PER_THREAD SECONDS TABLE_SIZE
 *                     [--epoll] [--normal] [--pgbench]
 *
 * (the password from PGPASSWORD or ~/.pgpass, as libpq reads them).  Each
 * thread sends on all its connections, then reads their replies in order
 * (lockstep): with more than one connection per thread, one wake-up serves
 * several replies.  With --epoll each connection is its own closed loop
 * instead, as pgbench -c/-j and benchtop --connections/--threads run them:
 * a thread waits in epoll_wait for whichever of its connections answers,
 * reads that reply and sends that connection's next transaction.  Workers
 * run under SCHED_IDLE, as benchtop's do against a server on the same host,
 * or at normal priority with --normal.  Prints the transactions done, for
 * the caller to divide its measured CPU by. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { SBTEST_TABLES = 4, MAX_THREADS = 64, MAX_CONNS = 4096, MSG_CAP = 128, IN_CAP = 8192 };

typedef struct {
    int epoll, normal, pgbench;
} floor_mode;

typedef struct {
    const char *conninfo;
    int nconns;
    long table_size;
    unsigned seed;
    floor_mode mode;
    atomic_int *stop;
    long done;
    int failed;
} floor_thread;

/* a connection's reply so far (--epoll reads replies a piece at a time) */
typedef struct {
    int fd;
    size_t have;
    char in[IN_CAP];
} floor_conn;

/* Bind (unnamed portal, statement "t<N>", one text parameter, text
 * results), Execute (all rows), Sync; returns its length. */
static size_t bind_execute_sync(char *m, int table, long id)
{
    char val[24], name[8];
    int vn = snprintf(val, sizeof val, "%ld", id);
    int nn = snprintf(name, sizeof name, "t%d", table);
    size_t n = 0;
    m[n++] = 'B';
    size_t len_at = n;
    n += 4;
    m[n++] = '\0';                       /* portal */
    memcpy(m + n, name, (size_t)nn + 1);
    n += (size_t)nn + 1;
    m[n++] = 0; m[n++] = 0;              /* parameter formats: all text */
    m[n++] = 0; m[n++] = 1;              /* one parameter */
    m[n++] = 0; m[n++] = 0; m[n++] = 0; m[n++] = (char)vn;
    memcpy(m + n, val, (size_t)vn);
    n += (size_t)vn;
    m[n++] = 0; m[n++] = 0;              /* result formats: all text */
    uint32_t body = (uint32_t)(n - len_at);
    m[len_at] = (char)(body >> 24);
    m[len_at + 1] = (char)(body >> 16);
    m[len_at + 2] = (char)(body >> 8);
    m[len_at + 3] = (char)body;
    static const char tail[] = {'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, 'S', 0, 0, 0, 4};
    memcpy(m + n, tail, sizeof tail);
    return n + sizeof tail;
}

/* One transaction's message sent on fd: 0, or -1. */
static int send_next(floor_thread *t, int fd)
{
    char msg[MSG_CAP];
    int tables = t->mode.pgbench ? 1 : SBTEST_TABLES;
    int table = 1 + (int)(rand_r(&t->seed) % (unsigned)tables);
    long id = 1 + (long)rand_r(&t->seed) % t->table_size;
    size_t n = bind_execute_sync(msg, table, id);
    return send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* What c's buffer holds: 1 once it ends with ReadyForQuery (emptied then),
 * 0 for a reply not whole yet, -1 for an error or a message too long. */
static int reply_done(floor_conn *c)
{
    size_t pos = 0;
    while (c->have - pos >= 5) {
        const unsigned char *h = (const unsigned char *)c->in + pos;
        size_t len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
        if (len < 4 || 1 + len > sizeof c->in || h[0] == 'E')
            return -1;
        if (c->have - pos < 1 + len)
            break;
        if (h[0] == 'Z') {
            c->have = 0;
            return 1;
        }
        pos += 1 + len;
    }
    memmove(c->in, c->in + pos, c->have - pos);
    c->have -= pos;
    return 0;
}

/* One recv() into c's buffer: as reply_done, or 0 when nothing was there
 * (a non-blocking socket), -1 when the connection failed. */
static int read_some(floor_conn *c)
{
    ssize_t r = recv(c->fd, c->in + c->have, sizeof c->in - c->have, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (r <= 0)
        return -1;
    c->have += (size_t)r;
    return reply_done(c);
}

/* A connection with its statements prepared; its socket (blocking unless
 * nonblocking), or -1 (the reason on stderr).  *out is for PQfinish either way. */
static int open_conn(const char *conninfo, int pgbench, int nonblocking, PGconn **out)
{
    PGconn *c = PQconnectdb(conninfo);
    *out = c;
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "roundtrip_floor: %s", PQerrorMessage(c));
        return -1;
    }
    for (int t = 1; t <= (pgbench ? 1 : SBTEST_TABLES); t++) {
        char name[8], sql[64];
        snprintf(name, sizeof name, "t%d", t);
        if (pgbench)
            snprintf(sql, sizeof sql, "SELECT abalance FROM pgbench_accounts WHERE aid = $1");
        else
            snprintf(sql, sizeof sql, "SELECT c FROM sbtest%d WHERE id=$1", t);
        PGresult *r = PQprepare(c, name, sql, 1, NULL);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            fprintf(stderr, "roundtrip_floor: %s", PQerrorMessage(c));
        PQclear(r);
        if (!ok)
            return -1;
    }
    int fd = PQsocket(c);
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, nonblocking ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) != 0) {
        perror("roundtrip_floor: fcntl");
        return -1;
    }
    return fd;
}

static void run_lockstep(floor_thread *t, floor_conn *conns)
{
    while (!t->failed && !atomic_load(t->stop)) {
        for (int i = 0; i < t->nconns && !t->failed; i++)
            t->failed = send_next(t, conns[i].fd) != 0;
        for (int i = 0; i < t->nconns && !t->failed; i++) {
            int r;
            while ((r = read_some(&conns[i])) == 0)
                ;
            t->failed = r < 0;
        }
        if (!t->failed)
            t->done += t->nconns;
    }
}

static void run_epoll(floor_thread *t, floor_conn *conns)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    t->failed = ep < 0;
    for (int i = 0; i < t->nconns && !t->failed; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        t->failed = epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0 || send_next(t, conns[i].fd) != 0;
    }
    struct epoll_event evs[256];
    while (!t->failed && !atomic_load(t->stop)) {
        int n = epoll_wait(ep, evs, 256, 100);
        for (int i = 0; i < n && !t->failed; i++) {
            floor_conn *c = evs[i].data.ptr;
            int r = read_some(c);
            t->failed = r < 0;
            if (r == 1) {
                t->done++;
                t->failed = send_next(t, c->fd) != 0;
            }
        }
        if (n < 0 && errno != EINTR)
            t->failed = 1;
    }
    if (ep >= 0)
        close(ep);
}

static void *run(void *arg)
{
    floor_thread *t = arg;
    if (!t->mode.normal) {
        struct sched_param sp = {0};
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp); /* best effort, as benchtop's */
    }
    PGconn **pg = calloc((size_t)t->nconns, sizeof *pg);
    floor_conn *conns = calloc((size_t)t->nconns, sizeof *conns);
    t->failed = !pg || !conns;
    for (int i = 0; i < t->nconns && !t->failed; i++) {
        conns[i].fd = open_conn(t->conninfo, t->mode.pgbench, t->mode.epoll, &pg[i]);
        t->failed = conns[i].fd < 0;
    }
    if (!t->failed) {
        if (t->mode.epoll)
            run_epoll(t, conns);
        else
            run_lockstep(t, conns);
    }
    for (int i = 0; pg && i < t->nconns; i++)
        PQfinish(pg[i]);
    free(pg);
    free(conns);
    return NULL;
}

int main(int argc, char **argv)
{
    floor_mode mode = {0};
    int bad = argc < 6;
    for (int i = 6; i < argc; i++) {
        if (strcmp(argv[i], "--epoll") == 0)
            mode.epoll = 1;
        else if (strcmp(argv[i], "--normal") == 0)
            mode.normal = 1;
        else if (strcmp(argv[i], "--pgbench") == 0)
            mode.pgbench = 1;
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: roundtrip_floor CONNINFO THREADS CONNS_PER_THREAD SECONDS TABLE_SIZE"
                        " [--epoll] [--normal] [--pgbench]\n");
        return 2;
    }
    int nthreads = atoi(argv[2]), per = atoi(argv[3]), seconds = atoi(argv[4]);
    long table_size = atol(argv[5]);
    if (nthreads < 1 || nthreads > MAX_THREADS || per < 1 || per > MAX_CONNS || seconds < 1 || table_size < 1) {
        fprintf(stderr, "roundtrip_floor: THREADS 1..%d, CONNS_PER_THREAD 1..%d, SECONDS and TABLE_SIZE >= 1\n",
                MAX_THREADS, MAX_CONNS);
        return 2;
    }
    atomic_int stop = 0;
    floor_thread *ts = calloc((size_t)nthreads, sizeof *ts);
    pthread_t *ids = calloc((size_t)nthreads, sizeof *ids);
    if (!ts || !ids)
        return 1;
    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        ts[i] = (floor_thread){argv[1], per, table_size, 7919u * (unsigned)i + 1u, mode, &stop, 0, 0};
        if (pthread_create(&ids[i], NULL, run, &ts[i]) != 0)
            break;
        started++;
    }
    sleep((unsigned)seconds);
    atomic_store(&stop, 1);
    long done = 0;
    int failed = started < nthreads;
    for (int i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        done += ts[i].done;
        failed |= ts[i].failed;
    }
    free(ts);
    free(ids);
    if (failed) {
        fprintf(stderr, "roundtrip_floor: a connection failed\n");
        return 1;
    }
    printf("transactions: %ld\n", done);
    return 0;
}
