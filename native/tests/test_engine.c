/* test_engine.c: the engine exercised from C alone, so it can run under
 * AddressSanitizer, UBSan and LeakSanitizer (tests/native/test_engine_native.py
 * builds and runs it).  Prints "N passed, N failed" like other runners. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../benchtop_api.h"
#include "../histogram.h"
#include "../rand.h"

static int passed, failed;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (cond) {                                                    \
            passed++;                                                  \
        } else {                                                       \
            failed++;                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
        }                                                              \
    } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* set id = rand(1, 1000); exec read: SELECT ?  (statement 0, one param) */
static const bt_op point_ops[] = {
    {BT_OP_RAND, 0, -1, BT_DIST_UNIFORM, -1, 1, 1000},
    {BT_OP_EXEC, -1, 0, 0, 1, BT_QK_READ, 0},
};
static const bt_param point_params[] = {{BT_PARAM_REG, 0, 0}};
static const bt_stmt point_stmts[] = {{"SELECT ?", -1, 1, BT_QK_READ, 0}};
static const bt_txn_type point_types[] = {{"point", 1, 0, 2}};

static bt_program program_of(const bt_op *ops, int32_t nops, const bt_param *params, int32_t nparams,
                             const bt_stmt *stmts, int32_t nstmts, const bt_txn_type *types, int32_t ntypes)
{
    bt_program p;
    memset(&p, 0, sizeof p);
    p.ops = ops;
    p.nops = nops;
    p.params = params;
    p.nparams = nparams;
    p.stmts = stmts;
    p.nstmts = nstmts;
    p.txn_types = types;
    p.ntxn_types = ntypes;
    return p;
}

static bt_program point_program(void)
{
    return program_of(point_ops, 2, point_params, 1, point_stmts, 1, point_types, 1);
}

static void test_histogram_layout(void)
{
    int32_t n = bt_hist_nbuckets();
    CHECK(n == BT_HIST_NBUCKETS, "nbuckets %d", n);
    for (int32_t i = 0; i + 1 < n; i++) {
        if (bt_hist_bucket_high(i) != bt_hist_bucket_low(i + 1)) {
            CHECK(0, "bucket %d high %llu != next low %llu", i,
                  (unsigned long long)bt_hist_bucket_high(i), (unsigned long long)bt_hist_bucket_low(i + 1));
            return;
        }
    }
    /* every value maps into a bucket that contains it, relative width <= 1/128 */
    uint64_t vals[] = {0, 1, 255, 256, 1000, 12345, 999999, 1000000000ULL, 100000000000ULL};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        int32_t i = bt_hist_index(vals[k]);
        CHECK(bt_hist_bucket_low(i) <= vals[k] && vals[k] < bt_hist_bucket_high(i), "value %llu bucket %d",
              (unsigned long long)vals[k], i);
        if (vals[k] >= 256)
            CHECK((double)(bt_hist_bucket_high(i) - bt_hist_bucket_low(i)) / (double)bt_hist_bucket_low(i) <= 1.0 / 128 + 1e-12,
                  "bucket %d too wide", i);
    }
    CHECK(bt_hist_bucket_high(n - 1) > 100ULL * 1000000000ULL, "range must reach 100 s");
}

static void test_distributions(void)
{
    bt_rng r;
    bt_rand_params p;
    bt_rng_seed(&r, 42);
    bt_rand_params_init(&p, BT_DIST_SPECIAL, 12, 1, 75, 0.2, 0.8);
    int dists[] = {BT_DIST_UNIFORM, BT_DIST_GAUSSIAN, BT_DIST_SPECIAL, BT_DIST_PARETO, BT_DIST_ZIPFIAN};
    for (size_t d = 0; d < 5; d++) {
        int64_t lo = 1, hi = 10000, bad = 0;
        for (int i = 0; i < 200000; i++) {
            int64_t v = bt_rand_dist(&r, &p, dists[d], lo, hi);
            bad += v < lo || v > hi;
        }
        CHECK(bad == 0, "distribution %d out of range %lld times", dists[d], (long long)bad);
    }
    /* special: about 75% of draws fall in the central 1% of the range */
    int central = 0, n = 200000;
    for (int i = 0; i < n; i++) {
        int64_t v = bt_rand_dist(&r, &p, BT_DIST_SPECIAL, 1, 100000);
        central += v >= 49500 && v <= 50500;
    }
    double frac = (double)central / n;
    CHECK(frac > 0.74 && frac < 0.80, "special central fraction %.3f", frac);
}

