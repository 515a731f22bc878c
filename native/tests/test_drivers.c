/* test_drivers.c: the MySQL and PostgreSQL drivers against a real server,
 * without the engine.
 *
 *   test_drivers mysql|mysql-maxps|pgsql|pgbouncer HOST PORT USER PASSWORD DB
 *   test_drivers mysql|pgsql|pgbouncer HOST PORT USER PASSWORD DB bench N TABLE [MODE]
 *
 * Prints "ok <check>" per passing check, "FAIL <where> (<condition>): why"
 * per failed assertion and "# ..." notes;
 * exits 0 only when everything passed.  `mysql-maxps` expects the server's
 * max_prepared_stmt_count at 0 (the caller sets it).  `pgbouncer` runs the PgBouncer
 * named-statement fallback scenario (HOST/PORT are the pooler's).  `bench`
 * runs, on TABLE (a sysbench table), N prepared point selects (MODE point),
 * the same over the text protocol (text), or N transactions of 10 point
 * selects (txn; pipeline: the same in PostgreSQL pipeline mode), for
 * `strace -c -f` and `perf stat`.
 *
 * Environment, for manual runs: BT_TEST_SOCKET (Unix socket instead of TCP),
 * BT_TEST_SSL (cfg->ssl: 1 required, 2 verified), BT_TEST_OPTIONS
 * (cfg->options).
 *
 * Build (what tests/native/test_driver_build.py does, from native/), with
 * the sources MYSQL, PGSQL and DRIVER_SUPPORT of benchtop/engine/_sources.py:
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
 *      -DBT_HAVE_MYSQL -DBT_HAVE_PGSQL $(mariadb_config --cflags) \
 *      -I$(pg_config --includedir) -I. tests/test_drivers.c SOURCES... \
 *      $(mariadb_config --libs) -lpq -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../driver.h"

static int failures;
static const bt_driver *drv;
static int is_pg;
static bt_conn_config base;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            failures++;                                          \
            printf("FAIL %s:%d (%s): ", __func__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                 \
            printf("\n");                                        \
        }                                                        \
    } while (0)

static void report(const char *name, int failures_before)
{
    if (failures == failures_before)
        printf("ok %s\n", name);
    fflush(stdout);
}

static void *xconnect(int prepare)
{
    bt_conn_config cfg = base;
    bt_err err = {0};
    void *c = NULL;
    cfg.prepare = prepare;
    if (drv->connect(&cfg, &c, &err) != 0) {
        printf("FAIL connect: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static int run(void *c, const char *sql, bt_err *err)
{
    bt_result res = {0};
    memset(err, 0, sizeof *err);
    return drv->exec_text(c, sql, &res, err);
}

static void must(void *c, const char *sql)
{
    bt_err err;
    if (run(c, sql, &err) != 0) {
        printf("FAIL %s: %s\n", sql, err.msg);
        exit(1);
    }
}

static bt_value vi(int64_t i)
{
    bt_value v = {BT_VAL_INT, i, NULL, 0};
    return v;
}

static bt_value vs(const char *s)
{
    bt_value v = {BT_VAL_STR, 0, s, (uint32_t)strlen(s)};
    return v;
}

static bt_value vnull(void)
{
    bt_value v = {BT_VAL_NULL, 0, NULL, 0};
    return v;
}

/* execute() with a capture buffer; returns its rc. */
static int ex(void *c, int32_t key, const char *sql, const bt_value *p, int32_t n, int want,
              bt_result *res, char *buf, bt_err *err)
{
    memset(res, 0, sizeof *res);
    memset(err, 0, sizeof *err);
    res->want = want;
    res->s = buf;
    return drv->execute(c, key, sql, p, n, res, err);
}

