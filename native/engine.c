/* engine.c: the handle the controller holds: configuration, worker slots,
 * live knobs (threads, rate, pause) and merged snapshots. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "group.h"
#include "scheduler.h"
#include "worker.h"

const char *bt_version(void)
{
    return BT_VERSION;
}

const char *bt_strerror(int rc)
{
    switch (rc) {
    case BT_OK: return "ok";
    case BT_EINVAL: return "invalid argument";
    case BT_ENOMEM: return "out of memory";
    case BT_ESTATE: return "not valid in the engine's current state";
    case BT_ECONNECT: return "could not connect";
    case BT_ESQL: return "statement failed";
    case BT_ETHREAD: return "could not start a thread";
    case BT_EDRIVER: return "driver not built into this engine";
    default: return "unknown error";
    }
}

const bt_driver *bt_driver_get(int driver)
{
    switch (driver) {
    case BT_DRIVER_NULL: return &bt_driver_null;
    case BT_DRIVER_SQLITE: return &bt_driver_sqlite;
    case BT_DRIVER_FILEIO: return &bt_driver_fileio;
#ifdef BT_HAVE_MYSQL
    case BT_DRIVER_MYSQL: return &bt_driver_mysql;
#endif
#ifdef BT_HAVE_PGSQL
    case BT_DRIVER_PGSQL: return &bt_driver_pgsql;
#endif
    default: return NULL;
    }
}

int bt_driver_available(int driver)
{
    return bt_driver_get(driver) != NULL;
}

/* The controlling thread waits for the start on the gate word itself (a
 * futex; the fibers park on their loops): no mutex it could have to take
 * after idle-priority workers a busy host does not run. */
static void gate_wake(bt_engine *e)
{
    syscall(SYS_futex, (int *)&e->gate, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void gate_wait(bt_engine *e, int32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, (int *)&e->gate, FUTEX_WAIT_PRIVATE, BT_GATE_CLOSED, &ts, NULL, 0);
}

/* The stop (or a failure) before the start: nobody waits for it any longer. */
static void gate_stop(bt_engine *e)
{
    int closed = BT_GATE_CLOSED;
    if (atomic_compare_exchange_strong(&e->gate, &closed, BT_GATE_STOPPED))
        gate_wake(e);
}

void bt_engine_fail(bt_engine *e, const char *fmt, ...)
{
    pthread_mutex_lock(&e->ctl_mu);
    if (atomic_load(&e->state) != BT_STATE_FAILED) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->error, sizeof e->error, fmt, ap);
        va_end(ap);
        atomic_store(&e->state, BT_STATE_FAILED);
    }
    atomic_store(&e->stop, 1);
    pthread_mutex_unlock(&e->ctl_mu);
    gate_stop(e);
}

void bt_engine_client_aborted(bt_engine *e, const char *script, const char *why)
{
    pthread_mutex_lock(&e->ctl_mu);
    e->aborted++;
    /* the first reason stays readable beside the count while the run goes on */
    if (atomic_load(&e->state) != BT_STATE_FAILED && e->error[0] == '\0')
        snprintf(e->error, sizeof e->error, "a client aborted in script %s: %s", script ? script : "?", why);
    /* every client the groups ask for (threads, or connections on event
     * loops) has aborted: none is left to run */
    int32_t n = e->aborted;
    int every = n >= bt_groups_threads_target(e) && !atomic_load(&e->stop);
    pthread_mutex_unlock(&e->ctl_mu);
    if (every)
        bt_engine_fail(e, "every client aborted (%d), as pgbench aborts the run: in script %s: %s", (int)n,
                       script ? script : "?", why);
}

int bt_engine_error_ignored(const bt_engine *e, const bt_err *err)
{
    if (err->kind != BT_DERR_SQL)
        return 0;
    if (e->cfg.ignore_all_errors)
        return 1;
    for (int32_t i = 0; i < e->cfg.nignore_codes; i++)
        if (e->ignore_codes[i] == err->code)
            return 1;
    return 0;
}

static char *dup_or_null(bt_engine *e, int slot, const char *s)
{
    if (!s)
        return NULL;
    e->strs[slot] = strdup(s);
    return e->strs[slot];
}

