/* worker.c: one load thread.  It owns a connection, its counters and its
 * histograms; it never takes a lock on the hot path (the open-loop ticket
 * lock excepted, which closed loop skips). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "engine.h"
#include "group.h"
#include "scheduler.h"
#include "worker.h"
#include "workload.h"

static void sleep_until(uint64_t when_ns)
{
    bt_io_sleep_until(when_ns);   /* a fiber's sleep lets the loop run the others */
}

static void sleep_ms(uint64_t ms)
{
    sleep_until(bt_now_ns() + ms * 1000000ULL);
}

static int should_exit(const bt_client *c)
{
    const bt_engine *e = c->w->e;
    return atomic_load(&e->stop) || c->gindex >= atomic_load(&e->groups[c->w->group].threads_target);
}

/* The server refused the connection because it holds as many as it takes
 * (MySQL 1040/1203, SQLSTATE 08004; PostgreSQL 53300, whose connect errors
 * come without a SQLSTATE, so by its message). */
static int server_full(const bt_err *err)
{
    return err->code == 1040 || err->code == 1203 || strcmp(err->sqlstate, "08004") == 0
           || strcmp(err->sqlstate, "53300") == 0 || strstr(err->msg, "too many clients") != NULL
           || strstr(err->msg, "connection slots are reserved") != NULL;
}

/* Why a connection failed, for the summary: best effort, never waiting for
 * the lock a snapshot holds (`why` is one of e's messages, under ctl_mu). */
static void keep_why(bt_engine *e, char why[static 256], const char *msg)
{
    if (pthread_mutex_trylock(&e->ctl_mu) == 0) {
        snprintf(why, 256, "%.255s", msg);
        pthread_mutex_unlock(&e->ctl_mu);
    }
}

int bt_worker_connect(bt_client *c, bt_err *err)
{
    bt_worker *w = c->w;
    bt_engine *e = w->e;
    uint64_t t0 = bt_now_ns();
    int rc = e->drv->connect(&e->cfg.conn, &c->conn, err);
    if (rc != 0) {
        c->conn = NULL;
        BT_ADD(w->connect_failures, 1);
        keep_why(e, e->connect_error, err->msg);  /* Too many connections, Access denied */
        return rc;
    }
    /* publish the socket, unless the controller already aborted our I/O */
    pthread_mutex_lock(&c->io_mu);
    if (atomic_load(&c->io_abort)) {
        pthread_mutex_unlock(&c->io_mu);
        bt_io_forget(e->drv->socket ? e->drv->socket(c->conn) : -1);
        e->drv->disconnect(c->conn);
        c->conn = NULL;
        bt_err_set(err, BT_DERR_CONNECT, BT_ERRK_LOST_CONNECTION, 0, "", "stopped");
        return -1;
    }
    c->io_fd = e->drv->socket ? e->drv->socket(c->conn) : -1;
    pthread_mutex_unlock(&c->io_mu);
    uint64_t dt = bt_now_ns() - t0;
    BT_ADD(w->connects, 1);
    BT_ADD(w->connect_ns_sum, dt);
    if (dt > BT_GET(w->connect_ns_max))
        BT_PUT(w->connect_ns_max, dt);
    c->txns_since_connect = 0;
    BT_PUT(w->connected, BT_GET(w->connected) + 1);
    atomic_store(&e->ever_connected, 1);
    return 0;
}

void bt_worker_disconnect(bt_client *c)
{
    if (c->conn) {
        bt_worker *w = c->w;
        BT_PUT(w->connected, BT_GET(w->connected) - 1);
        pthread_mutex_lock(&c->io_mu);
        c->io_fd = -1;   /* before close: the number may be reused at once */
        pthread_mutex_unlock(&c->io_mu);
        /* the driver's socket now (-1 when the library already closed it) */
        bt_io_forget(w->e->drv->socket ? w->e->drv->socket(c->conn) : -1);
        w->e->drv->disconnect(c->conn);
        c->conn = NULL;
    }
}

/* Reconnect with exponential backoff until connected or told to stop.  Not
 * inlined, nor is rollback: their errors' 400 bytes stay out of client_run's
 * frame (see bt_client's err). */
