/* test_support.h: what the line-protocol tests against a real server share
 * (test_stop.c, test_loops.c): CHECK lines ("ok <check>" or "FAIL ..."), a
 * sleep, a clock, waiting for the driving test's next line on stdin, and a
 * one-statement program (SELECT 1) connected to HOST PORT USER PASSWORD DB.
 *
 * Functions are static inline so a test that leaves one out still builds
 * under -Wall -Werror. */
#ifndef BT_TEST_SUPPORT_H
#define BT_TEST_SUPPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../benchtop_api.h"

static int failures;

#define CHECK(cond, name, ...)                                   \
    do {                                                         \
        if (cond) {                                              \
            printf("ok %s\n", name);                             \
        } else {                                                 \
            failures++;                                          \
            printf("FAIL %s (%s): ", name, #cond);               \
            printf(__VA_ARGS__);                                 \
            printf("\n");                                        \
        }                                                        \
        fflush(stdout);                                          \
    } while (0)

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void wait_line(void)
{
    char line[64];
    if (!fgets(line, sizeof line, stdin)) {
        printf("FAIL stdin closed\n");
        exit(2);
    }
}

/* `prog` runs SELECT 1 as its one transaction; `cfg` connects with `driver`
 * to argv[1..5] (HOST PORT USER PASSWORD DB) and runs `prog`.  The caller
 * sets the rest (threads, loops, prepare). */
static inline void select_one_setup(bt_config *cfg, bt_program *prog, int32_t driver, char **argv)
{
    static const bt_op ops[] = {{BT_OP_EXEC, -1, 0, 0, 0, BT_QK_READ, 0}};
    static const bt_stmt stmts[] = {{"SELECT 1", -1, 0, BT_QK_READ, 0}};
    static const bt_txn_type types[] = {{"select", 1, 0, 1}};
    memset(prog, 0, sizeof *prog);
    prog->ops = ops;
    prog->nops = 1;
    prog->stmts = stmts;
    prog->nstmts = 1;
    prog->txn_types = types;
    prog->ntxn_types = 1;
    memset(cfg, 0, sizeof *cfg);
    cfg->conn.driver = driver;
    cfg->conn.host = argv[1];
    cfg->conn.port = atoi(argv[2]);
    cfg->conn.user = argv[3];
    cfg->conn.password = argv[4];
    cfg->conn.database = argv[5];
    cfg->program = prog;
}

#endif
