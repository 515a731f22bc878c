/* workload.c: the interpreter for compiled workload programs (see
 * benchtop_api.h for the op set; benchtop/workload compiles the TOML files).
 * It runs inside a worker's loop, so it takes no lock and allocates nothing
 * but a query-latency histogram on a kind's first use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "engine.h"
#include "group.h"
#include "worker.h"
#include "workload.h"

enum { BT_RUN_OK = 0, BT_RUN_ROLLBACK = -1 };

static inline int64_t expr(const bt_client *c, int32_t reg, int64_t k)
{
    return (reg >= 0 ? c->regs[reg] : 0) + k;
}

static int64_t arith(int32_t op, int64_t l, int64_t r)
{
    switch (op) {
    case BT_ARITH_ADD: return (int64_t)((uint64_t)l + (uint64_t)r);
    case BT_ARITH_SUB: return (int64_t)((uint64_t)l - (uint64_t)r);
    case BT_ARITH_MUL: return (int64_t)((uint64_t)l * (uint64_t)r);
    /* INT64_MIN / -1 overflows: give 0 like a division by zero */
    case BT_ARITH_DIV: return r == 0 || (r == -1 && l == INT64_MIN) ? 0 : l / r;
    case BT_ARITH_MOD: return r == 0 || r == -1 ? 0 : l % r;
    case BT_ARITH_LT: return l < r;
    case BT_ARITH_LE: return l <= r;
    case BT_ARITH_GT: return l > r;
    case BT_ARITH_GE: return l >= r;
    case BT_ARITH_EQ: return l == r;
    case BT_ARITH_NE: return l != r;
    case BT_ARITH_AND: return l && r;
    case BT_ARITH_OR: return l || r;
    case BT_ARITH_BITOR: return l | r;
    case BT_ARITH_BITAND: return l & r;
    case BT_ARITH_MIN: return l < r ? l : r;
    case BT_ARITH_MAX: return l > r ? l : r;
    default: return 0;
    }
}

/* pgbench's evaluation errors (pgbench.c evalStandardFunc and friends):
 * NULL when the operation is defined. */
static const char *strict_arith_error(int32_t op, int64_t l, int64_t r)
{
    int64_t out;
    switch (op) {
    case BT_ARITH_ADD: return __builtin_add_overflow(l, r, &out) ? "bigint out of range" : NULL;
    case BT_ARITH_SUB: return __builtin_sub_overflow(l, r, &out) ? "bigint out of range" : NULL;
    case BT_ARITH_MUL: return __builtin_mul_overflow(l, r, &out) ? "bigint out of range" : NULL;
    case BT_ARITH_DIV:
        return r == 0 ? "division by zero" : (r == -1 && l == INT64_MIN ? "bigint out of range" : NULL);
    case BT_ARITH_MOD: return r == 0 ? "division by zero" : NULL;
    default: return NULL;
    }
}

static const char *strict_range_error(int64_t lo, int64_t hi)
{
    int64_t span;
    if (hi < lo)
        return "empty range given to random";
    if (__builtin_sub_overflow(hi, lo, &span) || span == INT64_MAX)
        return "random range is too large";
    return NULL;
}

static int eval_failed(bt_err *err, const char *why)
{
    bt_err_set(err, BT_DERR_EVAL, BT_ERRK_ABORTED, 0, NULL, why);
    return BT_DERR_EVAL;
}

void bt_words(const char *list, int64_t n, int32_t digits, char *out, uint32_t cap, uint32_t *len)
{
    uint32_t o = 0;
    if (digits > 18)
        digits = 18;
    if (n < 0)
        n = -n;
    int64_t div = 1;
    for (int32_t i = 1; i < digits; i++)
        div *= 10;
    for (int32_t i = 0; i < digits; i++, div /= 10) {
        int64_t digit = (n / div) % 10;
        const char *p = list;
        for (int64_t k = 0; k < digit && p; k++) {
            p = strchr(p, ',');
            if (p)
                p++;
        }
        if (!p)
            continue;
        const char *end = strchr(p, ',');
        size_t wl = end ? (size_t)(end - p) : strlen(p);
        if (o + wl + 1 > cap)
            wl = cap - o - 1;
        memcpy(out + o, p, wl);
        o += (uint32_t)wl;
    }
    out[o] = '\0';
    *len = o;
}

/* The transaction types are dealt from a deck of cards, one card per unit
 * of weight, reshuffled when empty (TPC-C 5.2.4.2): every deck holds the
 * exact mix, so every interval longer than a few decks meets it, where
 * independent draws drift below a minimum in about half of all runs.  A mix
 * heavier than BT_DECK_MAX cards is drawn at random instead. */
