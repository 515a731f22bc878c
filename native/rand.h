/* rand.h: per-worker PRNG (xoshiro256**) and sysbench 1.0.20's distributions.
 *
 * The distributions reproduce sysbench's formulas (src/sb_rand.c) so runs with
 * the same --rand-type stress the same rows; the generator itself differs
 * (sysbench uses xoroshiro128+), which only changes which rows, not how often.
 */
#ifndef BT_RAND_H
#define BT_RAND_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} bt_rng;

typedef struct {
    int32_t default_dist;     /* BT_DIST_* */
    int32_t spec_iter;
    double spec_pct;
    double spec_res;
    double pareto_power;      /* log(h) / log(1 - h) */
    double zipf_exp;
    double zipf_s;
    double zipf_hx1;
} bt_rand_params;

void bt_rng_seed(bt_rng *r, uint64_t seed);
uint64_t bt_rng_next(bt_rng *r);

static inline double bt_rng_double(bt_rng *r)
{
    return (double)(bt_rng_next(r) >> 11) * 0x1.0p-53;
}

void bt_rand_params_init(bt_rand_params *p, int32_t dist, int32_t spec_iter, double spec_pct,
                         double spec_res, double pareto_h, double zipf_exp);
int64_t bt_rand_dist(bt_rng *r, const bt_rand_params *p, int32_t dist, int64_t a, int64_t b);
/* pgbench's parameterised distributions (src/bin/pgbench/pgbench.c), same
 * formulas: op is BT_OP_RAND_GAUSSIAN, _EXPONENTIAL or _ZIPFIAN. */
int64_t bt_rand_pgbench(bt_rng *r, int32_t op, int64_t lo, int64_t hi, double param);
/* '#' -> digit, '@' -> lowercase letter; writes len bytes + NUL. */
void bt_rand_template(bt_rng *r, const char *tmpl, char *out, uint32_t cap, uint32_t *len);
/* Exponential inter-arrival gap with the given mean, for Poisson arrivals. */
double bt_rand_exp(bt_rng *r, double mean);
/* rand.unique: a permutation of 32-bit values from a shared index. */
uint32_t bt_rand_unique_permute(uint32_t index, uint32_t offset);

#endif