__attribute__((noinline)) static int reconnect(bt_client *c)
{
    uint64_t backoff = BT_RECONNECT_MIN_MS;
    bt_worker_disconnect(c);
    while (!should_exit(c)) {
        bt_err err = {0};
        if (bt_worker_connect(c, &err) == 0) {
            BT_ADD(c->w->reconnects, 1);
            return 0;
        }
        if (bt_io_aborted())
            return -1;
        sleep_ms(backoff);
        backoff = backoff * 2 > BT_RECONNECT_MAX_MS ? BT_RECONNECT_MAX_MS : backoff * 2;
    }
    return -1;
}

void bt_worker_add_counters(const bt_worker *w, uint64_t now, bt_snapshot *out)
{
    out->connect_failures += BT_GET(w->connect_failures);
    out->transactions += BT_GET(w->txns);
    out->unfinished += BT_GET(w->unfinished);
    out->rollbacks += BT_GET(w->rollbacks);
    out->retries += BT_GET(w->retries);
    out->reconnects += BT_GET(w->reconnects);
    out->connects += BT_GET(w->connects);
    for (int k = 0; k < 3; k++)
        out->queries[k] += BT_GET(w->queries[k]);
    for (int k = 0; k < BT_ERRK_COUNT; k++)
        out->errors[k] += BT_GET(w->errors[k]);
    out->connect_ns_sum += BT_GET(w->connect_ns_sum);
    uint64_t v = BT_GET(w->connect_ns_max);
    if (v > out->connect_ns_max)
        out->connect_ns_max = v;
    out->latency_ns_sum += BT_GET(w->lat_sum);
    out->service_ns_sum += BT_GET(w->svc_sum);
    v = BT_GET(w->lat_max);
    if (v > out->latency_ns_max)
        out->latency_ns_max = v;
    v = BT_GET(w->lat_min);
    if (v < out->latency_ns_min)
        out->latency_ns_min = v;
    v = BT_GET(w->svc_max);
    if (v > out->service_ns_max)
        out->service_ns_max = v;
    /* finished transactions; those under way are their connections' (the
     * caller adds them: bt_engine_snapshot) */
    (void)now;
    out->busy_ns += BT_GET(w->busy_ns);
    out->connections_served += (int32_t)BT_GET(w->served);
    for (int k = 0; k < BT_MAX_TXN_TYPES; k++) {
        out->txn_by_type[k] += BT_GET(w->txn_by_type[k]);
        out->txn_ns_by_type[k] += BT_GET(w->txn_ns_by_type[k]);
        out->svc_ns_by_type[k] += BT_GET(w->svc_ns_by_type[k]);
    }
}

void bt_worker_merge_latency(const bt_worker *w, uint64_t *lat_hist, uint64_t *svc_hist)
{
    /* record() wrote a transaction that started when intended to `same` only */
    if (lat_hist) {
        bt_hist_merge_into(w->lat, lat_hist);
        bt_hist_merge_into(w->same, lat_hist);
    }
    if (svc_hist) {
        bt_hist_merge_into(w->svc, svc_hist);
        bt_hist_merge_into(w->same, svc_hist);
    }
}

/* Every transaction counts in the totals and the histograms; the per-type
 * figures count committed ones only, so a type's rate (tpmC) leaves out the
 * workload's deliberate rollbacks. */
static void record(bt_client *c, int32_t type, uint64_t intended, uint64_t started, uint64_t done,
                   int rolled_back)
{
    bt_worker *w = c->w;
    if (!c->served) {
        c->served = 1;
        BT_ADD(w->served, 1);
    }
    uint64_t lat = done - intended;
    uint64_t svc = done - started;
    if (lat == svc) {
        bt_hist_record(w->same, lat);
    } else {
        bt_hist_record(w->lat, lat);
        bt_hist_record(w->svc, svc);
    }
    BT_ADD(w->lat_sum, lat);
    BT_ADD(w->svc_sum, svc);
    if (lat > BT_GET(w->lat_max))
        BT_PUT(w->lat_max, lat);
    if (lat < BT_GET(w->lat_min))
        BT_PUT(w->lat_min, lat);
    if (svc > BT_GET(w->svc_max))
        BT_PUT(w->svc_max, svc);
    BT_ADD(w->txns, 1);
    if (rolled_back) {
        BT_ADD(w->rollbacks, 1);
        return;
    }
    BT_ADD(w->txn_by_type[type], 1);
    BT_ADD(w->txn_ns_by_type[type], lat);
    BT_ADD(w->svc_ns_by_type[type], svc);
    if (w->e->prog->ntxn_types > 1) {
        bt_hist *th = atomic_load_explicit(&w->type_lat[type], memory_order_relaxed);
        if (!th) {
            /* once per type per worker; without memory the type keeps its
             * count and average, only its percentiles are lost */
            th = calloc(1, sizeof *th);
            atomic_store_explicit(&w->type_lat[type], th, memory_order_release);
        }
        if (th)
            bt_hist_record(th, lat);
    }
}

