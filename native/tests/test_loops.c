/* test_loops.c: event-loop workers (loop_threads > 0) against a real
 * PostgreSQL server that the caller freezes (SIGSTOP) and thaws (SIGCONT),
 * for an AddressSanitizer + UBSan build (tests/native/test_loop_path.py
 * drives it).
 *
 *   test_loops HOST PORT USER PASSWORD DB
 *
 * 40 connections on 2 loops, cut to 8 and grown to 60 while running; prints
 * "running" and waits for a line (the server is then frozen); stop + abort_io
 * end every connection of both loops at once and free the engine; a second
 * engine whose connections are inside connect on the frozen server is freed
 * within the bound with nothing left behind (an event loop's connect waits
 * are aborted, no thread is detached); prints "done" and waits for a line
 * (the server thawed).  "ok <check>" per passing check, "FAIL ..." otherwise,
 * "PASSED" last; exits 0 only when everything passed.
 */
#include "test_support.h"

/* Waits up to 20 s for `running` connections running and connected, with
 * transactions past `txns`. */
static int settle(bt_engine *e, int32_t running, uint64_t txns, bt_snapshot *snap)
{
    for (int i = 0; i < 2000; i++) {
        bt_engine_snapshot(e, snap, NULL, NULL);
        if (snap->threads_running == running && snap->connected == running && snap->transactions > txns)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: test_loops HOST PORT USER PASSWORD DB\n");
        return 2;
    }
    bt_program prog;
    bt_config cfg;
    select_one_setup(&cfg, &prog, BT_DRIVER_PGSQL, argv);
    cfg.conn.prepare = 1;
    cfg.threads = 40;
    cfg.loop_threads = 2;

    bt_engine *e = NULL;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK && e, "engine_new", "no engine");
    if (!e)
        return 1;
    CHECK(bt_engine_start(e) == BT_OK, "start", "start failed");
    bt_snapshot snap;
    CHECK(settle(e, 40, 400, &snap), "forty_connections_on_two_loops", "%d running, %d connected",
          snap.threads_running, snap.connected);
    for (int i = 0; i < 1000 && snap.connections_served < 40; i++) {
        sleep_ms(10);  /* the last to connect may not have finished a transaction yet */
        bt_engine_snapshot(e, &snap, NULL, NULL);
    }
    CHECK(snap.loops_running == 2 && snap.connections_served == 40, "two_loops_all_served", "%d loops, %d served",
          snap.loops_running, snap.connections_served);
    bt_engine_set_threads(e, 8);
    CHECK(settle(e, 8, snap.transactions, &snap), "cut_to_eight", "%d running", snap.threads_running);
    bt_engine_set_threads(e, 60);
    CHECK(settle(e, 60, snap.transactions + 600, &snap), "grown_to_sixty", "%d running", snap.threads_running);
    for (int i = 0; i < 500 && snap.connections_served < 60; i++) {
        sleep_ms(10);
        bt_engine_snapshot(e, &snap, NULL, NULL);
    }
    CHECK(snap.connections_served == 60 && snap.errors[BT_ERRK_LOST_CONNECTION] == 0, "sixty_served",
          "%d served", snap.connections_served);
    printf("running\n");
    fflush(stdout);
    wait_line();
    sleep_ms(300); /* every connection now waits for a reply that will not come */
    bt_engine_stop(e);
    bt_engine_snapshot(e, &snap, NULL, NULL);
    CHECK(snap.in_flight == 60, "in_flight_at_stop", "%d", snap.in_flight);
    double t_stop = snap.t;
    CHECK(bt_engine_join_timeout(e, 300) == 2, "loops_still_blocked_after_grace", "loops exited by themselves");
    CHECK(bt_engine_abort_io(e) == 60, "abort_io_shuts_every_socket", "fewer sockets");
    double t0 = now_s();
    CHECK(bt_engine_join_timeout(e, 2000) == 0, "joined_after_abort", "loops still blocked");
    CHECK(now_s() - t0 < 1.0, "abort_unblocks_at_once", "%.2f s", now_s() - t0);
    bt_engine_snapshot(e, &snap, NULL, NULL);
    CHECK(snap.state == BT_STATE_STOPPED, "stopped", "state %d", snap.state);
    CHECK(snap.t == t_stop, "time_ends_at_the_stop_request", "%.3f != %.3f", snap.t, t_stop);
    CHECK(snap.unfinished == 60 && snap.in_flight == 0, "cut_short_transactions_are_unfinished", "%llu, %d",
          (unsigned long long)snap.unfinished, snap.in_flight);
    CHECK(snap.errors[BT_ERRK_LOST_CONNECTION] == 0, "own_shutdown_is_no_outage", "%llu",
          (unsigned long long)snap.errors[BT_ERRK_LOST_CONNECTION]);
    CHECK(bt_engine_free(e) == 0, "freed_with_nothing_left", "loops abandoned");

    /* connections inside connect on the frozen server: the abort ends their
     * waits too, so free leaves nothing behind */
    cfg.threads = 20;
    CHECK(bt_engine_new(&cfg, &e) == BT_OK && e, "engine_new_frozen", "no engine");
    if (!e)
        return 1;
    bt_engine_start(e);
    sleep_ms(300);
    t0 = now_s();
    int32_t left = bt_engine_free(e);
    CHECK(left == 0, "free_ends_loops_stuck_in_connect", "%d", left);
    CHECK(now_s() - t0 < 3.5, "free_is_bounded", "%.2f s", now_s() - t0);
    printf("done\n");
    fflush(stdout);
    wait_line();

    printf(failures ? "FAILED\n" : "PASSED\n");
    return failures ? 1 : 0;
}
