/* test_stop.c: the engine's stop path against a real MySQL server that the
 * caller freezes (SIGSTOP) and thaws (SIGCONT), for AddressSanitizer and
 * ThreadSanitizer builds (tests/native/test_stop_path.py drives it).
 *
 *   test_stop HOST PORT USER PASSWORD DB
 *
 * Speaks a line protocol on stdin/stdout: prints "running" once workers are
 * in transactions and waits for a line (the server is then frozen); checks
 * that stop + abort_io ends the workers and frees the engine once; starts a
 * second engine whose workers block inside connect, frees it (they are
 * detached), prints "detached" and waits for a line (the server is then
 * thawed): the last detached worker frees that engine.  Prints "ok <check>"
 * per passing check, "FAIL ..." otherwise, and "PASSED" last; exits 0 only
 * when everything passed.
 */
#include "test_support.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: test_stop HOST PORT USER PASSWORD DB\n");
        return 2;
    }
    bt_program prog;
    bt_config cfg;
    select_one_setup(&cfg, &prog, BT_DRIVER_MYSQL, argv);
    cfg.threads = 4;

    /* 1. workers blocked in a read: stop, abort, join, free once */
    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK && e, "engine_new", "no engine");
    if (!e)
        return 1;
    CHECK(bt_engine_start(e) == BT_OK, "start", "start failed");
    bt_snapshot snap;
    for (int i = 0; i < 200; i++) {
        bt_engine_snapshot(e, &snap, NULL, NULL);
        if (snap.connects == 4 && snap.transactions > 100)
            break;
        sleep_ms(10);
    }
    CHECK(snap.connects == 4 && snap.transactions > 100, "all_connected_before_freeze", "%llu connects",
          (unsigned long long)snap.connects);
    printf("running\n");
    fflush(stdout);
    wait_line();
    sleep_ms(300); /* every worker is now inside a read that will not return */
    bt_engine_stop(e);
    bt_engine_snapshot(e, &snap, NULL, NULL);
    CHECK(snap.in_flight == 4, "in_flight_at_stop", "%d", snap.in_flight);
    double t_stop = snap.t;
    CHECK(bt_engine_join_timeout(e, 300) == 4, "still_blocked_after_grace", "workers exited by themselves");
    CHECK(bt_engine_abort_io(e) == 4, "abort_io_shuts_every_socket", "fewer sockets");
    double t0 = now_s();
    CHECK(bt_engine_join_timeout(e, 2000) == 0, "joined_after_abort", "workers still blocked");
    CHECK(now_s() - t0 < 1.0, "abort_unblocks_at_once", "%.2f s", now_s() - t0);
    CHECK(bt_engine_join_timeout(e, 0) == 0, "join_again_is_harmless", "second join");
    sleep_ms(200);
    bt_engine_snapshot(e, &snap, NULL, NULL);
    CHECK(snap.state == BT_STATE_STOPPED, "stopped", "state %d", snap.state);
    CHECK(snap.t == t_stop, "time_ends_at_the_stop_request", "%.3f != %.3f", snap.t, t_stop);
    CHECK(snap.unfinished == 4 && snap.in_flight == 0, "cut_short_transactions_are_unfinished", "%llu, %d",
          (unsigned long long)snap.unfinished, snap.in_flight);
    CHECK(snap.errors[BT_ERRK_LOST_CONNECTION] == 0, "own_shutdown_is_no_outage", "%llu",
          (unsigned long long)snap.errors[BT_ERRK_LOST_CONNECTION]);
    CHECK(bt_engine_free(e) == 0, "freed_with_nothing_left", "workers abandoned");

    /* 2. workers blocked inside connect (no socket to shut yet): free detaches
     * them and the last one frees the engine once the server answers */
    CHECK(bt_engine_new(&cfg, &e) == BT_OK && e, "engine_new_frozen", "no engine");
    if (!e)
        return 1;
    bt_engine_start(e);
    sleep_ms(300);
    t0 = now_s();
    int32_t left = bt_engine_free(e);
    CHECK(left == 4, "free_detaches_workers_stuck_in_connect", "%d", left);
    CHECK(now_s() - t0 < 3.5, "free_is_bounded", "%.2f s", now_s() - t0);
    printf("detached\n");
    fflush(stdout);
    wait_line();
    sleep_ms(2000); /* they connect, see the abort, disconnect; the last frees */

    printf(failures ? "FAILED\n" : "PASSED\n");
    return failures ? 1 : 0;
}