static void test_connect_errors(void)
{
    int f = failures;
    bt_conn_config cfg = base;
    bt_err err = {0};
    void *c = NULL;
    /* a missing database fails whatever the authentication method */
    cfg.database = "bt_no_such_database";
    CHECK(drv->connect(&cfg, &c, &err) != 0, "connect to a missing database succeeded");
    CHECK(c == NULL, "conn set on failure");
    CHECK(err.kind == BT_DERR_CONNECT, "kind %d", err.kind);
    CHECK(err.msg[0] != '\0', "no message");
    printf("# missing database: %s\n", err.msg);
    memset(&err, 0, sizeof err);
    cfg = base;
    cfg.host = "127.0.0.1";
    cfg.socket = NULL;
    cfg.port = 1;   /* nothing listens there */
    cfg.connect_timeout_s = 2;
    CHECK(drv->connect(&cfg, &c, &err) != 0, "connect to port 1 succeeded");
    CHECK(err.kind == BT_DERR_CONNECT, "kind %d", err.kind);
    printf("# refused: %s\n", err.msg);
    memset(&err, 0, sizeof err);
    cfg = base;
    cfg.options = is_pg ? "nonsense" : "no-such-option=1";
    CHECK(drv->connect(&cfg, &c, &err) != 0, "bad options accepted");
    CHECK(err.kind == BT_DERR_CONNECT && err.msg[0], "kind %d msg %s", err.kind, err.msg);
    printf("# bad options: %s\n", err.msg);
    memset(&err, 0, sizeof err);
    cfg = base;
    cfg.options = is_pg ? "application_name=bt_drvtest connect_timeout=5"
                        : "read-timeout=60; write_timeout=60;charset=utf8mb4";
    CHECK(drv->connect(&cfg, &c, &err) == 0, "good options refused: %s", err.msg);
    if (c)
        drv->disconnect(c);
    report("connect_errors", f);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* MySQL: a server that does not answer within read-timeout loses the
 * connection instead of wedging the worker, with the driver's blocking reads
 * and with the library's own. */
static void test_read_timeout(void)
{
    int f = failures;
    const char *opts[] = {"read-timeout=1", "read-timeout=1; blocking-reads=0"};
    for (int i = 0; i < 2; i++) {
        bt_conn_config cfg = base;
        bt_err err = {0};
        void *c = NULL;
        cfg.options = opts[i];
        if (drv->connect(&cfg, &c, &err) != 0) {
            CHECK(0, "connect with %s: %s", opts[i], err.msg);
            continue;
        }
        double t0 = now_s();
        CHECK(run(c, "SELECT SLEEP(4)", &err) != 0 && err.kind == BT_DERR_LOST,
              "%s: kind %d %s", opts[i], err.kind, err.msg);
        double dt = now_s() - t0;
        CHECK(dt > 0.9 && dt < 3.5, "%s: timed out after %.2f s", opts[i], dt);
        printf("# %s: lost after %.2f s: %s\n", opts[i], dt, err.msg);
        drv->disconnect(c);
    }
    report("read_timeout", f);
}

static const char *tricky = "it's a \"q\" \\ back; ? -- x";

static void test_statements(int prepare)
{
    int f = failures;
    char name[64], buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    void *c = xconnect(prepare);
    must(c, "DROP TABLE IF EXISTS bt_drvtest");
    must(c, is_pg ? "CREATE TABLE bt_drvtest (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(400))"
                  : "CREATE TABLE bt_drvtest (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(400)) "
                    "ENGINE=InnoDB");
    const char *ins = "INSERT INTO bt_drvtest (id, k, c) VALUES (?, ?, ?)";
    for (int i = 1; i <= 20; i++) {
        char cv[32];
        snprintf(cv, sizeof cv, "row-%d", i);
        bt_value p[3] = {vi(i), vi(i * 10), vs(cv)};
        CHECK(ex(c, 1, ins, p, 3, 0, &res, buf, &err) == 0, "insert %d: %s", i, err.msg);
        CHECK(res.rows == 1, "insert rows %lld", (long long)res.rows);
    }
    bt_value p3[3] = {vi(21), vi(-5), vs(tricky)};
    CHECK(ex(c, 1, ins, p3, 3, 0, &res, buf, &err) == 0, "insert tricky: %s", err.msg);
    bt_value pn[3] = {vi(22), vi(0), vnull()};
    CHECK(ex(c, 1, ins, pn, 3, 0, &res, buf, &err) == 0, "insert null: %s", err.msg);

    const char *selk = "SELECT k FROM bt_drvtest WHERE id = ?";
    for (int i = 1; i <= 20; i++) {
        bt_value p = vi(i);
        CHECK(ex(c, 2, selk, &p, 1, 1, &res, buf, &err) == 0, "select k: %s", err.msg);
        CHECK(res.has_value && res.i == i * 10 && res.rows == 1, "k for %d: %d %lld rows %lld", i,
              res.has_value, (long long)res.i, (long long)res.rows);
    }
    bt_value p21 = vi(21);
    CHECK(ex(c, 2, selk, &p21, 1, 1, &res, buf, &err) == 0 && res.i == -5, "negative int");
    bt_value p99 = vi(99);
    CHECK(ex(c, 2, selk, &p99, 1, 1, &res, buf, &err) == 0 && !res.has_value && res.rows == 0,
          "no row: has %d rows %lld", res.has_value, (long long)res.rows);

    const char *selc = "SELECT c, k, id FROM bt_drvtest WHERE id = ?";
    CHECK(ex(c, 3, selc, &p21, 1, 2, &res, buf, &err) == 0, "select c: %s", err.msg);
    CHECK(res.has_value && res.slen == strlen(tricky) && strcmp(buf, tricky) == 0,
          "string round trip: '%s' (%u)", buf, res.slen);
    bt_value p22 = vi(22);
    CHECK(ex(c, 3, selc, &p22, 1, 2, &res, buf, &err) == 0 && !res.has_value && res.rows == 1,
          "NULL capture: has %d rows %lld", res.has_value, (long long)res.rows);
    /* same key, now captured as int (first column is numeric text) */
    bt_value p5 = vi(5);
    CHECK(ex(c, 3, selc, &p5, 1, 0, &res, buf, &err) == 0 && res.rows == 1, "no capture");
    CHECK(ex(c, 4, "SELECT k, c FROM bt_drvtest WHERE id = ?", &p5, 1, 2, &res, buf, &err) == 0 &&
              strcmp(buf, "50") == 0, "int column as string: '%s'", buf);

    const char *range = "SELECT id, c FROM bt_drvtest WHERE id BETWEEN ? AND ? ORDER BY id";
    bt_value pr[2] = {vi(3), vi(12)};
    CHECK(ex(c, 5, range, pr, 2, 1, &res, buf, &err) == 0, "range: %s", err.msg);
    CHECK(res.rows == 10 && res.has_value && res.i == 3, "range rows %lld first %lld",
          (long long)res.rows, (long long)res.i);
    CHECK(ex(c, 5, range, pr, 2, 0, &res, buf, &err) == 0 && res.rows == 10, "range no capture");

    const char *upd = "UPDATE bt_drvtest SET k = k + ? WHERE id <= ?";
    bt_value pu[2] = {vi(1), vi(4)};
    CHECK(ex(c, 6, upd, pu, 2, 0, &res, buf, &err) == 0 && res.rows == 4, "update rows %lld: %s",
          (long long)res.rows, err.msg);

    /* a string parameter where the type changes between calls */
    const char *upc = "UPDATE bt_drvtest SET c = ? WHERE id = ?";
    bt_value pc1[2] = {vs("changed"), vi(1)};
    bt_value pc2[2] = {vnull(), vi(2)};
    bt_value pc3[2] = {vs("a much longer string than the first one, to regrow its buffer ........"
                          "........................................................................"
                          "........................................................................"
                          "........................................................................"),
                       vi(3)};
    CHECK(ex(c, 7, upc, pc1, 2, 0, &res, buf, &err) == 0 && res.rows == 1, "upc1 %s", err.msg);
    CHECK(ex(c, 7, upc, pc2, 2, 0, &res, buf, &err) == 0 && res.rows == 1, "upc2 %s", err.msg);
    CHECK(ex(c, 7, upc, pc3, 2, 0, &res, buf, &err) == 0 && res.rows == 1, "upc3 %s", err.msg);
    bt_value p3i = vi(3);
    CHECK(ex(c, 3, selc, &p3i, 1, 2, &res, buf, &err) == 0 && strcmp(buf, pc3[0].s) == 0,
          "regrown string: '%s'", buf);

    /* a '?' inside a literal is not a placeholder */
    bt_value px = vs("x");
    CHECK(ex(c, 11, is_pg ? "SELECT ? || '?''?'" : "SELECT CONCAT(?, '?''?')", &px, 1, 2, &res,
             buf, &err) == 0 && strcmp(buf, "x?'?") == 0, "quoted '?': '%s' %s", buf, err.msg);

    /* long string capture is truncated to the register size */
    CHECK(ex(c, 8, is_pg ? "SELECT repeat('a', ?)" : "SELECT REPEAT('a', ?)", &(bt_value){
              BT_VAL_INT, 3000, NULL, 0}, 1, 2, &res, buf, &err) == 0, "repeat: %s", err.msg);
    CHECK(res.slen == BT_SREG_CAP - 1 && strlen(buf) == BT_SREG_CAP - 1, "truncated to %u", res.slen);

    if (!is_pg && prepare) {
        /* results the MySQL wire path walks (driver_mysql_wire.c): a row longer
         * than the read-ahead cache, definitions that come again after DDL,
         * and a CALL's result set followed by its status */
        CHECK(ex(c, 12, "SELECT REPEAT('b', ?)", &(bt_value){BT_VAL_INT, 100000, NULL, 0}, 1, 0, &res, buf,
                 &err) == 0 && res.rows == 1, "long row: rows %lld %s", (long long)res.rows, err.msg);
        const char *all = "SELECT * FROM bt_drvtest WHERE id BETWEEN ? AND ?";
        CHECK(ex(c, 13, all, pr, 2, 0, &res, buf, &err) == 0 && res.rows == 10, "select *: %s", err.msg);
        must(c, "ALTER TABLE bt_drvtest ADD COLUMN extra INT NOT NULL DEFAULT 7");
        CHECK(ex(c, 13, all, pr, 2, 0, &res, buf, &err) == 0 && res.rows == 10,
              "select * after ALTER: rows %lld %s", (long long)res.rows, err.msg);
        must(c, "ALTER TABLE bt_drvtest DROP COLUMN extra");
        must(c, "DROP PROCEDURE IF EXISTS bt_drvproc");
        must(c, "CREATE PROCEDURE bt_drvproc(n INT) SELECT id FROM bt_drvtest WHERE id <= n");
        CHECK(ex(c, 14, "CALL bt_drvproc(?)", &(bt_value){BT_VAL_INT, 3, NULL, 0}, 1, 0, &res, buf, &err) == 0 &&
                  res.rows == 3, "CALL: rows %lld %s", (long long)res.rows, err.msg);
        CHECK(ex(c, 2, selk, &p5, 1, 1, &res, buf, &err) == 0 && res.i == 50, "usable after CALL: %s", err.msg);
        must(c, "DROP PROCEDURE bt_drvproc");
    }

    /* exec_text: capture and row counts */
    memset(&res, 0, sizeof res);
    res.want = 2;
    res.s = buf;
    CHECK(drv->exec_text(c, "SELECT 'x1' UNION ALL SELECT 'x2' UNION ALL SELECT 'x3'", &res,
                         &err) == 0 && res.rows == 3 && strcmp(buf, "x1") == 0,
          "exec_text capture rows %lld '%s'", (long long)res.rows, buf);
    CHECK(drv->exec_text(c, "DELETE FROM bt_drvtest WHERE id > 20", NULL, &err) == 0,
          "exec_text NULL res: %s", err.msg);

    /* errors */
    bt_value one = vi(1);
    CHECK(ex(c, 9, "SELEKT 1 FROM bt_drvtest WHERE id = ?", &one, 1, 0, &res, buf, &err) != 0,
          "syntax error accepted");
    CHECK(err.kind == BT_DERR_SQL && err.errk == BT_ERRK_FATAL &&
              err.code == (is_pg ? bt_sqlstate_code("42601") : 1064) && err.msg[0],
          "syntax error: kind %d errk %d code %d '%s'", err.kind, err.errk, (int)err.code, err.msg);
    printf("# syntax error: [%s] %s\n", err.sqlstate, err.msg);
    bt_value dup[3] = {vi(1), vi(1), vs("dup")};
    /* PostgreSQL retries unique violations, as sysbench does (see driver_pg.c) */
    CHECK(ex(c, 1, ins, dup, 3, 0, &res, buf, &err) != 0 &&
              err.kind == (is_pg ? BT_DERR_RETRY : BT_DERR_SQL) &&
              err.code == (is_pg ? bt_sqlstate_code("23505") : 1062),
          "duplicate key: kind %d code %d", err.kind, (int)err.code);
    CHECK(ex(c, 2, selk, NULL, 0, 1, &res, buf, &err) != 0 && err.kind == BT_DERR_SQL,
          "parameter count mismatch accepted");
    CHECK(ex(c, 2, selk, &one, 1, 1, &res, buf, &err) == 0 && res.i == 11,
          "connection usable after errors: %s", err.msg);

    /* many executions of one key stay correct */
    for (int n = 0; n < 500; n++) {
        bt_value p = vi(5 + n % 10);
        if (ex(c, 2, selk, &p, 1, 1, &res, buf, &err) != 0 || res.i != (5 + n % 10) * 10) {
            CHECK(0, "repeat %d: %s %lld", n, err.msg, (long long)res.i);
            break;
        }
    }
    drv->disconnect(c);
    snprintf(name, sizeof name, "statements_%s", prepare ? "prepared" : "text");
    report(name, f);
}

static void test_lock_timeout(void)
{
    int f = failures;
    char buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    void *a = xconnect(1), *b = xconnect(1);
    must(a, "BEGIN");
    must(a, "UPDATE bt_drvtest SET k = k WHERE id = 1");
    must(b, is_pg ? "SET lock_timeout = '200ms'" : "SET SESSION innodb_lock_wait_timeout = 1");
    must(b, "BEGIN");
    bt_value one = vi(1);
    CHECK(ex(b, 1, "UPDATE bt_drvtest SET k = k + 1 WHERE id = ?", &one, 1, 0, &res, buf, &err) != 0,
          "no lock timeout");
    CHECK(err.kind == BT_DERR_RETRY && err.errk == BT_ERRK_LOCK_TIMEOUT,
          "lock timeout: kind %d errk %d code %d %s", err.kind, err.errk, (int)err.code, err.msg);
    must(b, "ROLLBACK");
    must(a, "ROLLBACK");
    drv->disconnect(a);
    drv->disconnect(b);
    report("lock_timeout", f);
}

typedef struct {
    void *c;
    int rc;
    bt_err err;
} bt_dl_arg;

static void *deadlock_side(void *p)
{
    bt_dl_arg *a = p;
    char buf[BT_SREG_CAP];
    bt_result res;
    bt_value two = vi(2);
    a->rc = ex(a->c, 1, "UPDATE bt_drvtest SET k = k + 1 WHERE id = ?", &two, 1, 0, &res, buf,
               &a->err);
    return NULL;
}

static void test_deadlock(void)
{
    int f = failures;
    char buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    bt_dl_arg a = {xconnect(1), 0, {0}};
    void *b = xconnect(1);
    pthread_t t;
    must(a.c, "BEGIN");
    must(a.c, "UPDATE bt_drvtest SET k = k + 1 WHERE id = 1");
    must(b, "BEGIN");
    must(b, "UPDATE bt_drvtest SET k = k + 1 WHERE id = 2");
    if (pthread_create(&t, NULL, deadlock_side, &a) != 0) {
        printf("FAIL deadlock: pthread_create\n");
        exit(1);
    }
    nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);   /* let `a` block on row 2 */
    bt_value one = vi(1);
    int rb = ex(b, 1, "UPDATE bt_drvtest SET k = k + 1 WHERE id = ?", &one, 1, 0, &res, buf, &err);
    if (rb == 0)
        must(b, "ROLLBACK");   /* releases row 2 so `a` can finish */
    pthread_join(t, NULL);
    const bt_err *lost = rb != 0 ? &err : &a.err;
    CHECK((rb != 0) != (a.rc != 0), "exactly one side fails: %d %d", rb, a.rc);
    CHECK(lost->kind == BT_DERR_RETRY && lost->errk == BT_ERRK_DEADLOCK &&
              lost->code == (is_pg ? bt_sqlstate_code("40P01") : 1213),
          "deadlock: kind %d errk %d code %d %s", lost->kind, lost->errk, (int)lost->code,
          lost->msg);
    must(a.c, "ROLLBACK");
    if (rb != 0)
        must(b, "ROLLBACK");
    drv->disconnect(a.c);
    drv->disconnect(b);
    report("deadlock", f);
}

