/* engine.h: the engine handle's insides (struct bt_engine, opaque to cffi
 * in benchtop_api.h), shared by the engine's parts (engine.c, group.c,
 * worker.c, workload.c, load.c).  Not seen by cffi. */
#ifndef BT_ENGINE_H
#define BT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "benchtop_api.h"
#include "driver.h"
#include "group.h"
#include "rand.h"
#include "worker.h"

struct bt_engine {
    bt_config cfg;          /* strings owned (duplicated) */
    char *strs[8];          /* the duplicated strings, freed with the engine */
    int32_t *ignore_codes;
    const bt_driver *drv;
    const bt_program *prog;
    char **sql_by_key;      /* statement text per (statement, table): key = s * (max_table + 1) + t */
    int32_t nkeys;
    bt_rand_params rp;
    bt_group_rt *groups;    /* ngroups of them, each with its own schedule */
    int32_t ngroups;

    _Atomic int state;
    _Atomic int stop;
    _Atomic uint64_t stop_ns;  /* the run's end: snapshots' t ends there, and a transaction
                                * done after it is unfinished, not counted */
    _Atomic int events_done;   /* --events all started: the end is when the last one is done */
    _Atomic int paused;
    _Atomic int64_t events_started;
    _Atomic int ever_connected;
    _Atomic uint32_t unique_index;
    uint32_t unique_offset;
    _Atomic uint64_t rows_loaded;
    _Atomic uint64_t start_ns;       /* 0 until the run starts (bt_engine_first_try_done) */
    _Atomic int32_t first_pending;   /* event loops: clients of the start yet to try their first connection */
    _Atomic int gate;                /* BT_GATE_*: the start (a futex word bt_engine_wait_started sleeps on) */
    uint64_t seed;

    pthread_mutex_t ctl_mu;  /* worker slots, error text; never taken on the hot path */
    bt_worker *workers[BT_MAX_THREADS];
    int32_t nworkers;
    int32_t live;            /* worker threads not yet exited (ctl_mu) */
    int32_t aborted;         /* clients a failed expression aborted (ctl_mu) */
    int released;            /* bt_engine_free gave up: the last worker frees (ctl_mu) */
    int idle_workers;        /* workers run under SCHED_IDLE, for the rest of the run (ctl_mu):
                                asked for (bt_config), or a driver that never waits */
    int32_t ncpu;
    int32_t loop_threads;    /* > 0: that many event loops per group drive its connections */
    pthread_cond_t exit_cv;  /* a worker exited (with ctl_mu) */
    pthread_mutex_t pause_mu;
    pthread_cond_t resume_cv; /* the pause ended or the run stopped (with pause_mu) */
    char error[512];
    char connect_error[256]; /* the latest refused connection attempt's message (ctl_mu) */
    char lost_error[256];    /* the latest lost connection's message (ctl_mu) */
};

/* Starts a snapshot: zeroes `out` and the caller's histogram buffers (either
 * may be NULL) and returns the snapshot's clock, which stops at the stop
 * request (the measured time ends there). */
uint64_t bt_snapshot_begin(bt_engine *e, void *out, size_t out_size, uint64_t *lat_hist, uint64_t *svc_hist);
void bt_engine_fail(bt_engine *e, const char *fmt, ...);
void bt_engine_events_done(bt_engine *e);
/* A paused worker on its own thread waits here until the pause ends, the run
 * stops or BT_IDLE_POLL_MS passes (so thread changes are seen), whichever is
 * first: a resume wakes it at once, not up to a poll later. */
void bt_engine_wait_resume(bt_engine *e);
/* A client of the start has tried its first connection (made or not); the
 * last one starts the run.  Each client calls it once. */
void bt_engine_first_try_done(bt_engine *e);
/* Event loops' fibers wait at the gate; a thread per connection finds it open. */
enum { BT_GATE_CLOSED = 0, BT_GATE_OPEN = 1, BT_GATE_STOPPED = 2 };
void bt_engine_destroy(bt_engine *e);
int bt_engine_error_ignored(const bt_engine *e, const bt_err *err);
/* A client aborted (pgbench's rule for a failed expression); the first
 * reason is kept in the engine's error text, and the run fails once every
 * client has aborted, as pgbench's "Run was aborted". */
void bt_engine_client_aborted(bt_engine *e, const char *script, const char *why);

#endif
