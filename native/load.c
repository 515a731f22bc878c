/* load.c: bulk loading for `benchtop prepare`: generated rows in multi-row
 * INSERTs, in chunks that any thread may take, so one big table still loads
 * on every thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "workload.h"

typedef struct {
    bt_engine *e;
    const bt_load *load;
    _Atomic int64_t next_unit;
    int64_t units_per_table;
    int64_t chunk_rows;
    int64_t nunits;
} bt_load_job;

typedef struct {
    bt_load_job *job;
    int32_t index;
    pthread_t thread;
} bt_load_thread;

static int append_int(bt_textbuf *b, int64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    return bt_textbuf_append(b, tmp, (size_t)n);
}

static int append_quoted(bt_textbuf *b, const bt_driver *drv, void *conn, const char *s, size_t n)
{
    /* at worst every character doubles, plus the two quotes and the NUL */
    if (bt_textbuf_reserve(b, b->len + 2 * n + 4) != 0)
        return -1;
    if (drv->quote) {
        b->len += drv->quote(conn, b->buf + b->len, b->cap - b->len, s, n);
        b->buf[b->len] = '\0';
        return 0;
    }
    b->buf[b->len++] = '\'';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            b->buf[b->len++] = '\'';
        b->buf[b->len++] = s[i];
    }
    b->buf[b->len++] = '\'';
    b->buf[b->len] = '\0';
    return 0;
}

static int append_row(bt_textbuf *b, const bt_load *ld, bt_engine *e, bt_rng *rng, void *conn,
                      int64_t row)
{
    char tmp[BT_SREG_CAP];
    uint32_t tl;
    if (bt_textbuf_append(b, "(", 1) != 0)
        return -1;
    for (int32_t c = 0; c < ld->ncols; c++) {
        const bt_gen *g = &ld->cols[c];
        int rc = 0;
        if (c > 0)
            rc = bt_textbuf_append(b, ",", 1);
        switch (g->kind) {
        case BT_GEN_SEQ: rc |= append_int(b, row + g->lo); break;
        case BT_GEN_RAND: rc |= append_int(b, bt_rand_dist(rng, &e->rp, g->dist, g->lo, g->hi)); break;
        case BT_GEN_TEMPLATE:
            bt_rand_template(rng, g->text ? g->text : "", tmp, sizeof tmp, &tl);
            rc |= append_quoted(b, e->drv, conn, tmp, tl);
            break;
        case BT_GEN_CONST: rc |= append_int(b, g->lo); break;
        case BT_GEN_DIV: rc |= append_int(b, (row - 1) / (g->lo > 0 ? g->lo : 1) + 1); break;
        case BT_GEN_MOD:
            rc |= append_int(b, ((row - 1) / (g->lo > 0 ? g->lo : 1)) % (g->hi > 0 ? g->hi : 1) + 1 + g->dist);
            break;
        case BT_GEN_DECIMAL: {
            int64_t v = bt_rand_dist(rng, &e->rp, BT_DIST_UNIFORM, g->lo, g->hi), p10 = 1;
            int32_t places = g->dist < 0 ? 0 : (g->dist > 18 ? 18 : g->dist);
            for (int32_t i = 0; i < places; i++)
                p10 *= 10;
            uint64_t av = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            char num[48];
            int nl = places == 0 ? snprintf(num, sizeof num, "%lld", (long long)v)
                                 : snprintf(num, sizeof num, "%s%llu.%0*llu", v < 0 ? "-" : "",
                                            (unsigned long long)(av / (uint64_t)p10), (int)places,
                                            (unsigned long long)(av % (uint64_t)p10));
            rc |= bt_textbuf_append(b, num, (size_t)nl);
            break;
        }
        case BT_GEN_WORDS:
            bt_words(g->text ? g->text : "", ((row - 1) / (g->lo > 0 ? g->lo : 1)) % (g->hi > 0 ? g->hi : 1),
                     g->dist, tmp, sizeof tmp, &tl);
            rc |= append_quoted(b, e->drv, conn, tmp, tl);
            break;
        default:
            rc |= bt_textbuf_append(b, g->text ? g->text : "NULL", g->text ? strlen(g->text) : 4);
            break;
        }
        if (rc != 0)
            return -1;
    }
    return bt_textbuf_append(b, ")", 1);
}