static void test_lost_connection(int prepare)
{
    int f = failures;
    char buf[BT_SREG_CAP], sql[96], name[64];
    bt_result res;
    bt_err err;
    void *victim = xconnect(prepare), *killer = xconnect(1);
    bt_value one = vi(1);
    const char *sel = "SELECT k FROM bt_drvtest WHERE id = ?";
    CHECK(ex(victim, 2, sel, &one, 1, 1, &res, buf, &err) == 0, "before kill: %s", err.msg);
    CHECK(ex(victim, 10, is_pg ? "SELECT pg_backend_pid()" : "SELECT CONNECTION_ID()", NULL, 0, 1,
             &res, buf, &err) == 0 && res.has_value, "own id: %s", err.msg);
    snprintf(sql, sizeof sql, is_pg ? "SELECT pg_terminate_backend(%lld)" : "KILL %lld",
             (long long)res.i);
    must(killer, sql);
    nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
    CHECK(ex(victim, 2, sel, &one, 1, 1, &res, buf, &err) != 0, "statement on a killed connection");
    CHECK(err.kind == BT_DERR_LOST && err.errk == BT_ERRK_LOST_CONNECTION,
          "lost: kind %d errk %d code %d %s", err.kind, err.errk, (int)err.code, err.msg);
    printf("# lost: [%s] %d %s\n", err.sqlstate, (int)err.code, err.msg);
    drv->disconnect(victim);
    victim = xconnect(prepare);
    CHECK(ex(victim, 2, sel, &one, 1, 1, &res, buf, &err) == 0, "after reconnect: %s", err.msg);
    drv->disconnect(victim);
    drv->disconnect(killer);
    snprintf(name, sizeof name, "lost_connection_%s", prepare ? "prepared" : "text");
    report(name, f);
}

