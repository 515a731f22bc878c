/* group.c: thread groups, each a pool of workers with its own thread count,
 * arrival schedule and transaction mix (see bt_group in benchtop_api.h).
 * A group's knobs are the same atomics and scheduler the single pool had, so
 * closed loop stays lock-free and an open-loop backlog stays O(1) per group.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "group.h"
#include "scheduler.h"
#include "worker.h"

static int group_weights(bt_group_rt *g, const bt_program *p, const int32_t *weights)
{
    int32_t cum = 0, last = -1, nonzero = 0;
    for (int32_t i = 0; i < p->ntxn_types; i++) {
        int32_t w = weights ? weights[i] : p->txn_types[i].weight;
        if (w < 0)
            return BT_EINVAL;
        cum += w;
        g->cum_weight[i] = cum;
        if (w > 0) {
            last = i;
            nonzero++;
        }
    }
    g->total_weight = cum;
    g->only_type = nonzero == 1 ? last : -1;
    return cum > 0 ? BT_OK : BT_EINVAL;
}

int bt_groups_init(bt_engine *e, const bt_config *cfg)
{
    int32_t n = cfg->ngroups > 0 ? cfg->ngroups : 1;
    if (n > BT_MAX_GROUPS || (cfg->ngroups > 0 && !cfg->groups))
        return BT_EINVAL;
    int64_t total = 0;
    for (int32_t i = 0; i < cfg->ngroups; i++) {
        const bt_group *gc = &cfg->groups[i];
        if (gc->threads < 0 || gc->rate < 0 ||
            (gc->arrival != BT_ARRIVAL_UNIFORM && gc->arrival != BT_ARRIVAL_POISSON))
            return BT_EINVAL;
        total += gc->threads;
    }
    if (total > (e->loop_threads > 0 ? BT_MAX_CONNECTIONS : BT_MAX_THREADS))
        return BT_EINVAL;
    e->groups = calloc((size_t)n, sizeof *e->groups);
    if (!e->groups)
        return BT_ENOMEM;
    e->ngroups = n;
    for (int32_t i = 0; i < n; i++) {
        bt_group_rt *g = &e->groups[i];
        const bt_group *gc = cfg->ngroups > 0 ? &cfg->groups[i] : NULL;
        bt_sched_init(&g->sched, gc ? gc->rate : cfg->rate, gc ? gc->arrival : cfg->arrival,
                      e->seed + 0x51ed27ULL * (uint64_t)i);
        atomic_store(&g->threads_target, gc ? gc->threads : cfg->threads);
        g->only_type = 0;
        if (e->prog) {
            int rc = group_weights(g, e->prog, gc ? gc->weights : NULL);
            if (rc != BT_OK)
                return rc;
        }
    }
    return BT_OK;
}

void bt_groups_destroy(bt_engine *e)
{
    for (int32_t i = 0; i < e->ngroups; i++) {
        bt_group_rt *g = &e->groups[i];
        for (int32_t k = 0; k < atomic_load(&g->nclients); k++)
            bt_client_free(g->clients[k]);
        free(g->clients);
        bt_sched_destroy(&g->sched);
    }
    free(e->groups);
    e->groups = NULL;
    e->ngroups = 0;
}

int32_t bt_groups_threads_target(bt_engine *e)
{
    int32_t n = 0;
    for (int32_t i = 0; i < e->ngroups; i++)
        n += atomic_load(&e->groups[i].threads_target);
    return n;
}

bt_client *bt_client_new(bt_engine *e, int32_t group, int32_t gindex, uint64_t seed_index)
{
    /* calloc, not memset: the string registers' pages stay untouched (and
     * out of the RSS) until a workload writes them, 10,000 connections over */
    bt_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    bt_group_rt *g = &e->groups[group];
    if (gindex >= g->clients_cap) {
        int32_t cap = g->clients_cap ? g->clients_cap : 16;
        while (cap <= gindex)
            cap *= 2;
        bt_client **a = realloc(g->clients, sizeof *a * (size_t)cap);
        if (!a) {
            free(c);
            return NULL;
        }
        g->clients = a;
        g->clients_cap = cap;
    }
    c->gindex = gindex;
    c->io_fd = -1;
    pthread_mutex_init(&c->io_mu, NULL);
    bt_rng_seed(&c->rng, e->seed + 0x9e3779b97f4a7c15ULL * (seed_index + 1));
    /* handed out in order (ctl_mu): gindex == nclients */
    g->clients[gindex] = c;
    atomic_store(&g->nclients, gindex + 1);
    return c;
}

