/* driver_fileio.c: sysbench fileio in the engine.  A "connection" is a set
 * of open files (test_file.0 .. test_file.N-1 in a folder, the names sysbench
 * uses), and the "statements" the fileio program sends are IO requests:
 *
 *   read ? ?   / write ? ?   pread/pwrite one block: file number, block number
 *   seqread    / seqwrite    the next block of this connection's sequential
 *                            sweep over all files (wrapping at the end)
 *   fsync ?                  fsync (or fdatasync) one file
 *   fsync_last               the file of this connection's last request
 *                            (--file-fsync-all: after every write)
 *
 * Options (bt_conn_config.options, `key=value;...`): file_num, file_size
 * (bytes per file), block_size, direct (O_DIRECT), sync (O_SYNC), dsync
 * (O_DSYNC), fsync_end (every file at
 * disconnect, if written), fdatasync (instead of fsync), async (backlog:
 * requests a connection keeps in flight through io_uring, sysbench's
 * --file-io-mode=async --file-async-backlog; 0 = synchronous), mmap (files
 * mapped, requests are memory copies and fsync is msync, as sysbench's
 * --file-io-mode=mmap).  The folder is bt_conn_config.database.
 *
 * In async mode a request returns once submitted (as sysbench's events do)
 * unless the backlog is full, when it first waits for a completion; the
 * connection drains its requests before it ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef BT_HAVE_URING
#include <liburing.h>
#endif

#include "driver.h"

#define BT_FILEIO_ALIGN 4096
#define BT_FILEIO_MAX_FILES 65536
#define BT_FILEIO_MAX_BACKLOG 4096
#define BT_FILEIO_FSYNC_TAG 0xFFFFFFFFu  /* user data of an fsync: it has no buffer */

typedef struct {
    int32_t nfiles;
    int *fds;
    int64_t file_size;
    int64_t block_size;
    int64_t blocks_per_file;
    int fsync_end, use_fdatasync, wrote;
    int32_t last_file;
    char *buf;
    /* sequential sweep of this connection */
    int32_t seq_file;
    int64_t seq_block;
    /* mmap mode: one mapping per file */
    char **maps;
    /* async mode: `backlog` buffers, those not in flight listed in free_slots */
    int32_t backlog, inflight, nfree;
    int32_t *free_slots;
    char *slots;
#ifdef BT_HAVE_URING
    struct io_uring ring;
    int ring_ready;
#endif
} bt_fileio;

/* Spreads the sequential sweeps of concurrent connections over the files,
 * as sysbench's threads share one sweep; only a starting point. */
static _Atomic uint32_t bt_fileio_conns;

typedef struct {
    int64_t file_num, file_size, block_size, async;
    int direct, sync, dsync, fsync_end, fdatasync, mmap;
} bt_fileio_opts;

static int parse_opts(const char *s, bt_fileio_opts *o, char *bad, size_t badlen)
{
    *o = (bt_fileio_opts){.file_num = 128, .file_size = 16384 * 1024, .block_size = 16384, .fsync_end = 1};
    while (s && *s) {
        const char *end = strchr(s, ';');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char item[128];
        if (len >= sizeof item)
            len = sizeof item - 1;
        memcpy(item, s, len);
        item[len] = '\0';
        char *eq = strchr(item, '=');
        if (eq) {
            *eq = '\0';
            char *stop = NULL;
            long long v = strtoll(eq + 1, &stop, 10);
            if (!stop || *stop != '\0' || v < 0) {
                snprintf(bad, badlen, "fileio option %s: %s is not a number >= 0", item, eq + 1);
                return -1;
            }
            if (!strcmp(item, "file_num")) o->file_num = v;
            else if (!strcmp(item, "file_size")) o->file_size = v;
            else if (!strcmp(item, "block_size")) o->block_size = v;
            else if (!strcmp(item, "direct")) o->direct = v != 0;
            else if (!strcmp(item, "sync")) o->sync = v != 0;
            else if (!strcmp(item, "dsync")) o->dsync = v != 0;
            else if (!strcmp(item, "fsync_end")) o->fsync_end = v != 0;
            else if (!strcmp(item, "fdatasync")) o->fdatasync = v != 0;
            else if (!strcmp(item, "async")) o->async = v;
            else if (!strcmp(item, "mmap")) o->mmap = v != 0;
            else {
                snprintf(bad, badlen, "unknown fileio option %s", item);
                return -1;
            }
        }
        s = end ? end + 1 : NULL;
    }
    if (o->file_num < 1 || o->file_num > BT_FILEIO_MAX_FILES || o->block_size < 1 ||
        o->file_size < o->block_size) {
        snprintf(bad, badlen, "fileio needs 1..%d files of at least one block each", BT_FILEIO_MAX_FILES);
        return -1;
    }
    if (o->async > BT_FILEIO_MAX_BACKLOG || (o->async && o->mmap)) {
        snprintf(bad, badlen, "fileio: async backlog 1..%d, and not with mmap", BT_FILEIO_MAX_BACKLOG);
        return -1;
    }
#ifndef BT_HAVE_URING
    if (o->async) {
        snprintf(bad, badlen, "--file-io-mode async needs io_uring: this build has no liburing "
                              "(apt-get install liburing-dev, then reinstall benchtop)");
        return -1;
    }
#endif
    return 0;
}