int32_t bt_workload_pick_type(bt_client *c)
{
    const bt_worker *w = c->w;
    const bt_engine *e = w->e;
    const bt_group_rt *g = &e->groups[w->group];
    if (g->only_type >= 0)
        return g->only_type;
    int32_t ntypes = e->prog->ntxn_types;
    if (g->total_weight > BT_DECK_MAX) {
        int64_t r = bt_rand_dist(&c->rng, &e->rp, BT_DIST_UNIFORM, 1, g->total_weight);
        for (int32_t i = 0; i < ntypes; i++)
            if (r <= g->cum_weight[i])
                return i;
        return ntypes - 1;
    }
    if (c->deck_left == 0) {
        int32_t n = 0;
        for (int32_t i = 0; i < ntypes; i++) {
            int32_t weight = g->cum_weight[i] - (i > 0 ? g->cum_weight[i - 1] : 0);
            for (int32_t k = 0; k < weight && n < BT_DECK_MAX; k++)
                c->deck[n++] = i;
        }
        c->deck_left = n;
    }
    int32_t j = (int32_t)bt_rand_dist(&c->rng, &e->rp, BT_DIST_UNIFORM, 0, c->deck_left - 1);
    int32_t type = c->deck[j];
    c->deck[j] = c->deck[--c->deck_left];
    return type;
}

/* Once per kind per worker the histogram is allocated; without memory the
 * kind keeps its count, only its latency is lost. */
static void record_query(bt_worker *w, int32_t kind, uint64_t ns)
{
    bt_hist *qh = atomic_load_explicit(&w->query_lat[kind], memory_order_relaxed);
    if (!qh) {
        qh = calloc(1, sizeof *qh);
        atomic_store_explicit(&w->query_lat[kind], qh, memory_order_release);
    }
    if (qh)
        bt_hist_record(qh, ns);
}

static int exec_stmt(bt_client *c, const bt_op *op, bt_err *err)
{
    bt_worker *w = c->w;
    bt_engine *e = w->e;
    const bt_program *p = e->prog;
    const bt_stmt *st = &p->stmts[op->c];
    int32_t table = 0;
    if (st->table_reg >= 0) {
        int64_t t = c->regs[st->table_reg];
        table = (int32_t)(t < 1 ? 1 : (t > p->max_table ? p->max_table : t));
    }
    int32_t key = op->c * (p->max_table + 1) + table;
    bt_value *vals = c->vals;
    int32_t n = op->d > BT_MAX_PARAMS ? BT_MAX_PARAMS : op->d;
    for (int32_t i = 0; i < n; i++) {
        const bt_param *pa = &p->params[op->b + i];
        switch (pa->kind) {
        case BT_PARAM_SREG:
            vals[i].type = BT_VAL_STR;
            vals[i].s = c->sregs[pa->reg];
            vals[i].len = c->slen[pa->reg];
            break;
        case BT_PARAM_NULL:
            vals[i].type = BT_VAL_NULL;
            break;
        case BT_PARAM_CONST:
            vals[i].type = BT_VAL_INT;
            vals[i].i = pa->k;
            break;
        default:
            vals[i].type = BT_VAL_INT;
            vals[i].i = c->regs[pa->reg] + pa->k;
            break;
        }
    }
    bt_result res = {0};
    if (op->a >= 0) {
        res.want = 1;
    } else if (op->a <= -2) {
        res.want = 2;
        res.s = c->sregs[-op->a - 2];
    }
    uint64_t t0 = p->time_queries ? bt_now_ns() : 0;
    int rc = e->drv->execute(c->conn, key, e->sql_by_key[key], vals, n, &res, err);
    if (rc != 0)
        return err->kind ? err->kind : BT_DERR_SQL;
    int32_t qk = op->x >= 0 && op->x <= 2 ? (int32_t)op->x : BT_QK_OTHER;
    /* Done after the run's end: outside the summary's window, as the
     * transaction it is part of is (worker.c), so neither counted nor timed;
     * else an fsync ending after the end stands above every transaction's
     * latency and the reads outnumber the transactions done. */
    uint64_t end = atomic_load_explicit(&e->stop_ns, memory_order_relaxed);
    uint64_t done = p->time_queries || end ? bt_now_ns() : 0;
    if (!end || done <= end) {
        BT_ADD(w->queries[qk], 1);
        if (p->time_queries)
            record_query(w, qk, done - t0);
    }
    if (st->is_begin == 1)
        c->in_txn = 1;
    else if (st->is_begin == 2)
        c->in_txn = 0;
    if (op->a >= 0) {
        c->regs[op->a] = res.has_value ? res.i : 0;
    } else if (op->a <= -2) {
        int32_t s = -op->a - 2;
        if (!res.has_value) {
            c->sregs[s][0] = '\0';
            res.slen = 0;
        }
        c->slen[s] = res.slen;
    }
    return BT_DERR_NONE;
}