void bt_client_free(bt_client *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->io_mu);
    free(c);
}

static bt_worker *worker_new(bt_engine *e, int32_t index, int32_t group, int32_t gindex)
{
    bt_worker *w = aligned_alloc(64, (sizeof(bt_worker) + 63) / 64 * 64);
    if (!w)
        return NULL;
    memset(w, 0, sizeof *w);
    w->lat = calloc(1, sizeof(bt_hist));
    w->svc = calloc(1, sizeof(bt_hist));
    w->same = calloc(1, sizeof(bt_hist));
    if (e->loop_threads > 0)
        w->loop = bt_loop_new();
    else if (w->lat && w->svc && w->same)
        w->one = bt_client_new(e, group, gindex, (uint64_t)index);
    if (!w->lat || !w->svc || !w->same || (!w->loop && !w->one)) {
        free(w->lat);
        free(w->svc);
        free(w->same);
        bt_loop_free(w->loop);
        free(w);
        return NULL;
    }
    atomic_store(&w->lat_min, UINT64_MAX);
    w->index = index;
    w->group = group;
    w->gindex = gindex;
    w->e = e;
    if (w->one)
        w->one->w = w;
    return w;
}

/* An event loop's connections, [nclients, n) of group gi (ctl_mu). */
static int clients_grow(bt_engine *e, int32_t gi, int32_t n)
{
    bt_group_rt *g = &e->groups[gi];
    int32_t J = e->loop_threads;
    for (int32_t i = atomic_load(&g->nclients); i < n; i++) {
        /* connection i runs on loop i % J: its worker exists by then */
        bt_client *c = bt_client_new(e, gi, i, (uint64_t)gi * BT_MAX_CONNECTIONS + (uint64_t)i);
        if (!c)
            return BT_ENOMEM;
        c->w = e->workers[g->slots[i % J]];
    }
    return BT_OK;
}

/* top -H, perf and gdb tell the load's threads from the interpreter's by
 * name ("bt-loop-0", "bt-worker-12"); a name is a convenience, so a refusal
 * leaves the thread as it is */
static void name_thread(const bt_engine *e, const bt_worker *w)
{
    char name[16]; /* the kernel's limit, with the NUL */
    snprintf(name, sizeof name, "bt-%s-%d", e->loop_threads > 0 ? "loop" : "worker", (int)w->index);
    (void)pthread_setname_np(w->thread, name);
}

static void make_idle(pthread_t t)
{
    struct sched_param sp = {0};
    pthread_setschedparam(t, SCHED_IDLE, &sp);  /* best effort: the run goes on without it */
}

/* Workers run under SCHED_IDLE when asked (the server shares this host), and
 * those of a driver that never waits once they outnumber the CPUs (so the
 * controller is never starved); an open-loop group's keep their class: they sleep between tickets, and their schedule
 * must not wait behind closed-loop spinners. */
static int idle_class(const bt_engine *e, int32_t gi)
{
    return e->idle_workers && !(e->ngroups > 1 && atomic_load(&e->groups[gi].sched.open_loop));
}

