/* worker.h: a worker thread and its counters (worker.c).  Internal to the
 * engine; not seen by cffi. */
#ifndef BT_WORKER_H
#define BT_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "benchtop_api.h"
#include "driver.h"
#include "evloop.h"
#include "histogram.h"
#include "rand.h"

#define BT_RECONNECT_MIN_MS 10
#define BT_RECONNECT_MAX_MS 1000
/* How long a worker whose first connection the server refused as full keeps
 * trying while no worker of the run has connected yet. */
#define BT_FIRST_CONNECT_FULL_MS 3000
#define BT_DECK_MAX 1000       /* cards in a worker's deck of transaction types */

/* Single-writer counter helpers: the owner thread increments with a relaxed
 * load+store (no lock prefix); readers use relaxed loads. */
#define BT_ADD(field, v)                                                                  \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), memory_order_relaxed) + \
                                        (uint64_t)(v),                                    \
                          memory_order_relaxed)
#define BT_GET(field) atomic_load_explicit(&(field), memory_order_relaxed)
#define BT_PUT(field, v) atomic_store_explicit(&(field), (v), memory_order_relaxed)

enum { BT_W_FREE = 0, BT_W_RUNNING = 1, BT_W_EXITED = 2 };

/* One connection: its client's state.  A thread per connection (no
 * --connections) has one; an event-loop worker runs many, each on a fiber. */
typedef struct bt_client {
    /* What a transaction reads comes first, the fiber's loop fields after
     * them: on an event loop a connection is cold by the time its reply
     * comes, and its 21 KB of registers and deck would put these lines far
     * apart (a miss each). */
    struct bt_worker *w;    /* the thread that runs it: its counters */
    void *conn;
    _Atomic uint64_t busy_since;
    bt_rng rng;
    int32_t gindex;         /* its number in the group */
    int served;             /* completed a transaction (connections_served) */
    int in_txn;
    int32_t deck_left;
    bt_fiber fiber;
    /* A transaction's error and a statement's values live here, not in the
     * frames of client_run and exec_stmt: on an event loop a fiber's return
     * from its wait walks back up those frames, and 1.4 KB of them put the
     * lines it needs beyond what the loop fetches ahead of it (evloop.c).
     * And before the string registers, not after them: 21 KB from the
     * fields above, the clearing of err at each transaction's start was a
     * page of its own to translate (half of client_run's perf samples). */
    bt_err err;
    bt_value vals[BT_MAX_PARAMS];
    int64_t regs[BT_NREGS];

    int active;             /* a fiber runs it (the loop thread's) */
    int tried;              /* has tried its first connection (bt_engine_first_try_done) */
    uint64_t txns_since_connect;
    /* the connection's socket for bt_engine_abort_io: set after connect and
     * cleared before disconnect under io_mu, so it is never shut after close */
    pthread_mutex_t io_mu;
    int io_fd;
    _Atomic int io_abort;
    uint32_t slen[BT_NSREGS];
    int32_t deck[BT_DECK_MAX];  /* transaction types still to deal (bt_workload_pick_type) */
    char sregs[BT_NSREGS][BT_SREG_CAP];
} bt_client;

typedef struct bt_worker {
    /* counters: written by this worker only (on a loop, by its fibers, which
     * never run at the same time) */
    _Atomic uint64_t txns, rollbacks, retries, reconnects, connects;
    _Atomic uint64_t connect_failures;  /* attempts the server refused or never answered */
    _Atomic int32_t connected;          /* its connections connected now (read by snapshots) */
    _Atomic int32_t clients_running;    /* event loop: its connections running now */
    _Atomic uint64_t served;            /* its connections that completed a transaction */
    _Atomic uint64_t unfinished;  /* transactions cut short by bt_engine_abort_io */
    _Atomic uint64_t queries[3];
    _Atomic uint64_t errors[BT_ERRK_COUNT];
    _Atomic uint64_t connect_ns_sum, connect_ns_max;
    _Atomic uint64_t lat_sum, lat_min, lat_max, svc_sum, svc_max;
    _Atomic uint64_t busy_ns;
    _Atomic uint64_t txn_by_type[BT_MAX_TXN_TYPES];
    _Atomic uint64_t txn_ns_by_type[BT_MAX_TXN_TYPES];
    _Atomic uint64_t svc_ns_by_type[BT_MAX_TXN_TYPES];  /* what each type cost the workers, without queueing */
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
    int32_t gindex;         /* (an event loop: its number among the group's loops) */
    int32_t tid;            /* kernel thread id, for its nice value (group.c) */
    int nice;
    _Atomic int state;
    int has_thread;
    pthread_t thread;
    bt_engine *e;
    bt_client *one;         /* a thread per connection: its connection */
    bt_loop *loop;          /* an event loop (--connections): its epoll and fibers */
    bt_client **mine;       /* an event loop: its connections started so far (its thread's) */
    int32_t nmine, mine_cap;
} bt_worker;

void *bt_worker_main(void *arg);
int bt_worker_connect(bt_client *c, bt_err *err);
void bt_worker_disconnect(bt_client *c);
/* A connection's state, ready for its first transaction (group.c). */
bt_client *bt_client_new(bt_engine *e, int32_t group, int32_t gindex, uint64_t seed_index);
void bt_client_free(bt_client *c);
/* Adds the worker's counters into `out`: sums, maxima, the latency minimum
 * (start it at UINT64_MAX) and busy time of its finished transactions.
 * Threads and connections, and the busy time and in_flight of transactions
 * under way (a connection's), are left to the caller, which knows its
 * group's target and connections. */
void bt_worker_add_counters(const bt_worker *w, uint64_t now, bt_snapshot *out);
/* Adds the worker's latency and service-time counts into the arrays given
 * (either may be NULL). */
void bt_worker_merge_latency(const bt_worker *w, uint64_t *lat_hist, uint64_t *svc_hist);

#endif