/* Through PgBouncer (transaction pooling), A prepares a named statement on
 * the pooler's only idle server connection; B then holds that server in a
 * transaction, so A's next execute lands on another server where the name is
 * unknown.  The driver must switch to unnamed statements and carry on. */
static void test_pgbouncer_fallback(void)
{
    int f = failures;
    char buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    void *a = xconnect(1), *b = xconnect(1);
    const char *sel = "SELECT ?::int + 1";
    for (int round = 0; round < 3; round++) {
        bt_value v = vi(round);
        CHECK(ex(a, 1, sel, &v, 1, 1, &res, buf, &err) == 0 && res.i == round + 1,
              "A round %d: %s", round, err.msg);
        must(b, "BEGIN");
        CHECK(ex(b, 2, "SELECT ?::int * 2", &v, 1, 1, &res, buf, &err) == 0 && res.i == 2 * round,
              "B in txn round %d: %s", round, err.msg);
        CHECK(ex(a, 1, sel, &v, 1, 1, &res, buf, &err) == 0 && res.i == round + 1,
              "A while B holds a server, round %d: kind %d %s", round, err.kind, err.msg);
        must(b, "COMMIT");
    }
    /* transactions on both connections keep working */
    for (int n = 0; n < 50; n++) {
        void *c = n % 2 ? a : b;
        bt_value v = vi(n);
        must(c, "BEGIN");
        int rc = ex(c, 3 + n % 3, "SELECT ?::int", &v, 1, 1, &res, buf, &err);
        if (rc != 0 && err.kind == BT_DERR_RETRY) {
            must(c, "ROLLBACK");
            must(c, "BEGIN");
            rc = ex(c, 3 + n % 3, "SELECT ?::int", &v, 1, 1, &res, buf, &err);
        }
        CHECK(rc == 0 && res.i == n, "txn %d: %s", n, err.msg);
        must(c, "COMMIT");
    }
    drv->disconnect(a);
    drv->disconnect(b);
    report("pgbouncer_fallback", f);
}