static int run_ops(bt_client *c, int32_t first, int32_t nops, bt_err *err)
{
    bt_worker *w = c->w;
    bt_engine *e = w->e;
    const bt_program *p = e->prog;
    int32_t end = first + nops;
    for (int32_t pc = first; pc < end; pc++) {
        const bt_op *op = &p->ops[pc];
        switch (op->code) {
        case BT_OP_SET:
            c->regs[op->a] = expr(c, op->b, op->x);
            break;
        case BT_OP_RAND: {
            int64_t lo = expr(c, op->b, op->x), hi = expr(c, op->d, op->y);
            const char *why = p->strict_eval ? strict_range_error(lo, hi) : NULL;
            if (why)
                return eval_failed(err, why);
            c->regs[op->a] = bt_rand_dist(&c->rng, &e->rp, op->c, lo, hi);
            break;
        }
        case BT_OP_STR:
            bt_rand_template(&c->rng, p->strings[op->c], c->sregs[op->a], BT_SREG_CAP,
                             &c->slen[op->a]);
            break;
        case BT_OP_EXEC: {
            int rc = exec_stmt(c, op, err);
            if (rc != BT_DERR_NONE)
                return rc;
            break;
        }
        case BT_OP_LOOP: {
            int64_t count = expr(c, op->b, op->x);
            for (int64_t i = 0; i < count; i++) {
                int rc = run_ops(c, pc + 1, op->d, err);
                if (rc != BT_DERR_NONE)
                    return rc;
            }
            pc += op->d;
            break;
        }
        case BT_OP_BEGIN_IF:
            if (c->regs[op->a] == 0)
                pc += op->d;
            break;
        case BT_OP_UNIQUE: {
            uint32_t idx = atomic_fetch_add_explicit(&e->unique_index, 1, memory_order_relaxed);
            c->regs[op->a] = (int64_t)bt_rand_unique_permute(idx, e->unique_offset);
            break;
        }
        case BT_OP_ROLLBACK_IF:
            if (c->regs[op->a] != 0) {
                if (c->in_txn && e->drv->exec_text(c->conn, "ROLLBACK", NULL, err) != 0)
                    return err->kind ? err->kind : BT_DERR_SQL;
                c->in_txn = 0;
                return BT_RUN_ROLLBACK;
            }
            break;
        case BT_OP_SLEEP_US: {
            int64_t us = expr(c, op->b, op->x);
            if (us > 0) {
                struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
                nanosleep(&ts, NULL);
            }
            break;
        }
        case BT_OP_ARITH:
            /* registers are checked here: engine.c's validation predates this op */
            if (op->a < 0 || op->a >= BT_NREGS || op->d >= BT_NREGS)
                goto bad;
        {
            int64_t l = expr(c, op->b, op->x), r = expr(c, op->d, op->y);
            const char *why = p->strict_eval ? strict_arith_error(op->c, l, r) : NULL;
            if (why)
                return eval_failed(err, why);
            c->regs[op->a] = arith(op->c, l, r);
            break;
        }
        case BT_OP_RAND_GAUSSIAN:
        case BT_OP_RAND_EXPONENTIAL:
        case BT_OP_RAND_ZIPFIAN: {
            int64_t lo = expr(c, op->b, op->x), hi = expr(c, op->d, op->y);
            const char *why = p->strict_eval ? strict_range_error(lo, hi) : NULL;
            if (why)
                return eval_failed(err, why);
            c->regs[op->a] = bt_rand_pgbench(&c->rng, op->code, lo, hi, op->c / 1e6);
            break;
        }
        case BT_OP_WORDS:
            if (op->a < 0 || op->a >= BT_NSREGS || op->c < 0 || op->c >= p->nstrings)
                goto bad;
            bt_words(p->strings[op->c], expr(c, op->b, op->x), op->d, c->sregs[op->a],
                     BT_SREG_CAP, &c->slen[op->a]);
            break;
        default:
        bad:
            bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, NULL, "bad workload program");
            return BT_DERR_SQL;
        }
    }
    return BT_DERR_NONE;
}

int bt_workload_run_txn(bt_client *c, int32_t type, bt_err *err, int *rolled_back)
{
    bt_worker *w = c->w;
    const bt_txn_type *tt = &w->e->prog->txn_types[type];
    *rolled_back = 0;
    c->in_txn = 0;
    int rc = run_ops(c, tt->first_op, tt->nops, err);
    if (rc == BT_RUN_ROLLBACK) {
        *rolled_back = 1;
        return BT_DERR_NONE;
    }
    return rc;
}
