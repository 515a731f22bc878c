/* roundtrip_floor.c: the least client CPU a PostgreSQL point select can cost
 * on this machine, to set benchtop's figure against.  sysbench's
 * oltp_point_select on sbtest1..4 (a random table and id per transaction),
 * nothing else: libpq connects and prepares, then each transaction is
 * Bind/Execute/Sync in one send() and its reply read with blocking recv(),
 * as benchtop's wire path does, with no latency recording, no result and no
 * controller.  Built and run by bench/vs_peers.py --floor.
 *
 *     roundtrip_floor CONNINFO THREADS CONNS_PER_THREAD SECONDS TABLE_SIZE
 *
 * (the password from PGPASSWORD or ~/.pgpass, as libpq reads them).  Each
 * thread sends on all its connections, then reads their replies in order
 * (lockstep): with more than one connection per thread, one wake-up serves
 * several replies.  Workers run under SCHED_IDLE, as benchtop's do against
 * a server on the same host.  Prints the transactions done, for the caller
 * to divide its measured CPU by. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <libpq-fe.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

enum { TABLES = 4, MAX_CONNS = 64, MSG_CAP = 128, IN_CAP = 8192 };

typedef struct {
    const char *conninfo;
    int nconns;
    long table_size;
    unsigned seed;
    atomic_int *stop;
    long done;
    int failed;
} floor_thread;

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

/* Reads until ReadyForQuery; 0, or -1 when the connection failed. */
static int read_reply(int fd)
{
    char buf[IN_CAP];
    size_t have = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + have, sizeof buf - have, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
        size_t pos = 0;
        while (have - pos >= 5) {
            const unsigned char *h = (const unsigned char *)buf + pos;
            size_t len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
            if (len < 4 || 1 + len > sizeof buf)
                return -1;
            if (have - pos < 1 + len)
                break;
            if (h[0] == 'E')
                return -1;
            if (h[0] == 'Z')
                return 0;
            pos += 1 + len;
        }
        memmove(buf, buf + pos, have - pos);
        have -= pos;
    }
}

/* A connection with the four statements prepared; its socket, made
 * blocking, or -1 (the reason on stderr).  *out is for PQfinish either way. */
static int open_conn(const char *conninfo, PGconn **out)
{
    PGconn *c = PQconnectdb(conninfo);
    *out = c;
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "roundtrip_floor: %s", PQerrorMessage(c));
        return -1;
    }
    for (int t = 1; t <= TABLES; t++) {
        char name[8], sql[64];
        snprintf(name, sizeof name, "t%d", t);
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
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        perror("roundtrip_floor: fcntl");
        return -1;
    }
    return fd;
}

static void *run(void *arg)
{
    floor_thread *t = arg;
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp); /* best effort, as benchtop's */
    PGconn *conns[MAX_CONNS] = {0};
    int fds[MAX_CONNS];
    char msg[MSG_CAP];
    for (int i = 0; i < t->nconns && !t->failed; i++) {
        fds[i] = open_conn(t->conninfo, &conns[i]);
        t->failed = fds[i] < 0;
    }
    while (!t->failed && !atomic_load(t->stop)) {
        for (int i = 0; i < t->nconns && !t->failed; i++) {
            int table = 1 + (int)(rand_r(&t->seed) % TABLES);
            long id = 1 + (long)rand_r(&t->seed) % t->table_size;
            size_t n = bind_execute_sync(msg, table, id);
            t->failed = send(fds[i], msg, n, MSG_NOSIGNAL) != (ssize_t)n;
        }
        for (int i = 0; i < t->nconns && !t->failed; i++)
            t->failed = read_reply(fds[i]) != 0;
        if (!t->failed)
            t->done += t->nconns;
    }
    for (int i = 0; i < t->nconns; i++)
        PQfinish(conns[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: roundtrip_floor CONNINFO THREADS CONNS_PER_THREAD SECONDS TABLE_SIZE\n");
        return 2;
    }
    int nthreads = atoi(argv[2]), per = atoi(argv[3]), seconds = atoi(argv[4]);
    long table_size = atol(argv[5]);
    if (nthreads < 1 || nthreads > MAX_CONNS || per < 1 || per > MAX_CONNS || seconds < 1 || table_size < 1) {
        fprintf(stderr, "roundtrip_floor: THREADS and CONNS_PER_THREAD 1..%d, SECONDS and TABLE_SIZE >= 1\n",
                MAX_CONNS);
        return 2;
    }
    atomic_int stop = 0;
    floor_thread *ts = calloc((size_t)nthreads, sizeof *ts);
    pthread_t *ids = calloc((size_t)nthreads, sizeof *ids);
    if (!ts || !ids)
        return 1;
    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        ts[i] = (floor_thread){argv[1], per, table_size, 7919u * (unsigned)i + 1u, &stop, 0, 0};
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
