/* hist_record.c: ns per bt_hist_record (the hot-path cost of one latency
 * sample).  Built and run by bench/engine_speed.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../native/histogram.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    enum { N = 1 << 16, ROUNDS = 2000 };
    bt_hist *h = calloc(1, sizeof *h);
    uint64_t *vals = malloc(sizeof(uint64_t) * N);
    if (!h || !vals)
        return 1;
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        vals[i] = 1000 + x % 50000000; /* 1 us .. 50 ms */
    }
    double t0 = now_s();
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N; i++)
            bt_hist_record(h, vals[i]);
    double dt = now_s() - t0;
    uint64_t total = 0;
    for (int i = 0; i < BT_HIST_NBUCKETS; i++)
        total += h->counts[i];
    printf("%.2f ns per record (%llu records)\n", dt * 1e9 / ((double)N * ROUNDS), (unsigned long long)total);
    free(vals);
    free(h);
    return 0;
}