/* Rolls back after a failed statement.  A retry must never start with BEGIN
 * on a connection whose transaction is still open: that would commit the
 * half-done work. */
__attribute__((noinline)) static int rollback(bt_client *c)
{
    if (!c->in_txn || !c->conn)
        return 0;
    bt_err err = {0};
    c->in_txn = 0;
    int rc = c->w->e->drv->exec_text(c->conn, "ROLLBACK", NULL, &err);
    if (rc != 0)
        keep_why(c->w->e, c->w->e->lost_error, err.msg);
    return rc;
}

/* Runs one transaction to completion, retrying retryable failures.  Returns 0
 * when it committed (or the workload rolled back by design), 1 when the
 * worker should go on without counting it, -1 when the run must stop. */
static int run_one(bt_client *c, int32_t type, int *rolled_back)
{
    bt_worker *w = c->w;
    bt_engine *e = w->e;
    int attempts = 0;
    for (;;) {
        bt_err *err = &c->err;
        bt_err_clear(err);
        int rc = bt_workload_run_txn(c, type, err, rolled_back);
        if (rc == BT_DERR_NONE)
            return 0;
        if ((rc == BT_DERR_LOST || rc == BT_DERR_CONNECT) && (atomic_load(&c->io_abort) || bt_io_aborted())) {
            c->in_txn = 0;   /* our own shutdown(): unfinished, not an outage */
            BT_ADD(w->unfinished, 1);
            return -1;
        }
        if (rc == BT_DERR_LOST || rc == BT_DERR_CONNECT) {
            int timeout = err->errk == BT_ERRK_TIMEOUT;
            BT_ADD(w->errors[timeout ? BT_ERRK_TIMEOUT : BT_ERRK_LOST_CONNECTION], 1);
            if (!timeout)
                keep_why(e, e->lost_error, err->msg);
            c->in_txn = 0;
            return reconnect(c) == 0 ? 1 : -1;
        }
        if (rc == BT_DERR_EVAL) {
            /* pgbench aborts the client: this worker stops, the others go on */
            BT_ADD(w->errors[BT_ERRK_ABORTED], 1);
            rollback(c);
            bt_engine_client_aborted(e, e->prog->txn_types[type].name, err->msg);
            return -1;
        }
        if (rc == BT_DERR_RETRY || bt_engine_error_ignored(e, err)) {
            int k = rc == BT_DERR_RETRY ? err->errk : BT_ERRK_IGNORED;
            BT_ADD(w->errors[k >= 0 && k < BT_ERRK_COUNT ? k : BT_ERRK_IGNORED], 1);
            if (rollback(c) != 0) {
                BT_ADD(w->errors[BT_ERRK_LOST_CONNECTION], 1);
                return reconnect(c) == 0 ? 1 : -1;
            }
            BT_ADD(w->retries, 1);
            attempts++;
            if (should_exit(c))
                return 1;
            if (e->cfg.max_retries > 0 && attempts >= e->cfg.max_retries)
                return 1;
            continue;
        }
        BT_ADD(w->errors[BT_ERRK_FATAL], 1);
        rollback(c);
        bt_engine_fail(e, "%s", err->msg[0] ? err->msg : "statement failed");
        return -1;
    }
}

static void first_try_done(bt_client *c)
{
    if (!c->tried) {
        c->tried = 1;
        bt_engine_first_try_done(c->w->e);
    }
}

