/* evloop.h: event-loop workers' fibers (--connections N --threads J).
 *
 * An event-loop worker thread runs many connections, each a fiber: its own
 * small stack on which the same code as a thread-per-connection worker runs
 * (the workload interpreter, the driver, the client library).  Where that
 * code would block (a reply not there yet, a write that does not fit, a
 * sleep until an open-loop ticket is due), it calls bt_io_wait or
 * bt_io_sleep_until: on a plain thread those block in poll() or
 * clock_nanosleep as before; on a fiber they register the socket with the
 * loop's epoll (or a timer) and switch back to the loop, which resumes the
 * fiber when the socket is ready or the deadline passes.  Fibers never move
 * between threads, so a loop's counters and histograms keep one writer.
 */
#ifndef BT_EVLOOP_H
#define BT_EVLOOP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bt_loop bt_loop;

typedef struct bt_fiber {
    /* what the loop and a switch read for every reply, first: one cache line
     * (fibers by the thousand, each cold by the time its socket is ready) */
    void *sp;                /* saved stack pointer while switched out */
    bt_loop *loop;
    struct bt_fiber *next;   /* ready queue */
    uint64_t deadline;       /* 0: none */
    int state;               /* BT_FIBER_* */
    int wait_fd;             /* what it waits for (state WAITING) */
    uint32_t wait_ev;        /* EPOLLIN / EPOLLOUT */
    int32_t heap_idx;        /* in the loop's timer heap, or -1 */
    uint32_t revents;        /* what woke it; 0: the deadline */
    int reg_fd;              /* registered with epoll (-1: none) */
    uint32_t reg_ev;         /* the events armed for it */
    void *asan_fake;         /* ASan's fake stack while switched out */
    void *stack;             /* mmap'd, a guard page below */
    size_t stack_size;
    void (*fn)(void *);
    void *arg;
    void *ctx;               /* ucontext where there is no assembly switch */
    void *tsan;              /* ThreadSanitizer's handle of it (TSan builds) */
    int parked;              /* waits in bt_io_park */
} bt_fiber;

enum { BT_FIBER_FREE = 0, BT_FIBER_READY = 1, BT_FIBER_WAITING = 2, BT_FIBER_DONE = 3 };

bt_loop *bt_loop_new(void);
void bt_loop_free(bt_loop *l);
/* Starts fn(arg) on f (which the caller owns and keeps until it is DONE). */
int bt_loop_spawn(bt_loop *l, bt_fiber *f, void (*fn)(void *), void *arg);
/* Runs every ready fiber, then waits up to max_wait_ms for sockets and
 * timers.  Returns the number of fibers not yet DONE. */
int bt_loop_run_once(bt_loop *l, int max_wait_ms);
/* How many fibers have ended so far (the loop thread's). */
uint64_t bt_loop_finished(const bt_loop *l);
/* From any thread: every wait of this loop returns -1 from now on (the stop
 * path's abort; sticky). */
void bt_loop_abort(bt_loop *l);
/* The loop thread: every parked fiber (bt_io_park) is ready again. */
void bt_loop_unpark(bt_loop *l);
/* Frees a DONE fiber's stack (the loop thread, after it is DONE). */
void bt_fiber_release(bt_fiber *f);

/* The running fiber, NULL on a plain thread. */
bt_fiber *bt_fiber_self(void);

/* Waits until fd is readable (events & 1) or writable (events & 4: POLLIN /
 * POLLOUT values) or timeout_ms passes (< 0: no limit).  Returns the poll
 * revents (> 0), 0 on timeout, -1 when aborted or on error.  `rearm`: the fd
 * may be a new socket under an old number (inside a connect), so the fiber's
 * registration is not trusted. */
int bt_io_wait(int fd, int events, int64_t timeout_ms, int rearm);
/* Sleeps until the CLOCK_MONOTONIC time `ns`; returns early (-1) when aborted. */
int bt_io_sleep_until(uint64_t ns);
/* Waits with no socket and no deadline until bt_loop_unpark (or the abort:
 * -1).  Only on a fiber (-1 on a plain thread). */
int bt_io_park(void);
/* Before the running fiber's connection closes socket fd (its current one):
 * forget its epoll registration, whose number may be reused at once. */
void bt_io_forget(int fd);
/* CLOCK_MONOTONIC in ns (the loop's clock). */
uint64_t bt_evloop_now_ns(void);
/* The running loop was aborted (waits return at once). */
int bt_io_aborted(void);

#endif