/* Run while the server's max_prepared_stmt_count is 0: every prepare fails
 * with 1461 and the driver must run the statements as text instead. */
static void test_max_prepared(void)
{
    int f = failures;
    char buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    void *c = xconnect(1);
    for (int i = 0; i < 3; i++) {
        bt_value n = vi(41 + i);
        CHECK(ex(c, 1, "SELECT ? + 1", &n, 1, 1, &res, buf, &err) == 0 && res.i == 42 + i,
              "int statement: %lld %s", (long long)res.i, err.msg);
        bt_value sv = vs("it's");
        CHECK(ex(c, 2, "SELECT CONCAT(?, 'x')", &sv, 1, 2, &res, buf, &err) == 0 &&
                  strcmp(buf, "it'sx") == 0, "string statement: '%s' %s", buf, err.msg);
    }
    drv->disconnect(c);
    report("max_prepared_fallback", f);
}

/* PostgreSQL pipeline mode: statements of a transaction are queued until a
 * result is needed or the transaction ends, errors surface there. */
static void test_pipeline(void)
{
    int f = failures;
    char buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    bt_conn_config cfg = base;
    cfg.pipeline = 1;
    void *c = NULL;
    if (drv->connect(&cfg, &c, &err) != 0) {
        printf("FAIL pipeline connect: %s\n", err.msg);
        exit(1);
    }
    const char *ins = "INSERT INTO bt_drvtest (id, k, c) VALUES (?, ?, ?)";
    const char *cnt = "SELECT count(*) FROM bt_drvtest WHERE id > ?";
    bt_value hundred = vi(100);
    must(c, "DELETE FROM bt_drvtest WHERE id > 100");
    CHECK(ex(c, 20, "BEGIN", NULL, 0, 0, &res, buf, &err) == 0, "begin: %s", err.msg);
    for (int i = 101; i <= 105; i++) {
        bt_value p[3] = {vi(i), vi(i), vs("piped")};
        CHECK(ex(c, 21, ins, p, 3, 0, &res, buf, &err) == 0, "queued insert: %s", err.msg);
    }
    CHECK(ex(c, 22, cnt, &hundred, 1, 1, &res, buf, &err) == 0 && res.has_value && res.i == 5,
          "count inside the transaction: %lld %s", (long long)res.i, err.msg);
    CHECK(ex(c, 23, "UPDATE bt_drvtest SET k = k + 1 WHERE id > ?", &hundred, 1, 0, &res, buf,
             &err) == 0, "queued update: %s", err.msg);
    CHECK(ex(c, 24, "COMMIT", NULL, 0, 0, &res, buf, &err) == 0, "commit: %s", err.msg);
    CHECK(ex(c, 25, "SELECT sum(k) FROM bt_drvtest WHERE id > ?", &hundred, 1, 1, &res, buf,
             &err) == 0 && res.i == 101 + 102 + 103 + 104 + 105 + 5,
          "after commit: %lld %s", (long long)res.i, err.msg);

    /* an error in a queued statement is reported when the queue is flushed */
    CHECK(ex(c, 20, "BEGIN", NULL, 0, 0, &res, buf, &err) == 0, "begin 2: %s", err.msg);
    bt_value dup[3] = {vi(101), vi(0), vs("dup")};
    bt_value ok[3] = {vi(106), vi(0), vs("lost")};
    CHECK(ex(c, 21, ins, dup, 3, 0, &res, buf, &err) == 0, "queued duplicate");
    CHECK(ex(c, 21, ins, ok, 3, 0, &res, buf, &err) == 0, "queued after duplicate");
    CHECK(ex(c, 24, "COMMIT", NULL, 0, 0, &res, buf, &err) != 0 && err.kind == BT_DERR_RETRY &&
              err.code == bt_sqlstate_code("23505"),
          "duplicate surfaces at commit: kind %d code %d %s", err.kind, (int)err.code, err.msg);
    CHECK(run(c, "ROLLBACK", &err) == 0, "rollback after error: %s", err.msg);

    /* exec_text ROLLBACK drops queued work */
    CHECK(ex(c, 20, "BEGIN", NULL, 0, 0, &res, buf, &err) == 0, "begin 3: %s", err.msg);
    CHECK(ex(c, 21, ins, ok, 3, 0, &res, buf, &err) == 0, "queued insert 3");
    CHECK(run(c, "ROLLBACK", &err) == 0, "rollback with queue: %s", err.msg);
    CHECK(ex(c, 22, cnt, &hundred, 1, 1, &res, buf, &err) == 0 && res.i == 5,
          "rolled back work is gone: %lld %s", (long long)res.i, err.msg);

    /* a statement error on a first use (its Parse fails inside the pipeline) */
    CHECK(ex(c, 20, "BEGIN", NULL, 0, 0, &res, buf, &err) == 0, "begin 4: %s", err.msg);
    CHECK(ex(c, 26, "SELEKT ?", &hundred, 1, 0, &res, buf, &err) == 0, "queued bad statement");
    CHECK(ex(c, 24, "COMMIT", NULL, 0, 0, &res, buf, &err) != 0 &&
              err.code == bt_sqlstate_code("42601"), "syntax error at commit: %s", err.msg);
    CHECK(run(c, "ROLLBACK", &err) == 0, "rollback 4: %s", err.msg);
    CHECK(ex(c, 22, cnt, &hundred, 1, 1, &res, buf, &err) == 0 && res.i == 5,
          "usable afterwards: %s", err.msg);
    drv->disconnect(c);
    report("pipeline", f);
}