/* Replace "{t}" with the table number. */
static char *render_sql(const char *sql, int32_t table)
{
    size_t len = strlen(sql);
    char *out = malloc(len + 16 * 8 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    int subs = 0;
    for (size_t i = 0; i < len; i++) {
        if (sql[i] == '{' && sql[i + 1] == 't' && sql[i + 2] == '}' && subs < 8) {
            o += (size_t)sprintf(out + o, "%d", table);
            i += 2;
            subs++;
        } else {
            out[o++] = sql[i];
        }
    }
    out[o] = '\0';
    return out;
}

static int validate_program(const bt_program *p)
{
    if (!p || p->ntxn_types < 1 || p->ntxn_types > BT_MAX_TXN_TYPES || p->max_table < 0)
        return BT_EINVAL;
    for (int32_t i = 0; i < p->nops; i++) {
        const bt_op *op = &p->ops[i];
        int pg_rand = op->code >= BT_OP_RAND_GAUSSIAN && op->code <= BT_OP_RAND_ZIPFIAN;
        if ((op->code == BT_OP_SET || op->code == BT_OP_RAND || op->code == BT_OP_UNIQUE ||
             op->code == BT_OP_BEGIN_IF || op->code == BT_OP_ROLLBACK_IF || pg_rand) &&
            (op->a < 0 || op->a >= BT_NREGS))
            return BT_EINVAL;
        /* the parameter's ranges (pgbench's): gaussian >= 2, exponential > 0, zipfian 1.001..1000 */
        if (pg_rand && (op->c <= 0 || (op->code == BT_OP_RAND_GAUSSIAN && op->c < 2000000) ||
                        (op->code == BT_OP_RAND_ZIPFIAN && (op->c < 1001000 || op->c > 1000000000))))
            return BT_EINVAL;
        if (op->code == BT_OP_STR &&
            (op->a < 0 || op->a >= BT_NSREGS || op->c < 0 || op->c >= p->nstrings))
            return BT_EINVAL;
        if (op->code == BT_OP_EXEC &&
            (op->c < 0 || op->c >= p->nstmts || op->b < 0 || op->d < 0 || op->b + op->d > p->nparams ||
             op->a >= BT_NREGS || op->a < -2 - (BT_NSREGS - 1)))
            return BT_EINVAL;
        if ((op->code == BT_OP_LOOP || op->code == BT_OP_BEGIN_IF) && (op->d < 0 || i + op->d >= p->nops + 1))
            return BT_EINVAL;
        /* b is a register except in EXEC, where it indexes params */
        if ((op->code != BT_OP_EXEC && op->b >= BT_NREGS) ||
            ((op->code == BT_OP_RAND || pg_rand) && op->d >= BT_NREGS))
            return BT_EINVAL;
    }
    for (int32_t i = 0; i < p->nparams; i++) {
        const bt_param *pa = &p->params[i];
        if ((pa->kind == BT_PARAM_REG && (pa->reg < 0 || pa->reg >= BT_NREGS)) ||
            (pa->kind == BT_PARAM_SREG && (pa->reg < 0 || pa->reg >= BT_NSREGS)))
            return BT_EINVAL;
    }
    for (int32_t i = 0; i < p->nstmts; i++)
        if (!p->stmts[i].sql || p->stmts[i].table_reg >= BT_NREGS)
            return BT_EINVAL;
    for (int32_t i = 0; i < p->ntxn_types; i++) {
        const bt_txn_type *t = &p->txn_types[i];
        if (t->first_op < 0 || t->nops < 0 || t->first_op + t->nops > p->nops || t->weight < 0)
            return BT_EINVAL;
    }
    return BT_OK;
}

int bt_engine_new(const bt_config *cfg, bt_engine **out)
{
    int rc = BT_ENOMEM;
    *out = NULL;
    if (!cfg || cfg->threads < 0 || cfg->rate < 0 || cfg->loop_threads < 0 || cfg->loop_threads > BT_MAX_THREADS)
        return BT_EINVAL;
    const bt_driver *drv = bt_driver_get(cfg->conn.driver);
    if (!drv)
        return BT_EDRIVER;
    if (cfg->threads > (cfg->loop_threads > 0 && drv->loops ? BT_MAX_CONNECTIONS : BT_MAX_THREADS))
        return BT_EINVAL;
    if (cfg->program && validate_program(cfg->program) != BT_OK)
        return BT_EINVAL;

    bt_engine *e = calloc(1, sizeof *e);
    if (!e)
        return BT_ENOMEM;
    e->cfg = *cfg;
    e->drv = drv;
    e->prog = cfg->program;
    pthread_mutex_init(&e->ctl_mu, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    e->ncpu = ncpu > 0 ? (int32_t)ncpu : 1;
    e->idle_workers = cfg->idle_workers ? 1 : 0;
    /* SQLite and fileio keep a thread per connection */
    e->loop_threads = drv->loops ? cfg->loop_threads : 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->exit_cv, &ca);
    pthread_cond_init(&e->resume_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&e->pause_mu, NULL);
    e->cfg.conn.host = dup_or_null(e, 0, cfg->conn.host);
    e->cfg.conn.user = dup_or_null(e, 1, cfg->conn.user);
    e->cfg.conn.password = dup_or_null(e, 2, cfg->conn.password);
    e->cfg.conn.database = dup_or_null(e, 3, cfg->conn.database);
    e->cfg.conn.socket = dup_or_null(e, 4, cfg->conn.socket);
    e->cfg.conn.options = dup_or_null(e, 5, cfg->conn.options);
    if (cfg->nignore_codes > 0) {
        e->ignore_codes = malloc(sizeof(int32_t) * (size_t)cfg->nignore_codes);
        if (!e->ignore_codes)
            goto fail;
        memcpy(e->ignore_codes, cfg->ignore_codes, sizeof(int32_t) * (size_t)cfg->nignore_codes);
    }
    e->cfg.ignore_codes = e->ignore_codes;

    e->seed = cfg->seed ? cfg->seed : bt_now_ns();
    bt_rand_params_init(&e->rp, cfg->rand_type, cfg->rand_spec_iter, cfg->rand_spec_pct,
                        cfg->rand_spec_res, cfg->rand_pareto_h, cfg->rand_zipfian_exp);
    bt_rng seeder;
    bt_rng_seed(&seeder, e->seed);
    e->unique_offset = (uint32_t)bt_rng_next(&seeder);
    atomic_store(&e->unique_index, (uint32_t)bt_rng_next(&seeder));

    if (e->prog) {
        const bt_program *p = e->prog;
        e->nkeys = p->nstmts * (p->max_table + 1);
        e->sql_by_key = calloc((size_t)e->nkeys + 1, sizeof(char *));
        if (!e->sql_by_key)
            goto fail;
        for (int32_t s = 0; s < p->nstmts; s++) {
            int32_t tmax = p->stmts[s].table_reg >= 0 ? p->max_table : 0;
            for (int32_t t = 0; t <= tmax; t++) {
                char *sql = render_sql(p->stmts[s].sql, t);
                if (!sql)
                    goto fail;
                e->sql_by_key[s * (p->max_table + 1) + t] = sql;
            }
        }
    }
    rc = bt_groups_init(e, cfg);
    if (rc != BT_OK)
        goto fail;
    atomic_store(&e->state, BT_STATE_IDLE);
    *out = e;
    return BT_OK;
fail:
    bt_engine_free(e);
    return rc;
}

/* The run starts when the last client of the start has tried its first
 * connection (as pgbench leaves its "initial connection time" out of tps): a
 * ramp of thousands of connections is not a slow first second of the run,
 * and the last connection made has as much of --time as the first. */
/* ctl_mu held */
static void start_run_locked(bt_engine *e)
{
    pthread_mutex_lock(&e->pause_mu);
    uint64_t now = bt_now_ns();
    /* the schedules' first tickets are due at the start, not at time zero;
     * an engine paused before it (benchtop ab's second side) holds them on */
    for (int32_t g = 0; g < e->ngroups; g++) {
        bt_sched_start(&e->groups[g].sched, now);
        if (atomic_load(&e->paused))
            bt_sched_hold(&e->groups[g].sched, now);
    }
    pthread_mutex_unlock(&e->pause_mu);
    atomic_store(&e->start_ns, now);
    int closed = BT_GATE_CLOSED;
    atomic_compare_exchange_strong(&e->gate, &closed, BT_GATE_OPEN);
}

static void start_run(bt_engine *e)
{
    pthread_mutex_lock(&e->ctl_mu);
    start_run_locked(e);
    pthread_mutex_unlock(&e->ctl_mu);
    gate_wake(e);
}

void bt_engine_first_try_done(bt_engine *e)
{
    if (atomic_fetch_sub(&e->first_pending, 1) == 1)
        start_run(e);
}

int bt_engine_start(bt_engine *e)
{
    if (!e || !e->prog)
        return BT_EINVAL;
    if (atomic_load(&e->state) != BT_STATE_IDLE)
        return BT_ESTATE;
    atomic_store(&e->state, BT_STATE_RUNNING);
    /* New workers wait for ctl_mu before they connect, so all are created
     * before any runs (thousands of threads then take milliseconds, not
     * minutes of competing with running ones). */
    pthread_mutex_lock(&e->ctl_mu);
    /* Only event loops wait for every first connection: their ramp is the
     * long one (thousands of connections on a few threads).  A thread per
     * connection starts at once, as before: thousands of spinning threads
     * woken together after a wait kept the controlling thread from running
     * for seconds on two cores (a run's stop up to 5 s late). */
    int32_t clients = e->loop_threads > 0 ? bt_groups_threads_target(e) : 0;
    atomic_store(&e->first_pending, clients);
    int rc = BT_OK;
    for (int32_t g = 0; g < e->ngroups && rc == BT_OK; g++)
        rc = bt_group_spawn(e, g, atomic_load(&e->groups[g].threads_target));
    if (clients == 0)
        start_run_locked(e);  /* before the new workers, which wait for ctl_mu, look at the gate */
    pthread_mutex_unlock(&e->ctl_mu);
    if (rc != BT_OK) {
        bt_engine_fail(e, "could not start worker threads: %s", bt_strerror(rc));
        return rc;
    }
    return BT_OK;
}

int32_t bt_engine_wait_started(bt_engine *e, int32_t timeout_ms)
{
    if (!e)
        return 1;
    if (atomic_load(&e->gate) == BT_GATE_CLOSED && timeout_ms > 0)
        gate_wait(e, timeout_ms);
    return atomic_load(&e->gate) != BT_GATE_CLOSED || atomic_load(&e->state) != BT_STATE_RUNNING;
}

uint64_t bt_engine_start_ns(bt_engine *e)
{
    return e ? atomic_load(&e->start_ns) : 0;
}

int bt_engine_set_threads(bt_engine *e, int32_t n)
{
    return bt_engine_set_group_threads(e, 0, n);
}

int bt_engine_set_rate(bt_engine *e, double rate, int32_t arrival)
{
    return bt_engine_set_group_rate(e, 0, rate, arrival);
}

void bt_engine_wait_resume(bt_engine *e)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += BT_IDLE_POLL_MS * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&e->pause_mu);
    while (atomic_load(&e->paused) && !atomic_load(&e->stop))
        if (pthread_cond_timedwait(&e->resume_cv, &e->pause_mu, &dl) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&e->pause_mu);
}