static void *load_main(void *arg)
{
    bt_load_thread *lt = arg;
    bt_load_job *job = lt->job;
    bt_engine *e = job->e;
    const bt_load *ld = job->load;
    bt_textbuf b = {0};
    bt_err err = {0};
    bt_rng rng;
    void *conn = NULL;
    bt_rng_seed(&rng, e->seed + 7919u * (uint64_t)(lt->index + 1));
    if (e->drv->connect(&e->cfg.conn, &conn, &err) != 0) {
        bt_engine_fail(e, "cannot connect: %s", err.msg);
        goto out;
    }
    for (;;) {
        int64_t unit = atomic_fetch_add(&job->next_unit, 1);
        if (unit >= job->nunits || atomic_load(&e->stop))
            break;
        int32_t table = ld->first_table + (int32_t)(unit / job->units_per_table);
        int64_t first = (unit % job->units_per_table) * job->chunk_rows + 1;
        int64_t last = first + job->chunk_rows - 1;
        if (last > ld->rows)
            last = ld->rows;
        char *prefix = NULL;
        {
            /* the table number goes where "{t}" stands */
            const char *p = strstr(ld->insert_prefix, "{t}");
            size_t plen = strlen(ld->insert_prefix) + 16;
            prefix = malloc(plen);
            if (!prefix) {
                bt_engine_fail(e, "out of memory");
                goto out;
            }
            if (p)
                snprintf(prefix, plen, "%.*s%d%s", (int)(p - ld->insert_prefix), ld->insert_prefix,
                         table, p + 3);
            else
                snprintf(prefix, plen, "%s", ld->insert_prefix);
        }
        int64_t in_commit = 0;
        int failed = 0;
        /* a stop (an interrupted prepare) is seen between statements, not
         * only between chunks of up to 200,000 rows */
        for (int64_t row = first; row <= last && !failed && !atomic_load(&e->stop);) {
            if (ld->rows_per_commit > 0 && in_commit == 0 &&
                e->drv->exec_text(conn, "BEGIN", NULL, &err) != 0)
                failed = 1;
            b.len = 0;
            int64_t n = 0;
            failed |= bt_textbuf_append(&b, prefix, strlen(prefix)) != 0;
            for (; row <= last && n < ld->rows_per_insert && !failed; row++, n++) {
                if (n > 0)
                    failed |= bt_textbuf_append(&b, ",", 1) != 0;
                failed |= append_row(&b, ld, e, &rng, conn, row) != 0;
            }
            if (!failed && e->drv->exec_text(conn, b.buf, NULL, &err) != 0)
                failed = 1;
            in_commit += n;
            atomic_fetch_add(&e->rows_loaded, (uint64_t)n);
            if (!failed && ld->rows_per_commit > 0 &&
                (in_commit >= ld->rows_per_commit || row > last)) {
                if (e->drv->exec_text(conn, "COMMIT", NULL, &err) != 0)
                    failed = 1;
                in_commit = 0;
            }
        }
        free(prefix);
        if (failed) {
            bt_engine_fail(e, "loading table %d failed: %s", table, err.msg[0] ? err.msg : "out of memory");
            goto out;
        }
    }
out:
    bt_textbuf_free(&b);
    if (conn)
        e->drv->disconnect(conn);
    if (e->drv->thread_end)
        e->drv->thread_end();
    return NULL;
}

int bt_engine_load(bt_engine *e, const bt_load *load, int32_t threads)
{
    if (!e || !load || threads < 1 || threads > BT_MAX_THREADS || load->rows < 0 ||
        load->rows_per_insert < 1 || load->last_table < load->first_table || !load->insert_prefix)
        return BT_EINVAL;
    bt_load_job job = {.e = e, .load = load};
    int64_t per_thread = (load->rows + threads - 1) / threads;
    job.chunk_rows = per_thread < 10000 ? 10000 : (per_thread > 200000 ? 200000 : per_thread);
    if (job.chunk_rows > load->rows)
        job.chunk_rows = load->rows > 0 ? load->rows : 1;
    job.units_per_table = load->rows > 0 ? (load->rows + job.chunk_rows - 1) / job.chunk_rows : 0;
    job.nunits = job.units_per_table * (load->last_table - load->first_table + 1);
    if (job.nunits == 0)
        return BT_OK;
    if (threads > job.nunits)
        threads = (int32_t)job.nunits;
    e->start_ns = bt_now_ns();
    bt_load_thread *lts = calloc((size_t)threads, sizeof *lts);
    if (!lts)
        return BT_ENOMEM;
    int32_t started = 0;
    int rc = BT_OK;
    for (; started < threads; started++) {
        lts[started].job = &job;
        lts[started].index = started;
        if (pthread_create(&lts[started].thread, NULL, load_main, &lts[started]) != 0) {
            rc = BT_ETHREAD;
            break;
        }
    }
    for (int32_t i = 0; i < started; i++)
        pthread_join(lts[i].thread, NULL);
    free(lts);
    if (rc == BT_OK && atomic_load(&e->state) == BT_STATE_FAILED)
        rc = BT_ESQL;
    return rc;
}