static void test_null_engine(void)
{
    bt_program prog = point_program();
    bt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.conn.driver = BT_DRIVER_NULL;
    cfg.program = &prog;
    cfg.threads = 2;
    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK, "engine_new");
    if (!e)
        return;
    uint64_t *h = calloc((size_t)bt_hist_nbuckets(), sizeof(uint64_t));
    uint64_t *s = calloc((size_t)bt_hist_nbuckets(), sizeof(uint64_t));
    bt_snapshot snap;
    CHECK(bt_engine_start(e) == BT_OK, "start");
    sleep_ms(100);
    CHECK(bt_engine_set_threads(e, 4) == BT_OK, "set_threads 4");
    sleep_ms(100);
    bt_engine_snapshot(e, &snap, h, s);
    CHECK(snap.threads_running == 4, "running %d", snap.threads_running);
    CHECK(bt_engine_set_threads(e, 1) == BT_OK, "set_threads 1");
    sleep_ms(100);
    bt_engine_snapshot(e, &snap, h, s);
    CHECK(snap.threads_running == 1, "running after retire %d", snap.threads_running);
    CHECK(bt_engine_set_rate(e, 1000, BT_ARRIVAL_UNIFORM) == BT_OK, "set_rate");
    bt_snapshot a, b;
    bt_engine_snapshot(e, &a, NULL, NULL);
    sleep_ms(500);
    bt_engine_snapshot(e, &b, NULL, NULL);
    double rate = (double)(b.transactions - a.transactions) / (b.t - a.t);
    CHECK(fabs(rate - 1000) < 100, "rate held %.1f", rate);
    bt_engine_stop(e);
    bt_engine_join(e);
    bt_engine_snapshot(e, &snap, h, s);
    uint64_t total = 0;
    for (int32_t i = 0; i < bt_hist_nbuckets(); i++)
        total += h[i];
    CHECK(total == snap.transactions, "histogram %llu == transactions %llu", (unsigned long long)total,
          (unsigned long long)snap.transactions);
    /* a transaction done after the stop is unfinished and its read, done after the stop too, is not counted;
     * a read that came back just before the end counts though its transaction does not */
    CHECK(snap.queries[BT_QK_READ] >= snap.transactions &&
          snap.queries[BT_QK_READ] <= snap.transactions + snap.unfinished, "one read per transaction");
    CHECK(snap.state == BT_STATE_STOPPED, "state %d", snap.state);
    free(h);
    free(s);
    bt_engine_free(e);
}

/* Two groups over one program: one paced at 500/s, one closed loop that
 * grows and shrinks; per-group snapshots add up to the engine's. */