int bt_group_spawn(bt_engine *e, int32_t gi, int32_t n)
{
    bt_group_rt *g = &e->groups[gi];
    if (e->drv->never_waits && bt_groups_threads_target(e) > e->ncpu && !e->idle_workers) {
        /* one-way (an unprivileged thread cannot leave SCHED_IDLE), so the
         * workers stay alike */
        e->idle_workers = 1;
        for (int32_t i = 0; i < e->nworkers; i++)
            if (e->workers[i] && e->workers[i]->has_thread && idle_class(e, e->workers[i]->group))
                make_idle(e->workers[i]->thread);
    }
    /* with event loops: min(J, n) loop threads for n connections */
    int32_t nthreads = e->loop_threads > 0 ? (n < e->loop_threads ? n : e->loop_threads) : n;
    for (int32_t i = 0; i < nthreads && !atomic_load(&e->stop); i++) {
        if (i >= g->nslots) {
            /* slots are handed out in order, so i == nslots here */
            if (e->nworkers >= BT_MAX_THREADS)
                return BT_EINVAL;
            bt_worker *nw = worker_new(e, e->nworkers, gi, i);
            if (!nw)
                return BT_ENOMEM;
            g->slots[g->nslots++] = e->nworkers;
            e->workers[e->nworkers++] = nw;
        }
        bt_worker *w = e->workers[g->slots[i]];
        if (atomic_load(&w->state) == BT_W_EXITED && w->has_thread) {
            pthread_join(w->thread, NULL);
            w->has_thread = 0;
            atomic_store(&w->state, BT_W_FREE);
        }
        if (atomic_load(&w->state) == BT_W_FREE) {
            atomic_store(&w->state, BT_W_RUNNING);
            if (pthread_create(&w->thread, NULL, bt_worker_main, w) != 0) {
                atomic_store(&w->state, BT_W_FREE);
                return BT_ETHREAD;
            }
            w->has_thread = 1;
            e->live++;
            name_thread(e, w);
            if (idle_class(e, gi))
                make_idle(w->thread);
        }
    }
    if (e->loop_threads > 0 && nthreads == (n < e->loop_threads ? n : e->loop_threads))
        return clients_grow(e, gi, n);
    return BT_OK;
}

/* A rate-limited group's schedule is what an experiment holds fixed (the
 * insert benchmark's 1,000 inserts/s): on a machine with fewer cores than
 * workers, closed-loop threads would otherwise take their fair share of the
 * CPU from it and it would fall behind.  So while some group runs open loop,
 * the closed-loop groups' threads run at the highest nice value and the
 * open-loop ones, where the process may (root, CAP_SYS_NICE), at a lower one
 * (they sleep between tickets, so they only take the CPU their schedule
 * needs).  Best effort: without the privilege they stay at 0, and a niced
 * thread stays so for the rest of the run. */
static int nice_for(const bt_engine *e, int32_t group)
{
    if (e->ngroups < 2)
        return 0;
    if (atomic_load(&e->groups[group].sched.open_loop))
        return BT_OPEN_LOOP_NICE;
    for (int32_t i = 0; i < e->ngroups; i++)
        if (atomic_load(&e->groups[i].sched.open_loop) && atomic_load(&e->groups[i].threads_target) > 0)
            return BT_CLOSED_LOOP_NICE;
    return 0;
}

static void set_nice(bt_worker *w, int nice)
{
    if (w->tid > 0 && nice != w->nice && setpriority(PRIO_PROCESS, (id_t)w->tid, nice) == 0)
        w->nice = nice;
}

void bt_group_worker_started(bt_worker *w)
{
    w->tid = (int32_t)syscall(SYS_gettid);
    w->nice = 0; /* a new thread starts at its creator's nice value */
    set_nice(w, nice_for(w->e, w->group));
}

static void renice_all(bt_engine *e)
{
    pthread_mutex_lock(&e->ctl_mu);
    for (int32_t i = 0; i < e->nworkers; i++) {
        bt_worker *w = e->workers[i];
        if (w && atomic_load(&w->state) == BT_W_RUNNING)
            set_nice(w, nice_for(e, w->group));
    }
    pthread_mutex_unlock(&e->ctl_mu);
}