int bt_engine_set_paused(bt_engine *e, int32_t paused)
{
    if (!e)
        return BT_EINVAL;
    pthread_mutex_lock(&e->pause_mu);
    int was = atomic_load(&e->paused);
    uint64_t now = bt_now_ns();
    if (!was && paused) {
        atomic_store(&e->paused, 1);
        for (int32_t g = 0; g < e->ngroups; g++)
            bt_sched_hold(&e->groups[g].sched, now);
    } else if (was && !paused) {
        /* the schedule restarts before the flag clears: a worker the resume
         * wakes at once must not take a ticket of the schedule held since */
        for (int32_t g = 0; g < e->ngroups; g++)
            bt_sched_resume(&e->groups[g].sched, now);
        atomic_store(&e->paused, 0);
        pthread_cond_broadcast(&e->resume_cv);
    }
    pthread_mutex_unlock(&e->pause_mu);
    return BT_OK;
}

/* A stop cuts the run at the moment it is asked: transactions still in flight
 * then are unfinished (worker.c), so the totals are the last snapshot's and no
 * latency outlasts the run.  After --events ran out, the events already
 * started are the run's and finish: its end is then when the last worker
 * exits (bt_engine_join_timeout). */
int bt_engine_stop(bt_engine *e)
{
    if (!e)
        return BT_EINVAL;
    if (!atomic_load(&e->events_done)) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&e->stop_ns, &zero, bt_now_ns());
    }
    atomic_store(&e->stop, 1);
    gate_stop(e);
    pthread_mutex_lock(&e->pause_mu);  /* paused workers see the stop now */
    pthread_cond_broadcast(&e->resume_cv);
    pthread_mutex_unlock(&e->pause_mu);
    int expected = BT_STATE_RUNNING;
    atomic_compare_exchange_strong(&e->state, &expected, BT_STATE_STOPPING);
    return BT_OK;
}