/* mode "point": N point selects; "txn": N transactions of BEGIN, 10 point
 * selects and COMMIT (with base.pipeline: one round trip each). */
static int bench(long n, const char *table, int txn)
{
    char sql[128], buf[BT_SREG_CAP];
    bt_result res;
    bt_err err;
    void *c = NULL;
    if (drv->connect(&base, &c, &err) != 0) {
        printf("FAIL bench connect: %s\n", err.msg);
        return 1;
    }
    snprintf(sql, sizeof sql, "SELECT c FROM %s WHERE id = ?", table);
    uint64_t x = 88172645463325252ULL;
    int per = txn ? 10 : 1;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (txn && ex(c, 2, "BEGIN", NULL, 0, 0, &res, buf, &err) != 0)
            goto fail;
        for (int q = 0; q < per; q++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bt_value p = vi((int64_t)(x % 10000) + 1);
            if (ex(c, 1, sql, &p, 1, txn ? 0 : 2, &res, buf, &err) != 0 ||
                (!txn && !res.has_value))
                goto fail;
        }
        if (txn && ex(c, 3, "COMMIT", NULL, 0, 0, &res, buf, &err) != 0)
            goto fail;
    }
    double dt = now_s() - t0;
    printf("bench %ld %s in %.3f s: %.0f/s\n", n, txn ? "transactions" : "point selects", dt,
           (double)n / dt);
    drv->disconnect(c);
    return 0;
