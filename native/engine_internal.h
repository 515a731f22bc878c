/* engine_internal.h: the engine handle and the worker, shared by engine.c,
 * worker.c, workload.c, scheduler.c and load.c.  Not seen by cffi. */
#ifndef BT_ENGINE_INTERNAL_H
#define BT_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "benchtop_api.h"
#include "driver.h"
#include "histogram.h"
#include "rand.h"

#define BT_NS_PER_S 1000000000ULL
#define BT_RECONNECT_MIN_MS 10
#define BT_RECONNECT_MAX_MS 1000
#define BT_IDLE_POLL_MS 20     /* how often a paused or waiting worker rechecks stop */
#define BT_DECK_MAX 1000       /* cards in a worker's deck of transaction types */

static inline uint64_t bt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * BT_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Single-writer counter helpers: the owner thread increments with a relaxed
 * load+store (no lock prefix); readers use relaxed loads. */
#define BT_ADD(field, v)                                                                  \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), memory_order_relaxed) + \
                                        (uint64_t)(v),                                    \
                          memory_order_relaxed)
#define BT_GET(field) atomic_load_explicit(&(field), memory_order_relaxed)
#define BT_PUT(field, v) atomic_store_explicit(&(field), (v), memory_order_relaxed)

/* ---- open-loop scheduler ---------------------------------------------- */
typedef struct {
    pthread_mutex_t mu;
    _Atomic int open_loop;  /* read without the lock: closed loop never takes it */
    double rate;            /* tickets per second; 0 = closed loop */
    int32_t arrival;
    uint64_t next_ns;       /* intended start of the next untaken ticket */
    uint64_t taken;
    uint64_t last_ns;       /* queue integral is accounted up to here */
    double queue_ns;        /* integral of queue length (tickets x ns) */
    int held;               /* paused: no tickets arrive, the queue does not grow */
    bt_rng rng;
} bt_sched;

enum { BT_TAKE_CLOSED = 0, BT_TAKE_TICKET = 1 };

void bt_sched_init(bt_sched *s, double rate, int32_t arrival, uint64_t seed);
void bt_sched_destroy(bt_sched *s);
void bt_sched_set_rate(bt_sched *s, double rate, int32_t arrival, uint64_t now);
void bt_sched_restart(bt_sched *s, uint64_t now);  /* the schedule starts at `now` */
void bt_sched_hold(bt_sched *s, uint64_t now);     /* a pause: arrivals stop */
void bt_sched_resume(bt_sched *s, uint64_t now);   /* after a pause: no backlog from it */
int bt_sched_take(bt_sched *s, uint64_t now, uint64_t *intended);
void bt_sched_read(bt_sched *s, uint64_t now, double *queue_ns, uint64_t *due, double *rate);

/* ---- thread group -------------------------------------------------------- *
 * Workers live in the engine's one flat slot array (so stopping, joining and
 * snapshots see them all); a group maps its i-th thread to a slot, taken the
 * first time the group grows that far and kept for reuse. */
typedef struct {
    _Atomic int32_t threads_target;
    bt_sched sched;
    int32_t cum_weight[BT_MAX_TXN_TYPES];
    int32_t total_weight;
    int32_t only_type;      /* >= 0: the group runs this one type (no draw) */
    int32_t nslots;
    int32_t slots[BT_MAX_THREADS];
} bt_group_rt;

/* group.c */
int bt_groups_init(bt_engine *e, const bt_config *cfg);
void bt_groups_destroy(bt_engine *e);
/* Starts the group's threads [0, n) that are not running (ctl_mu held). */
int bt_group_spawn(bt_engine *e, int32_t g, int32_t n);
int32_t bt_groups_threads_target(bt_engine *e);
#define BT_CLOSED_LOOP_NICE 19  /* the lowest priority: closed loop takes what CPU is left */
#define BT_OPEN_LOOP_NICE (-10)  /* where allowed (root, CAP_SYS_NICE); else it stays at 0 */

/* ---- worker ------------------------------------------------------------ */
enum { BT_W_FREE = 0, BT_W_RUNNING = 1, BT_W_EXITED = 2 };

typedef struct bt_engine bt_engine;