void bt_engine_events_done(bt_engine *e)
{
    atomic_store(&e->events_done, 1);
    atomic_store(&e->stop, 1);
    int expected = BT_STATE_RUNNING;
    atomic_compare_exchange_strong(&e->state, &expected, BT_STATE_STOPPING);
}

/* Waits up to timeout_ms (< 0: for ever) for the workers to exit and reaps
 * the ones that did; safe to call again and from several threads (only
 * exited threads are joined, under ctl_mu, once).  Returns how many still run. */
int32_t bt_engine_join_timeout(bt_engine *e, int32_t timeout_ms)
{
    if (!e)
        return BT_EINVAL;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (timeout_ms > 0) {
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&e->ctl_mu);
    while (e->live > 0 && timeout_ms != 0) {
        int rc = timeout_ms < 0 ? pthread_cond_wait(&e->exit_cv, &e->ctl_mu)
                                : pthread_cond_timedwait(&e->exit_cv, &e->ctl_mu, &dl);
        if (rc == ETIMEDOUT)
            break;
    }
    for (int32_t i = 0; i < e->nworkers; i++) {
        bt_worker *w = e->workers[i];
        if (w && w->has_thread && atomic_load(&w->state) == BT_W_EXITED) {
            pthread_join(w->thread, NULL);  /* it has exited: returns at once */
            w->has_thread = 0;
            atomic_store(&w->state, BT_W_FREE);
        }
    }
    int32_t left = e->live;
    pthread_mutex_unlock(&e->ctl_mu);
    if (left == 0) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&e->stop_ns, &zero, bt_now_ns());  /* --events: the last one is done */
        int expected = BT_STATE_STOPPING;
        atomic_compare_exchange_strong(&e->state, &expected, BT_STATE_STOPPED);
        expected = BT_STATE_RUNNING;
        atomic_compare_exchange_strong(&e->state, &expected, BT_STATE_STOPPED);
    }
    return left;
}