static void test_groups(void)
{
    static const bt_op ops[] = {
        {BT_OP_RAND, 0, -1, BT_DIST_UNIFORM, -1, 1, 1000},
        {BT_OP_EXEC, -1, 0, 0, 1, BT_QK_READ, 0},
        {BT_OP_EXEC, -1, 0, 0, 1, BT_QK_WRITE, 0},
    };
    static const bt_txn_type types[] = {{"r", 1, 0, 2}, {"w", 1, 2, 1}};
    bt_program prog = point_program();
    prog.ops = ops;
    prog.nops = 3;
    prog.txn_types = types;
    prog.ntxn_types = 2;
    bt_group groups[2];
    memset(groups, 0, sizeof groups);
    groups[0].name = "paced";
    groups[0].threads = 1;
    groups[0].rate = 500;
    groups[0].weights[0] = 1;
    groups[1].name = "free";
    groups[1].threads = 2;
    groups[1].weights[1] = 1;
    bt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.conn.driver = BT_DRIVER_NULL;
    cfg.program = &prog;
    cfg.groups = groups;
    cfg.ngroups = 2;
    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK, "engine_new with groups");
    if (!e)
        return;
    CHECK(bt_engine_start(e) == BT_OK, "start");
    CHECK(bt_engine_set_group_threads(e, 1, 5) == BT_OK, "grow group 1");
    sleep_ms(300);
    CHECK(bt_engine_set_group_threads(e, 1, 1) == BT_OK, "shrink group 1");
    CHECK(bt_engine_set_group_threads(e, 2, 1) == BT_EINVAL, "no group 2");
    sleep_ms(300);
    bt_engine_stop(e);
    bt_engine_join(e);
    bt_snapshot snap;
    bt_group_snapshot g0, g1;
    bt_engine_snapshot(e, &snap, NULL, NULL);
    bt_engine_group_snapshot(e, 0, &g0, NULL, NULL);
    bt_engine_group_snapshot(e, 1, &g1, NULL, NULL);
    CHECK(g0.transactions + g1.transactions == snap.transactions, "groups add up");
    CHECK(snap.txn_by_type[0] == g0.transactions && snap.txn_by_type[1] == g1.transactions, "each group its type");
    double rate = (double)g0.transactions / snap.t;
    CHECK(fabs(rate - 500) < 60, "paced group at %.1f/s", rate);
    CHECK(snap.queries[BT_QK_WRITE] >= g1.transactions &&
          snap.queries[BT_QK_WRITE] <= g1.transactions + snap.unfinished, "writes only from group 1");
    CHECK(g1.threads_target == 1 && snap.threads_target == 2, "targets %d %d", g1.threads_target, snap.threads_target);
    bt_engine_free(e);
}

static void test_sqlite_engine(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/t.db", dir);
    unlink(path);
    bt_conn_config conn;
    memset(&conn, 0, sizeof conn);
    conn.driver = BT_DRIVER_SQLITE;
    conn.database = path;
    char err[256] = "";
    CHECK(bt_exec_sql(&conn, "CREATE TABLE t1 (id INTEGER PRIMARY KEY, k INTEGER, c TEXT)", NULL, 0, err,
                      sizeof err) == BT_OK, "create: %s", err);
    bt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.conn = conn;
    cfg.threads = 0;
    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK, "engine for load");
    bt_gen cols[] = {{BT_GEN_SEQ, 0, 0, 0, NULL}, {BT_GEN_RAND, BT_DIST_UNIFORM, 1, 100, NULL},
                     {BT_GEN_TEMPLATE, 0, 0, 0, "###-@@@'x"}};
    bt_load ld = {"INSERT INTO t{t}(id, k, c) VALUES ", cols, 3, 1, 1, 5000, 100, 1000};
    CHECK(bt_engine_load(e, &ld, 3) == BT_OK, "load");
    bt_engine_free(e);
    char out[64] = "";
    CHECK(bt_exec_sql(&conn, "SELECT COUNT(*) FROM t1", out, sizeof out, err, sizeof err) == BT_OK, "count");
    CHECK(strcmp(out, "5000") == 0, "rows loaded: %s", out);
    CHECK(bt_exec_sql(&conn, "SELECT c FROM t1 WHERE id = 7", out, sizeof out, err, sizeof err) == BT_OK, "c");
    CHECK(strlen(out) == 9 && out[3] == '-' && out[8] == 'x', "template value %s", out);
    CHECK(bt_exec_sql(&conn, "SELECT * FROM nope", out, sizeof out, err, sizeof err) == BT_ESQL, "missing table");
    CHECK(strstr(err, "no such table") != NULL, "error text %s", err);

    /* a fatal statement error stops the run with the server's message */
    static const bt_op ops[] = {{BT_OP_EXEC, -1, 0, 0, 0, BT_QK_READ, 0}};
    static const bt_stmt bad[] = {{"SELECT * FROM missing_table", -1, 0, BT_QK_READ, 0}};
    static const bt_txn_type types[] = {{"bad", 1, 0, 1}};
    bt_program p = program_of(ops, 1, NULL, 0, bad, 1, types, 1);
    cfg.program = &p;
    cfg.threads = 2;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK, "engine");
    bt_engine_start(e);
    bt_snapshot snap;
    for (int i = 0; i < 100; i++) {
        bt_engine_snapshot(e, &snap, NULL, NULL);
        if (snap.state == BT_STATE_FAILED)
            break;
        sleep_ms(10);
    }
    CHECK(snap.state == BT_STATE_FAILED, "state %d", snap.state);
    CHECK(strstr(snap.error, "missing_table") != NULL, "error names the statement: %s", snap.error);
    bt_engine_free(e);
    unlink(path);
}