/* No transaction before the run starts: the first connections' load would
 * slow the last ones' handshakes and count outside the measured time.  Only
 * an event loop's fibers find the gate closed (a plain thread's park fails). */
static void wait_start(bt_client *c)
{
    bt_engine *e = c->w->e;
    while (atomic_load(&e->gate) == BT_GATE_CLOSED && !should_exit(c))
        if (bt_io_park() != 0)
            return;
}

/* One connection's life: connect, then transactions until told to stop (or
 * until the group's target drops below its number), then disconnect.  The
 * same on a thread of its own and on an event loop's fiber. */
static void client_run(bt_client *c)
{
    bt_worker *w = c->w;
    bt_engine *e = w->e;
    const bt_program *p = e->prog;
    for (int32_t i = 0; i < p->ninit_regs && i < BT_NREGS; i++)
        c->regs[i] = p->init_regs[i];

    bt_err *err = &c->err;
    bt_err_clear(err);
    uint64_t first_try = bt_now_ns();
    while (!c->conn && !should_exit(c)) {
        int rc = bt_worker_connect(c, err);
        first_try_done(c);
        if (rc == 0)
            break;
        if (should_exit(c) || bt_io_aborted())
            break;
        /* The first connection of the run failing is bad input (wrong port,
         * password, host); once the server has been reached, it is an outage
         * to ride out.  A server that is full answers its refusals sooner
         * than it finishes the handshakes it accepted, so a refused client
         * waits a little for the others before calling the run failed. */
        if (!atomic_load(&e->ever_connected)) {
            if (server_full(err) && bt_now_ns() - first_try < BT_FIRST_CONNECT_FULL_MS * 1000000ULL) {
                sleep_ms(100);
                continue;
            }
            bt_engine_fail(e, "cannot connect: %s", err->msg);
            goto out;
        }
        sleep_ms(BT_RECONNECT_MAX_MS);
    }
    first_try_done(c);  /* stopped before it tried */
    wait_start(c);

    while (!should_exit(c)) {
        if (atomic_load(&e->paused)) {
            if (bt_fiber_self())
                sleep_ms(BT_IDLE_POLL_MS);  /* a fiber must not block its loop's other connections */
            else
                bt_engine_wait_resume(e);
            continue;
        }
        if (e->cfg.max_events > 0 &&
            atomic_fetch_add(&e->events_started, 1) >= e->cfg.max_events) {
            bt_engine_events_done(e);
            break;
        }
        uint64_t now = bt_now_ns();
        uint64_t intended = now;
        int waited = 0;
        if (bt_sched_take(&e->groups[w->group].sched, now, &intended) == BT_TAKE_TICKET && intended > now) {
            waited = 1;
            /* Sleep in short steps so stop, pause and thread changes are seen. */
            while (intended > bt_now_ns() + BT_IDLE_POLL_MS * 1000000ULL && !should_exit(c))
                sleep_ms(BT_IDLE_POLL_MS);
            if (atomic_load(&e->stop))
                break;  /* a ticket due after the stop is not run (at --rate 1 it was seconds away) */
            sleep_until(intended);
        }
        int32_t type = bt_workload_pick_type(c);
        /* without a wait the transaction starts now: one clock read fewer */
        uint64_t started = waited ? bt_now_ns() : now;
        BT_PUT(c->busy_since, started);
        int rolled_back = 0;
        int rc = run_one(c, type, &rolled_back);
        uint64_t done = bt_now_ns();
        BT_PUT(c->busy_since, 0);
        BT_ADD(w->busy_ns, done - started);
        if (rc < 0)
            break;
        uint64_t end = atomic_load(&e->stop_ns);
        if (rc == 0 && end && done > end) {
            /* done after the run's end: the end's snapshot cannot count it */
            BT_ADD(w->unfinished, 1);
            break;
        }
        if (rc == 0) {
            record(c, type, intended, started, done, rolled_back);
            if (e->cfg.reconnect_every > 0 &&
                ++c->txns_since_connect >= (uint64_t)e->cfg.reconnect_every) {
                bt_worker_disconnect(c);
                if (bt_worker_connect(c, err) != 0 && reconnect(c) != 0)
                    break;
            }
        }
    }
out:
    bt_worker_disconnect(c);
}