static int sync_file(bt_fileio *c, int32_t file)
{
    if (c->maps)
        return msync(c->maps[file], (size_t)c->file_size, MS_SYNC | MS_INVALIDATE);
    return c->use_fdatasync ? fdatasync(c->fds[file]) : fsync(c->fds[file]);
}

#ifdef BT_HAVE_URING
/* Reaps completions: waits for at least `need`, then takes whatever else is
 * done.  Returns 0, or -1 with the first failed request in err. */
static int reap(bt_fileio *c, int32_t need, bt_err *err);
#endif

static void fio_disconnect(void *conn)
{
    bt_fileio *c = conn;
    if (!c)
        return;
#ifdef BT_HAVE_URING
    if (c->ring_ready) {
        bt_err ignored = {0};
        while (c->inflight > 0 && reap(c, 1, &ignored) == 0)
            ;
        io_uring_queue_exit(&c->ring);
    }
#endif
    for (int32_t i = 0; i < c->nfiles; i++) {
        if (c->fds[i] < 0)
            continue;
        /* sysbench --file-fsync-end: written data reaches the disk before the end */
        if (c->wrote && c->fsync_end)
            (void)sync_file(c, i);
        if (c->maps && c->maps[i] && c->maps[i] != MAP_FAILED)
            munmap(c->maps[i], (size_t)c->file_size);
        close(c->fds[i]);
    }
    free(c->maps);
    free(c->fds);
    free(c->buf);
    free(c->slots);
    free(c->free_slots);
    free(c);
}

static int map_files(bt_fileio *c, char *msg, size_t msglen)
{
    c->maps = calloc((size_t)c->nfiles, sizeof *c->maps);
    if (!c->maps) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    for (int32_t i = 0; i < c->nfiles; i++) {
        c->maps[i] = mmap(NULL, (size_t)c->file_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fds[i], 0);
        if (c->maps[i] == MAP_FAILED) {
            snprintf(msg, msglen, "cannot mmap test_file.%d: %s", i, strerror(errno));
            return -1;
        }
    }
    return 0;
}

#ifdef BT_HAVE_URING
static int start_ring(bt_fileio *c, int32_t backlog, char *msg, size_t msglen)
{
    int rc = io_uring_queue_init((unsigned)backlog, &c->ring, 0);
    if (rc < 0) {
        snprintf(msg, msglen, "cannot set up io_uring for --file-io-mode async: %s", strerror(-rc));
        return -1;
    }
    c->ring_ready = 1;
    c->backlog = backlog;
    c->free_slots = malloc(sizeof(int32_t) * (size_t)backlog);
    if (!c->free_slots ||
        posix_memalign((void **)&c->slots, BT_FILEIO_ALIGN, (size_t)(backlog * c->block_size)) != 0) {
        c->slots = NULL;
        snprintf(msg, msglen, "out of memory for %d async buffers", backlog);
        return -1;
    }
    for (int32_t i = 0; i < backlog; i++) {
        memcpy(c->slots + i * c->block_size, c->buf, (size_t)c->block_size);
        c->free_slots[i] = i;
    }
    c->nfree = backlog;
    return 0;
}

