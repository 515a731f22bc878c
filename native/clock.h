/* clock.h: the engine's clock (monotonic nanoseconds) and the period its
 * waits share.  Internal to the engine; not seen by cffi. */
#ifndef BT_CLOCK_H
#define BT_CLOCK_H

#include <stdint.h>
#include <time.h>

#define BT_NS_PER_S 1000000000ULL
/* how often a paused or waiting worker rechecks stop; the scheduler starts
 * arrivals one such period after a pause, when the workers are awake */
#define BT_IDLE_POLL_MS 20

static inline uint64_t bt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * BT_NS_PER_S + (uint64_t)ts.tv_nsec;
}

#endif