fail:
    printf("FAIL bench: %s\n", err.msg);
    drv->disconnect(c);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s mysql|mysql-maxps|pgsql|pgbouncer HOST PORT USER PASSWORD DB "
                        "[bench N TABLE [point|text|txn|pipeline]]\n", argv[0]);
        return 2;
    }
    const char *kind = argv[1];
    is_pg = strncmp(kind, "pg", 2) == 0;
#ifdef BT_HAVE_MYSQL
    if (!is_pg)
        drv = &bt_driver_mysql;
#endif
#ifdef BT_HAVE_PGSQL
    if (is_pg)
        drv = &bt_driver_pgsql;
#endif
    if (!drv) {
        fprintf(stderr, "driver %s not built in\n", kind);
        return 2;
    }
    base.driver = is_pg ? BT_DRIVER_PGSQL : BT_DRIVER_MYSQL;
    base.host = argv[2];
    base.port = atoi(argv[3]);
    base.user = argv[4];
    base.password = argv[5];
    base.database = argv[6];
    base.socket = getenv("BT_TEST_SOCKET");   /* Unix socket instead of TCP */
    base.ssl = getenv("BT_TEST_SSL") ? atoi(getenv("BT_TEST_SSL")) : 0;
    base.options = getenv("BT_TEST_OPTIONS");
    base.prepare = 1;
    base.connect_timeout_s = 10;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 10 && strcmp(argv[7], "bench") == 0) {
        const char *mode = argc >= 11 ? argv[10] : "point";
        base.prepare = strcmp(mode, "text") != 0;
        base.pipeline = strcmp(mode, "pipeline") == 0;
        int rc = bench(atol(argv[8]), argv[9], strcmp(mode, "txn") == 0 || base.pipeline);
        if (drv->thread_end)
            drv->thread_end();
        return rc;
    }
    if (strcmp(kind, "pgbouncer") == 0) {
        test_pgbouncer_fallback();
    } else if (strcmp(kind, "mysql-maxps") == 0) {
        test_max_prepared();
    } else {
        test_connect_errors();
        test_statements(1);
        test_statements(0);
        test_lock_timeout();
        test_deadlock();
        test_lost_connection(1);
        test_lost_connection(0);
        if (is_pg)
            test_pipeline();
        else
            test_read_timeout();
        void *c = xconnect(1);
        must(c, "DROP TABLE bt_drvtest");
        drv->disconnect(c);
    }
    if (drv->thread_end)
        drv->thread_end();
    printf(failures ? "FAILED %d\n" : "PASSED\n", failures);
    return failures ? 1 : 0;
}
