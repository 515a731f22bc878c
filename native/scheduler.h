/* scheduler.h: a thread group's open-loop arrival schedule (scheduler.c).
 * Internal to the engine; not seen by cffi. */
#ifndef BT_SCHEDULER_H
#define BT_SCHEDULER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "benchtop_api.h"
#include "rand.h"

typedef struct {
    pthread_mutex_t mu;
    _Atomic int open_loop;  /* read without the lock: closed loop never takes it */
    double rate;            /* tickets per second; 0 = closed loop */
    int32_t arrival;        /* BT_ARRIVAL_* */
    uint64_t next_ns;       /* intended start of the next untaken ticket */
    uint64_t taken;
    uint64_t last_ns;       /* queue integral is accounted up to here */
    double queue_ns;        /* integral of queue length (tickets x ns) */
    int held;               /* paused, or not started: no tickets arrive, the queue does not grow */
    bt_rng rng;
} bt_sched;

enum { BT_TAKE_CLOSED = 0, BT_TAKE_TICKET = 1 };

void bt_sched_init(bt_sched *s, double rate, int32_t arrival, uint64_t seed);
void bt_sched_destroy(bt_sched *s);
void bt_sched_set_rate(bt_sched *s, double rate, int32_t arrival, uint64_t now);
void bt_sched_start(bt_sched *s, uint64_t now);    /* the run starts: the first ticket and the queue at `now` */
void bt_sched_hold(bt_sched *s, uint64_t now);     /* a pause: arrivals stop */
void bt_sched_resume(bt_sched *s, uint64_t now);   /* after a pause: no backlog from it */
int bt_sched_take(bt_sched *s, uint64_t now, uint64_t *intended);
void bt_sched_read(bt_sched *s, uint64_t now, double *queue_ns, uint64_t *due, double *rate);

#endif