static int reap(bt_fileio *c, int32_t need, bt_err *err)
{
    int failed = 0;
    while (c->inflight > 0) {
        struct io_uring_cqe *cqe = NULL;
        int rc = need > 0 ? io_uring_wait_cqe(&c->ring, &cqe) : io_uring_peek_cqe(&c->ring, &cqe);
        if (rc == -EAGAIN || (rc == 0 && !cqe))
            break;
        if (rc == -EINTR)
            continue;
        if (rc < 0) {
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, -rc, NULL, "io_uring wait failed");
            return -1;
        }
        uint64_t tag = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&c->ring, cqe);
        c->inflight--;
        need--;
        uint32_t slot = (uint32_t)tag;
        if (slot != BT_FILEIO_FSYNC_TAG)
            c->free_slots[c->nfree++] = (int32_t)slot;
        int ok = slot == BT_FILEIO_FSYNC_TAG ? res == 0 : res == (int)c->block_size;
        if (!ok && !failed) {
            char m[384];
            snprintf(m, sizeof m, "async %s on test_file.%u failed: %s",
                     slot == BT_FILEIO_FSYNC_TAG ? "fsync" : "read/write", (unsigned)(tag >> 32),
                     res < 0 ? strerror(-res) : "short transfer");
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, res < 0 ? -res : 0, NULL, m);
            failed = 1;
        }
    }
    return failed ? -1 : 0;
}

/* Submits one request; waits only when the backlog is full. */
static int submit(bt_fileio *c, int op, int32_t file, off_t off, bt_err *err)
{
    if (c->nfree == 0 && reap(c, 1, err) != 0)
        return -1;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
    if (!sqe) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "io_uring submission queue full");
        return -1;
    }
    uint32_t slot = BT_FILEIO_FSYNC_TAG;
    if (op == 2) {
        io_uring_prep_fsync(sqe, c->fds[file], c->use_fdatasync ? IORING_FSYNC_DATASYNC : 0);
    } else {
        slot = (uint32_t)c->free_slots[--c->nfree];
        char *buf = c->slots + (int64_t)slot * c->block_size;
        if (op == 1)
            io_uring_prep_write(sqe, c->fds[file], buf, (unsigned)c->block_size, (uint64_t)off);
        else
            io_uring_prep_read(sqe, c->fds[file], buf, (unsigned)c->block_size, (uint64_t)off);
    }
    io_uring_sqe_set_data64(sqe, ((uint64_t)(uint32_t)file << 32) | slot);
    int rc = io_uring_submit(&c->ring);
    if (rc < 0) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, -rc, NULL, "io_uring submit failed");
        return -1;
    }
    c->inflight++;
    /* collect what has completed meanwhile without waiting: frees buffers early */
    return reap(c, c->inflight >= c->backlog ? 1 : 0, err);
}
#endif

static int fio_connect(const bt_conn_config *cfg, void **conn, bt_err *err)
{
    char msg[384];
    bt_fileio_opts o;
    if (parse_opts(cfg->options, &o, msg, sizeof msg) != 0) {
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, NULL, msg);
        return -1;
    }
    const char *dir = cfg->database && cfg->database[0] ? cfg->database : ".";
    bt_fileio *c = calloc(1, sizeof *c);
    if (!c || !(c->fds = malloc(sizeof(int) * (size_t)o.file_num)) ||
        posix_memalign((void **)&c->buf, BT_FILEIO_ALIGN, (size_t)o.block_size) != 0) {
        if (c)
            c->buf = NULL;
        fio_disconnect(c);
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, NULL, "out of memory");
        return -1;
    }
    for (int64_t i = 0; i < o.block_size; i++)
        c->buf[i] = (char)('a' + i % 26);
    c->file_size = o.file_size;
    c->block_size = o.block_size;
    c->blocks_per_file = o.file_size / o.block_size;
    c->fsync_end = o.fsync_end;
    c->use_fdatasync = o.fdatasync;
    int flags = O_RDWR;
#ifdef O_DIRECT
    if (o.direct)
        flags |= O_DIRECT;
#endif
    if (o.sync)
        flags |= O_SYNC;
    if (o.dsync)
        flags |= O_DSYNC;
    for (int32_t i = 0; i < (int32_t)o.file_num; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/test_file.%d", dir, i);
        c->fds[i] = open(path, flags);
        c->nfiles = i + 1;
        if (c->fds[i] < 0) {
            int e = errno;
            if (e == ENOENT)
                snprintf(msg, sizeof msg, "%.200s is missing: run `benchtop prepare --engine fileio` with the same --dir and --file-num first", path);
            else if (e == EINVAL && o.direct)
                snprintf(msg, sizeof msg, "cannot open %.200s with O_DIRECT (--file-extra-flags direct): this filesystem does not support it", path);
            else
                snprintf(msg, sizeof msg, "cannot open %.200s: %s", path, strerror(e));
            fio_disconnect(c);
            bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, e, NULL, msg);
            return -1;
        }
    }
    if (o.mmap && map_files(c, msg, sizeof msg) != 0) {
        fio_disconnect(c);
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, errno, NULL, msg);
        return -1;
    }
