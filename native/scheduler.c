/* scheduler.c: the open-loop arrival schedule.
 *
 * Tickets are intended start times on a fixed schedule (uniform spacing or
 * Poisson gaps).  Only the next ticket's time is stored, so a backlog of any
 * size costs O(1) memory; a worker takes the oldest due ticket and latency is
 * measured from its intended time (coordinated-omission correct, as wrk2 and
 * pgbench -R).  The queue length is integrated over time here, under the same
 * lock that hands out tickets, so interval averages need no sampling.
 */
#include "clock.h"
#include "scheduler.h"

static double gap_ns(bt_sched *s)
{
    double mean = (double)BT_NS_PER_S / s->rate;
    return s->arrival == BT_ARRIVAL_POISSON ? bt_rand_exp(&s->rng, mean) : mean;
}

/* Queue length at time t is the number of tickets due and not taken, which
 * grows at `rate` from next_ns on; integrate that line from last_ns to now. */
static void advance(bt_sched *s, uint64_t now)
{
    if (now <= s->last_ns)
        return;
    if (s->rate > 0 && !s->held) {
        double n = (double)s->next_ns;
        double a = (double)s->last_ns > n ? (double)s->last_ns : n;
        double b = (double)now;
        if (b > a) {
            double per_ns = s->rate / (double)BT_NS_PER_S;
            s->queue_ns += per_ns * ((b - n) * (b - n) - (a - n) * (a - n)) / 2.0;
        }
    }
    s->last_ns = now;
}

void bt_sched_init(bt_sched *s, double rate, int32_t arrival, uint64_t seed)
{
    pthread_mutex_init(&s->mu, NULL);
    s->rate = rate > 0 ? rate : 0;
    atomic_store(&s->open_loop, s->rate > 0);
    s->arrival = arrival;
    s->next_ns = 0;
    s->taken = 0;
    s->last_ns = 0;
    s->queue_ns = 0;
    s->held = 1;  /* until the run starts (bt_sched_start) */
    bt_rng_seed(&s->rng, seed ^ 0x5eed5eedULL);
}

void bt_sched_destroy(bt_sched *s)
{
    pthread_mutex_destroy(&s->mu);
}

void bt_sched_start(bt_sched *s, uint64_t now)
{
    pthread_mutex_lock(&s->mu);
    s->last_ns = now;
    s->next_ns = now;
    s->held = 0;
    pthread_mutex_unlock(&s->mu);
}

/* A user's pause stops the arrival schedule itself: no tickets arrive while
 * it lasts, so the paused time never turns into queueing or latency. */
void bt_sched_hold(bt_sched *s, uint64_t now)
{
    pthread_mutex_lock(&s->mu);
    advance(s, now);
    s->held = 1;
    pthread_mutex_unlock(&s->mu);
}

/* Arrivals start again one idle poll after the resume: paused fibers look
 * at the pause flag that often (threads wake at the resume's signal), and a
 * ticket due before they are awake would count their wake-up as latency. */
void bt_sched_resume(bt_sched *s, uint64_t now)
{
    pthread_mutex_lock(&s->mu);
    advance(s, now);
    s->held = 0;
    s->next_ns = now + (uint64_t)BT_IDLE_POLL_MS * 1000000ULL;
    pthread_mutex_unlock(&s->mu);
}

void bt_sched_set_rate(bt_sched *s, double rate, int32_t arrival, uint64_t now)
{
    pthread_mutex_lock(&s->mu);
    advance(s, now);
    /* Coming from closed loop the schedule starts now; between two rates the
     * backlog already due is kept, since those requests did arrive. */
    if (s->rate <= 0 || s->next_ns > now)
        s->next_ns = now;
    s->rate = rate > 0 ? rate : 0;
    atomic_store(&s->open_loop, s->rate > 0);
    s->arrival = arrival;
    pthread_mutex_unlock(&s->mu);
}

int bt_sched_take(bt_sched *s, uint64_t now, uint64_t *intended)
{
    if (!atomic_load_explicit(&s->open_loop, memory_order_acquire))
        return BT_TAKE_CLOSED;
    pthread_mutex_lock(&s->mu);
    if (s->rate <= 0) {
        pthread_mutex_unlock(&s->mu);
        return BT_TAKE_CLOSED;
    }
    advance(s, now);
    *intended = s->next_ns;
    /* Taking a ticket that is already due removes one from the queue; the
     * integral above ran with next_ns, so shifting it by one gap is exact. */
    s->next_ns += (uint64_t)gap_ns(s);
    s->taken++;
    pthread_mutex_unlock(&s->mu);
    return BT_TAKE_TICKET;
}

void bt_sched_read(bt_sched *s, uint64_t now, double *queue_ns, uint64_t *due, double *rate)
{
    pthread_mutex_lock(&s->mu);
    advance(s, now);
    *queue_ns = s->queue_ns;
    uint64_t waiting = 0;
    if (s->rate > 0 && !s->held && now >= s->next_ns)
        waiting = (uint64_t)((double)(now - s->next_ns) * s->rate / (double)BT_NS_PER_S) + 1;
    *due = s->taken + waiting;
    *rate = s->rate;
    pthread_mutex_unlock(&s->mu);
}