static void test_invalid_program(void)
{
    bt_op ops[] = {{BT_OP_SET, 99, -1, 0, 0, 1, 0}};
    bt_txn_type types[] = {{"x", 1, 0, 1}};
    bt_program p = program_of(ops, 1, NULL, 0, NULL, 0, types, 1);
    bt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.program = &p;
    cfg.threads = 1;
    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_EINVAL, "register out of range refused");
    CHECK(e == NULL, "no handle on error");
}

/* rndrw on 2 small files in each IO mode: the requests, fsyncs and the
 * per-kind latency histograms add up, and the async ring drains at the end. */
static void test_fileio_modes(const char *dir)
{
    char path[512];
    static char zeros[65536];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/test_file.%d", dir, i);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros, "create %s", path);
        if (f)
            fclose(f);
    }
    /* f = rand(0, 1); b = rand(0, 15); write f b; read f b; fsync f */
    static const bt_op ops[] = {
        {BT_OP_RAND, 0, -1, BT_DIST_UNIFORM, -1, 0, 1},
        {BT_OP_RAND, 1, -1, BT_DIST_UNIFORM, -1, 0, 15},
        {BT_OP_EXEC, -1, 0, 0, 2, BT_QK_WRITE, 0},
        {BT_OP_EXEC, -1, 0, 1, 2, BT_QK_READ, 0},
        {BT_OP_EXEC, -1, 0, 2, 1, BT_QK_OTHER, 0},
    };
    static const bt_param params[] = {{BT_PARAM_REG, 0, 0}, {BT_PARAM_REG, 1, 0}};
    static const bt_stmt stmts[] = {{"write ? ?", -1, 2, BT_QK_WRITE, 0}, {"read ? ?", -1, 2, BT_QK_READ, 0},
                                    {"fsync ?", -1, 1, BT_QK_OTHER, 0}};
    static const bt_txn_type types[] = {{"rw", 1, 0, 5}};
    const char *modes[] = {"", ";mmap=1", ";async=8"};
    for (int m = 0; m < 3; m++) {
        char opts[128];
        snprintf(opts, sizeof opts, "file_num=2;file_size=65536;block_size=4096%s", modes[m]);
        bt_program p = program_of(ops, 5, params, 2, stmts, 3, types, 1);
        p.time_queries = 1;
        bt_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.conn.driver = BT_DRIVER_FILEIO;
        cfg.conn.database = dir;
        cfg.conn.options = opts;
        cfg.program = &p;
        cfg.threads = 2;
        cfg.max_events = 500;
        bt_engine *e = NULL;
        CHECK(bt_engine_new(&cfg, &e) == BT_OK, "fileio engine %s", opts);
        if (!e)
            continue;
        bt_engine_start(e);
        bt_engine_join(e);
        bt_snapshot snap;
        bt_engine_snapshot(e, &snap, NULL, NULL);
        int uring_missing = m == 2 && snap.state == BT_STATE_FAILED && strstr(snap.error, "liburing");
        if (!uring_missing) {
            CHECK(snap.state == BT_STATE_STOPPED, "%s state %d: %s", opts, snap.state, snap.error);
            CHECK(snap.transactions == 500 && snap.queries[BT_QK_READ] == 500 && snap.queries[BT_QK_WRITE] == 500 &&
                      snap.queries[BT_QK_OTHER] == 500, "%s counts %llu", opts, (unsigned long long)snap.transactions);
            uint64_t *h = calloc((size_t)bt_hist_nbuckets(), sizeof *h);
            for (int k = 0; h && k < 3; k++) {
                bt_engine_query_hist(e, k, h);
                uint64_t n = 0;
                for (int32_t i = 0; i < bt_hist_nbuckets(); i++)
                    n += h[i];
                CHECK(n == 500, "%s kind %d timed %llu", opts, k, (unsigned long long)n);
            }
            free(h);
        }
        bt_engine_free(e);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/test_file.%d", dir, i);
        unlink(path);
    }
}