static void client_fiber(void *arg)
{
    client_run(arg);
}

/* An event loop's connections are numbers gindex, gindex + J, gindex + 2J ...
 * of its group; it starts a fiber for each below the group's target that has
 * none (at the start, and whenever the target or the table grows). */
static void loop_start_clients(bt_worker *w, int32_t target)
{
    bt_engine *e = w->e;
    bt_group_rt *g = &e->groups[w->group];
    int32_t J = e->loop_threads;
    pthread_mutex_lock(&e->ctl_mu);
    int32_t n = atomic_load(&g->nclients);
    for (int32_t i = w->gindex; i < target && i < n && !atomic_load(&e->stop); i += J) {
        bt_client *c = g->clients[i];
        if (c->active)
            continue;
        if (w->nmine == w->mine_cap) {
            int32_t cap = w->mine_cap ? w->mine_cap * 2 : 16;
            bt_client **m = realloc(w->mine, sizeof *m * (size_t)cap);
            if (!m)
                break;
            w->mine = m;
            w->mine_cap = cap;
        }
        if (bt_loop_spawn(w->loop, &c->fiber, client_fiber, c) != 0) {
            pthread_mutex_unlock(&e->ctl_mu);
            bt_engine_fail(e, "cannot start connection %d: out of memory for its stack", (int)i);
            return;
        }
        c->active = 1;
        w->mine[w->nmine++] = c;
        BT_PUT(w->clients_running, BT_GET(w->clients_running) + 1);
    }
    pthread_mutex_unlock(&e->ctl_mu);
}

static void loop_main(bt_worker *w)
{
    bt_engine *e = w->e;
    bt_group_rt *g = &e->groups[w->group];
    int32_t seen_target = -1, seen_n = -1;
    uint64_t reaped = 0;
    for (;;) {
        int32_t target = atomic_load(&g->threads_target);
        int32_t n = atomic_load(&g->nclients);
        if (!atomic_load(&e->stop) && (target != seen_target || n != seen_n)) {
            seen_target = target;
            seen_n = n;
            loop_start_clients(w, target);
        }
        /* until the start, parked fibers wait for it: a short wait so all
         * loops begin within a millisecond of each other */
        int waiting = atomic_load(&e->gate) == BT_GATE_CLOSED;
        if (!waiting)
            bt_loop_unpark(w->loop);
        int live = bt_loop_run_once(w->loop, waiting ? 1 : BT_IDLE_POLL_MS);
        /* fibers that ended give their stacks back (a pass only when some did) */
        int32_t k = 0;
        uint64_t finished = bt_loop_finished(w->loop);
        for (int32_t i = 0; i < w->nmine && finished != reaped; i++) {
            bt_client *c = w->mine[i];
            if (c->fiber.state == BT_FIBER_DONE) {
                bt_fiber_release(&c->fiber);
                c->active = 0;
                BT_PUT(w->clients_running, BT_GET(w->clients_running) - 1);
            } else {
                w->mine[k++] = c;
            }
        }
        if (finished != reaped)
            w->nmine = k;
        reaped = finished;
        if (live == 0 && (atomic_load(&e->stop) || w->gindex >= atomic_load(&g->threads_target)))
            break;
    }
}

void *bt_worker_main(void *arg)
{
    bt_worker *w = arg;
    bt_engine *e = w->e;
    bt_group_worker_started(w);

    /* the spawner holds it until every worker of the batch exists */
    pthread_mutex_lock(&e->ctl_mu);
    pthread_mutex_unlock(&e->ctl_mu);
    if (w->loop)
        loop_main(w);
    else
        client_run(w->one);
    if (e->drv->thread_end)
        e->drv->thread_end();
    pthread_mutex_lock(&e->ctl_mu);
    atomic_store(&w->state, BT_W_EXITED);
    e->live--;
    pthread_cond_broadcast(&e->exit_cv);
    int last = e->released && e->live == 0;
    pthread_mutex_unlock(&e->ctl_mu);
    if (last)
        bt_engine_destroy(e);   /* bt_engine_free gave up on us earlier */
    return NULL;
}