#ifdef BT_HAVE_URING
    if (o.async && start_ring(c, (int32_t)o.async, msg, sizeof msg) != 0) {
        fio_disconnect(c);
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_FATAL, 0, NULL, msg);
        return -1;
    }
#endif
    uint32_t k = atomic_fetch_add(&bt_fileio_conns, 1);
    c->seq_file = (int32_t)(k % (uint32_t)c->nfiles);
    *conn = c;
    return 0;
}

static int io_failed(bt_err *err, const char *what, int32_t file, int e)
{
    char msg[384];
    snprintf(msg, sizeof msg, "%s on test_file.%d failed: %s", what, file, e ? strerror(e) : "short transfer");
    bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, e, NULL, msg);
    return -1;
}

static int do_io(bt_fileio *c, int write, int32_t file, int64_t block, bt_result *res, bt_err *err)
{
    if (file < 0 || file >= c->nfiles || block < 0 || block >= c->blocks_per_file) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "fileio request outside the prepared files");
        return -1;
    }
    off_t off = (off_t)(block * c->block_size);
    c->last_file = file;
    if (write)
        c->wrote = 1;
#ifdef BT_HAVE_URING
    if (c->ring_ready) {
        if (submit(c, write, file, off, err) != 0)
            return -1;
        if (res)
            res->rows = 1;
        return 0;
    }
#endif
    if (c->maps) {
        if (write)
            memcpy(c->maps[file] + off, c->buf, (size_t)c->block_size);
        else
            memcpy(c->buf, c->maps[file] + off, (size_t)c->block_size);
    } else {
        ssize_t n = write ? pwrite(c->fds[file], c->buf, (size_t)c->block_size, off)
                          : pread(c->fds[file], c->buf, (size_t)c->block_size, off);
        if (n != (ssize_t)c->block_size)
            return io_failed(err, write ? "write" : "read", file, n < 0 ? errno : 0);
    }
    if (res)
        res->rows = 1;
    return 0;
}

static int64_t param_int(const bt_value *params, int32_t nparams, int32_t i)
{
    return i < nparams && params[i].type == BT_VAL_INT ? params[i].i : -1;
}

static int fio_execute(void *conn, int32_t key, const char *sql, const bt_value *params,
                       int32_t nparams, bt_result *res, bt_err *err)
{
    (void)key;
    bt_fileio *c = conn;
    if (!strncmp(sql, "seq", 3)) {
        int32_t file = c->seq_file;
        int64_t block = c->seq_block;
        if (++c->seq_block >= c->blocks_per_file) {
            c->seq_block = 0;
            c->seq_file = (c->seq_file + 1) % c->nfiles;
        }
        return do_io(c, !strncmp(sql, "seqwrite", 8), file, block, res, err);
    }
    if (!strncmp(sql, "read", 4) || !strncmp(sql, "write", 5))
        return do_io(c, sql[0] == 'w', (int32_t)param_int(params, nparams, 0),
                     param_int(params, nparams, 1), res, err);
    if (!strncmp(sql, "fsync", 5)) {
        int32_t file = !strcmp(sql, "fsync_last") ? c->last_file : (int32_t)param_int(params, nparams, 0);
        if (file < 0 || file >= c->nfiles) {
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "fsync of a file that was not prepared");
            return -1;
        }
#ifdef BT_HAVE_URING
        if (c->ring_ready)
            return submit(c, 2, file, 0, err);
#endif
        if (sync_file(c, file) != 0)
            return io_failed(err, "fsync", file, errno);
        return 0;
    }
    bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "the fileio engine runs only fileio requests");
    return -1;
}

/* BEGIN/COMMIT/ROLLBACK have no meaning for files. */
static int fio_exec_text(void *conn, const char *sql, bt_result *res, bt_err *err)
{
    (void)conn;
    (void)sql;
    (void)err;
    if (res)
        res->rows = 0;
    return 0;
}

const bt_driver bt_driver_fileio = {
    .name = "fileio",
    .connect = fio_connect,
    .disconnect = fio_disconnect,
    .execute = fio_execute,
    .exec_text = fio_exec_text,
    .quote = NULL,
    .thread_end = NULL,
};