int bt_engine_set_group_threads(bt_engine *e, int32_t gi, int32_t n)
{
    if (!e || gi < 0 || gi >= e->ngroups || n < 0 || n > (e->loop_threads > 0 ? BT_MAX_CONNECTIONS : BT_MAX_THREADS))
        return BT_EINVAL;
    bt_group_rt *g = &e->groups[gi];
    pthread_mutex_lock(&e->ctl_mu);
    /* the slots of every group together stay within BT_MAX_THREADS */
    int32_t nthreads = e->loop_threads > 0 && n > e->loop_threads ? e->loop_threads : n;
    if (nthreads > g->nslots && e->nworkers + (nthreads - g->nslots) > BT_MAX_THREADS) {
        pthread_mutex_unlock(&e->ctl_mu);
        return BT_EINVAL;
    }
    atomic_store(&g->threads_target, n);
    int rc = BT_OK;
    /* Workers at index >= n see the new target after their current
     * transaction and exit; their counts stay in the totals. */
    if (atomic_load(&e->state) == BT_STATE_RUNNING)
        rc = bt_group_spawn(e, gi, n);
    pthread_mutex_unlock(&e->ctl_mu);
    return rc;
}

int bt_engine_set_group_rate(bt_engine *e, int32_t gi, double rate, int32_t arrival)
{
    if (!e || gi < 0 || gi >= e->ngroups || rate < 0 ||
        (arrival != BT_ARRIVAL_UNIFORM && arrival != BT_ARRIVAL_POISSON))
        return BT_EINVAL;
    bt_sched_set_rate(&e->groups[gi].sched, rate, arrival, bt_now_ns());
    if (e->ngroups > 1)
        renice_all(e);
    return BT_OK;
}

int bt_engine_group_snapshot(bt_engine *e, int32_t gi, bt_group_snapshot *out, uint64_t *lat_hist,
                             uint64_t *svc_hist)
{
    if (!e || !out || gi < 0 || gi >= e->ngroups)
        return BT_EINVAL;
    bt_group_rt *g = &e->groups[gi];
    uint64_t now = bt_snapshot_begin(e, out, sizeof *out, lat_hist, svc_hist);
    int32_t target = atomic_load(&g->threads_target);
    /* the group's workers summed as the engine's snapshot sums them all; the
     * group reports the part of it that bt_group_snapshot holds */
    bt_snapshot sum;
    memset(&sum, 0, sizeof sum);
    pthread_mutex_lock(&e->ctl_mu);
    for (int32_t i = 0; i < g->nslots; i++) {
        bt_worker *w = e->workers[g->slots[i]];
        if (!w)
            continue;
        if (atomic_load(&w->state) == BT_W_RUNNING && (w->loop || i < target))
            out->threads_running += w->loop ? BT_GET(w->clients_running) : 1;
        bt_worker_add_counters(w, now, &sum);
        bt_worker_merge_latency(w, lat_hist, svc_hist);
    }
    /* transactions under way count their time so far: a long one shows as
     * busy in the intervals it spans, not all at once when it ends */
    for (int32_t i = 0; i < atomic_load(&g->nclients); i++) {
        uint64_t since = BT_GET(g->clients[i]->busy_since);
        if (since && since < now)
            sum.busy_ns += now - since;
    }
    pthread_mutex_unlock(&e->ctl_mu);
    out->transactions = sum.transactions;
    for (int k = 0; k < BT_ERRK_COUNT; k++)
        if (k != BT_ERRK_FATAL)
            out->errors += sum.errors[k];
    out->latency_ns_sum = sum.latency_ns_sum;
    out->service_ns_sum = sum.service_ns_sum;
    out->busy_ns = sum.busy_ns;
    out->threads_target = target;
    bt_sched_read(&g->sched, now, &out->queue_ns, &out->tickets_due, &out->rate);
    return BT_OK;
}