/* pgbench's distributions stay in range and have their shapes; the deck
 * deals the exact mix. */
static void test_pgbench_distributions_and_deck(void)
{
    bt_rng r;
    bt_rng_seed(&r, 7);
    int64_t ones = 0, lo_half = 0;
    double sum_exp = 0;
    for (int i = 0; i < 100000; i++) {
        int64_t z = bt_rand_pgbench(&r, BT_OP_RAND_ZIPFIAN, 1, 1000, 1.5);
        int64_t g = bt_rand_pgbench(&r, BT_OP_RAND_GAUSSIAN, 1, 100, 2.5);
        int64_t x = bt_rand_pgbench(&r, BT_OP_RAND_EXPONENTIAL, 1, 100, 5.0);
        CHECK(z >= 1 && z <= 1000 && g >= 1 && g <= 100 && x >= 1 && x <= 100, "range %lld %lld %lld",
              (long long)z, (long long)g, (long long)x);
        ones += z == 1;
        lo_half += g <= 50;
        sum_exp += (double)x;
    }
    /* zipf s=1.5 over 1000: P(1) = 1 / H(1000, 1.5) ~ 0.39; gaussian symmetric; exponential mean ~ 20 */
    CHECK(ones > 36000 && ones < 42000, "zipfian P(1) %lld", (long long)ones);
    CHECK(lo_half > 48000 && lo_half < 52000, "gaussian halves %lld", (long long)lo_half);
    CHECK(sum_exp / 100000 > 17 && sum_exp / 100000 < 23, "exponential mean %.2f", sum_exp / 100000);

    static const bt_op ops[] = {{BT_OP_EXEC, -1, 0, 0, 0, BT_QK_READ, 0}};
    static const bt_stmt stmts[] = {{"SELECT 1", -1, 0, BT_QK_READ, 0}};
    static const bt_txn_type types[] = {{"a", 10, 0, 1}, {"b", 3, 0, 1}};
    bt_program p = program_of(ops, 1, NULL, 0, stmts, 1, types, 2);
    bt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.program = &p;
    cfg.threads = 1;
    cfg.max_events = 13 * 40;
    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK, "deck engine");
    if (!e)
        return;
    bt_engine_start(e);
    bt_engine_join(e);
    bt_snapshot snap;
    bt_engine_snapshot(e, &snap, NULL, NULL);
    CHECK(snap.txn_by_type[0] == 400 && snap.txn_by_type[1] == 120, "deck %llu/%llu",
          (unsigned long long)snap.txn_by_type[0], (unsigned long long)snap.txn_by_type[1]);
    bt_engine_free(e);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    test_histogram_layout();
    test_distributions();
    test_invalid_program();
    test_null_engine();
    test_groups();
    test_sqlite_engine(dir);
    test_fileio_modes(dir);
    test_pgbench_distributions_and_deck();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