int32_t bt_engine_state(bt_engine *e)
{
    return e ? (int32_t)atomic_load(&e->state) : BT_STATE_FAILED;
}

int bt_engine_join(bt_engine *e)
{
    return e ? (bt_engine_join_timeout(e, -1), BT_OK) : BT_EINVAL;
}

/* After bt_engine_stop: makes reads and writes blocked in a client library
 * return (EOF), and stops any connect in progress from being used. */
int32_t bt_engine_abort_io(bt_engine *e)
{
    if (!e)
        return BT_EINVAL;
    int32_t n = 0;
    pthread_mutex_lock(&e->ctl_mu);
    for (int32_t g = 0; g < e->ngroups; g++) {
        for (int32_t i = 0; i < atomic_load(&e->groups[g].nclients); i++) {
            bt_client *c = e->groups[g].clients[i];
            pthread_mutex_lock(&c->io_mu);
            atomic_store(&c->io_abort, 1);
            if (c->io_fd >= 0 && shutdown(c->io_fd, SHUT_RDWR) == 0)
                n++;
            pthread_mutex_unlock(&c->io_mu);
        }
    }
    /* and an event loop's waits (a connect in progress, a sleep) return */
    for (int32_t i = 0; i < e->nworkers; i++)
        if (e->workers[i] && e->workers[i]->loop)
            bt_loop_abort(e->workers[i]->loop);
    pthread_mutex_unlock(&e->ctl_mu);
    return n;
}