typedef struct bt_worker {
    /* counters: written by this worker only */
    _Atomic uint64_t txns, rollbacks, retries, reconnects, connects;
    _Atomic uint64_t connect_failures;  /* attempts the server refused or never answered */
    _Atomic int connected;              /* holds a connection now (read by snapshots) */
    _Atomic uint64_t unfinished;  /* transactions cut short by bt_engine_abort_io */
    _Atomic uint64_t queries[3];
    _Atomic uint64_t errors[BT_ERRK_COUNT];
    _Atomic uint64_t connect_ns_sum, connect_ns_max;
    _Atomic uint64_t lat_sum, lat_min, lat_max, svc_sum, svc_max;
    _Atomic uint64_t busy_ns, busy_since;
    _Atomic uint64_t txn_by_type[BT_MAX_TXN_TYPES];
    _Atomic uint64_t txn_ns_by_type[BT_MAX_TXN_TYPES];
    /* latency from the intended start (lat) and from the actual one (svc);
     * a transaction that started when intended (closed loop, or a ticket
     * taken on time) has one value for both and is recorded once, in `same`,
     * which every snapshot adds to both: one histogram write, not two */
    bt_hist *lat;
    bt_hist *svc;
    bt_hist *same;
    /* latency per transaction type, allocated on first use (only when a
     * workload has several types): written by this worker, read by snapshots */
    _Atomic(bt_hist *) type_lat[BT_MAX_TXN_TYPES];
    /* latency per query kind (BT_QK_*), when the program times its queries:
       allocated on first use like type_lat */
    _Atomic(bt_hist *) query_lat[3];

    /* control */
    int32_t index;          /* slot in the engine */
    int32_t group;          /* its thread group, and its place there */
    int32_t gindex;
    int32_t tid;            /* kernel thread id, for its nice value (group.c) */
    int nice;
    _Atomic int state;
    int has_thread;
    pthread_t thread;
    bt_engine *e;
    /* the connection's socket for bt_engine_abort_io: set after connect and
     * cleared before disconnect under io_mu, so it is never shut after close */
    pthread_mutex_t io_mu;
    int io_fd;
    _Atomic int io_abort;

    /* interpreter state (worker-private) */
    bt_rng rng;
    void *conn;
    int in_txn;
    uint64_t txns_since_connect;
    int64_t regs[BT_NREGS];
    char sregs[BT_NSREGS][BT_SREG_CAP];
    uint32_t slen[BT_NSREGS];
    int32_t deck[BT_DECK_MAX];  /* transaction types still to deal (bt_workload_pick_type) */
    int32_t deck_left;
} bt_worker;

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
    _Atomic uint64_t stop_ns;  /* when stop was first asked: snapshots' t ends there */
    _Atomic int paused;
    _Atomic int64_t events_started;
    _Atomic int ever_connected;
    _Atomic uint32_t unique_index;
    uint32_t unique_offset;
    _Atomic uint64_t rows_loaded;
    _Atomic uint64_t start_ns;
    uint64_t seed;

    pthread_mutex_t ctl_mu;  /* worker slots, error text; never taken on the hot path */
    bt_worker *workers[BT_MAX_THREADS];
    int32_t nworkers;
    int32_t live;            /* worker threads not yet exited (ctl_mu) */
    int released;            /* bt_engine_free gave up: the last worker frees (ctl_mu) */
    int idle_workers;        /* workers run under SCHED_IDLE, for the rest of the run (ctl_mu):
                                asked for (bt_config), or a driver that never waits */
    int32_t ncpu;
    pthread_cond_t exit_cv;  /* a worker exited (with ctl_mu) */
    char error[512];
};

/* group.c: called first thing by each worker thread */
void bt_group_worker_started(bt_worker *w);

/* worker.c */
void *bt_worker_main(void *arg);
int bt_worker_connect(bt_worker *w, bt_err *err);
void bt_worker_disconnect(bt_worker *w);
/* Adds the worker's counters into `out`: sums, maxima, the latency minimum
 * (start it at UINT64_MAX), busy time up to `now` and whether it is inside a
 * transaction (in_flight).  Threads and connections are left to the caller,
 * which knows its group's target. */
void bt_worker_add_counters(const bt_worker *w, uint64_t now, bt_snapshot *out);
/* Adds the worker's latency and service-time counts into the arrays given
 * (either may be NULL). */
void bt_worker_merge_latency(const bt_worker *w, uint64_t *lat_hist, uint64_t *svc_hist);

/* workload.c: run one transaction of type `tt`.  Returns BT_DERR_NONE on
 * commit; otherwise the error kind, with err filled. *rolled_back is set when
 * the workload itself chose to roll back. */
int bt_workload_run_txn(bt_worker *w, int32_t type, bt_err *err, int *rolled_back);
int32_t bt_workload_pick_type(bt_worker *w);
/* One word of the comma-separated `list` per decimal digit of n (`digits` of them). */
void bt_words(const char *list, int64_t n, int32_t digits, char *out, uint32_t cap, uint32_t *len);

/* engine.c */
/* Starts a snapshot: zeroes `out` and the caller's histogram buffers (either
 * may be NULL) and returns the snapshot's clock, which stops at the stop
 * request (the measured time ends there). */
uint64_t bt_snapshot_begin(bt_engine *e, void *out, size_t out_size, uint64_t *lat_hist, uint64_t *svc_hist);
void bt_engine_fail(bt_engine *e, const char *fmt, ...);
void bt_engine_destroy(bt_engine *e);
int bt_engine_error_ignored(const bt_engine *e, const bt_err *err);

#endif