uint64_t bt_snapshot_begin(bt_engine *e, void *out, size_t out_size, uint64_t *lat_hist, uint64_t *svc_hist)
{
    memset(out, 0, out_size);
    if (lat_hist)
        memset(lat_hist, 0, sizeof(uint64_t) * BT_HIST_NBUCKETS);
    if (svc_hist)
        memset(svc_hist, 0, sizeof(uint64_t) * BT_HIST_NBUCKETS);
    uint64_t now = bt_now_ns();
    uint64_t stop_ns = atomic_load(&e->stop_ns);
    return stop_ns && stop_ns < now ? stop_ns : now;
}

int bt_engine_snapshot(bt_engine *e, bt_snapshot *out, uint64_t *lat_hist, uint64_t *svc_hist)
{
    if (!e || !out)
        return BT_EINVAL;
    uint64_t now = bt_snapshot_begin(e, out, sizeof *out, lat_hist, svc_hist);
    out->latency_ns_min = UINT64_MAX;
    pthread_mutex_lock(&e->ctl_mu);
    for (int32_t i = 0; i < e->nworkers; i++) {
        bt_worker *w = e->workers[i];
        if (!w)
            continue;
        if (atomic_load(&w->state) == BT_W_RUNNING && w->loop) {
            out->loops_running++;
            out->threads_running += BT_GET(w->clients_running);
            out->connected += BT_GET(w->connected);
        } else if (atomic_load(&w->state) == BT_W_RUNNING &&
                   w->gindex < atomic_load(&e->groups[w->group].threads_target)) {
            out->threads_running++;
            out->connected += BT_GET(w->connected);
        }
        bt_worker_add_counters(w, now, out);
        bt_worker_merge_latency(w, lat_hist, svc_hist);
    }
    for (int32_t g = 0; g < e->ngroups; g++) {
        for (int32_t i = 0; i < atomic_load(&e->groups[g].nclients); i++) {
            uint64_t since = BT_GET(e->groups[g].clients[i]->busy_since);
            if (since)
                out->in_flight++;
            if (since && since < now)
                out->busy_ns += now - since;
        }
    }
    memcpy(out->error, e->error, sizeof out->error);
    memcpy(out->connect_error, e->connect_error, sizeof out->connect_error);
    memcpy(out->lost_error, e->lost_error, sizeof out->lost_error);
    pthread_mutex_unlock(&e->ctl_mu);
    if (out->latency_ns_min == UINT64_MAX)
        out->latency_ns_min = 0;
    out->state = atomic_load(&e->state);
    out->threads_target = bt_groups_threads_target(e);
    out->paused = atomic_load(&e->paused);
    out->rows_loaded = atomic_load(&e->rows_loaded);
    uint64_t start = atomic_load(&e->start_ns);
    out->t = start && now > start ? (double)(now - start) / (double)BT_NS_PER_S : 0.0;
    /* The engine's rate is the groups' sum when every group runs open loop;
     * one closed-loop group makes the whole run closed loop. */
    int closed = 0;
    for (int32_t g = 0; g < e->ngroups; g++) {
        double q, r;
        uint64_t due;
        bt_sched_read(&e->groups[g].sched, now, &q, &due, &r);
        out->queue_ns += q;
        out->tickets_due += due;
        out->rate += r;
        if (r <= 0 && atomic_load(&e->groups[g].threads_target) > 0)
            closed = 1;
    }
    if (closed)
        out->rate = 0;
    return BT_OK;
}

int bt_engine_type_hist(bt_engine *e, int32_t type, uint64_t *out)
{
    if (!e || !out || type < 0 || type >= BT_MAX_TXN_TYPES)
        return BT_EINVAL;
    memset(out, 0, sizeof(uint64_t) * BT_HIST_NBUCKETS);
    pthread_mutex_lock(&e->ctl_mu);
    for (int32_t i = 0; i < e->nworkers; i++) {
        bt_worker *w = e->workers[i];
        bt_hist *th = w ? atomic_load_explicit(&w->type_lat[type], memory_order_acquire) : NULL;
        if (th)
            bt_hist_merge_into(th, out);
    }
    pthread_mutex_unlock(&e->ctl_mu);
    return BT_OK;
}

int bt_engine_query_hist(bt_engine *e, int32_t kind, uint64_t *out)
{
    if (!e || !out || kind < 0 || kind > BT_QK_OTHER)
        return BT_EINVAL;
    memset(out, 0, sizeof(uint64_t) * BT_HIST_NBUCKETS);
    pthread_mutex_lock(&e->ctl_mu);
    for (int32_t i = 0; i < e->nworkers; i++) {
        bt_worker *w = e->workers[i];
        bt_hist *qh = w ? atomic_load_explicit(&w->query_lat[kind], memory_order_acquire) : NULL;
        if (qh)
            bt_hist_merge_into(qh, out);
    }
    pthread_mutex_unlock(&e->ctl_mu);
    return BT_OK;
}

/* Stops, unblocks and joins the workers for at most 2 s; any still running
 * then (blocked where no socket could be shut, e.g. inside a connect) are
 * detached and the last of them frees the engine.  Returns their number. */
int32_t bt_engine_free(bt_engine *e)
{
    if (!e)
        return 0;
    bt_engine_stop(e);
    if (bt_engine_join_timeout(e, 500) > 0) {
        bt_engine_abort_io(e);
        bt_engine_join_timeout(e, 2000);
    }
    pthread_mutex_lock(&e->ctl_mu);
    int32_t left = e->live;
    if (left > 0) {
        for (int32_t i = 0; i < e->nworkers; i++) {
            bt_worker *w = e->workers[i];
            if (w && w->has_thread && atomic_load(&w->state) != BT_W_EXITED) {
                pthread_detach(w->thread);
                w->has_thread = 0;
            }
        }
        e->released = 1;
    }
    pthread_mutex_unlock(&e->ctl_mu);
    if (left == 0)
        bt_engine_destroy(e);
    return left;
}

void bt_engine_destroy(bt_engine *e)
{
    for (int32_t i = 0; i < e->nworkers; i++) {
        bt_worker *w = e->workers[i];
        if (!w)
            continue;
        if (w->has_thread)
            pthread_join(w->thread, NULL);  /* exited (live == 0): returns at once */
        bt_loop_free(w->loop);
        free(w->mine);
        free(w->lat);
        free(w->svc);
        free(w->same);
        for (int k = 0; k < BT_MAX_TXN_TYPES; k++)
            free(atomic_load(&w->type_lat[k]));
        for (int k = 0; k <= BT_QK_OTHER; k++)
            free(atomic_load(&w->query_lat[k]));
        free(w);
    }
    if (e->sql_by_key)
        for (int32_t k = 0; k < e->nkeys; k++)
            free(e->sql_by_key[k]);
    free(e->sql_by_key);
    free(e->ignore_codes);
    for (int i = 0; i < 8; i++)
        free(e->strs[i]);
    bt_groups_destroy(e);
    pthread_cond_destroy(&e->exit_cv);
    pthread_cond_destroy(&e->resume_cv);
    pthread_mutex_destroy(&e->pause_mu);
    pthread_mutex_destroy(&e->ctl_mu);
    free(e);
}

int bt_exec_sql(const bt_conn_config *conn, const char *sql, char *out, int32_t outlen,
                char *errbuf, int32_t errlen)
{
    if (!conn || !sql)
        return BT_EINVAL;
    const bt_driver *drv = bt_driver_get(conn->driver);
    if (!drv)
        return BT_EDRIVER;
    bt_err err = {0};
    void *c = NULL;
    int rc = BT_OK;
    char value[BT_SREG_CAP];
    bt_result res = {0};
    res.want = out ? 2 : 0;
    res.s = value;
    if (drv->connect(conn, &c, &err) != 0) {
        rc = BT_ECONNECT;
        goto out;
    }
    if (drv->exec_text(c, sql, &res, &err) != 0) {
        rc = BT_ESQL;
        goto out;
    }
    if (out && outlen > 0) {
        if (res.has_value)
            snprintf(out, (size_t)outlen, "%.*s", (int)res.slen, value);
        else
            out[0] = '\0';
    }
out:
    if (rc != BT_OK && errbuf && errlen > 0)
        snprintf(errbuf, (size_t)errlen, "%s", err.msg[0] ? err.msg : bt_strerror(rc));
    if (c)
        drv->disconnect(c);
    if (drv->thread_end)
        drv->thread_end();
    return rc;
}
