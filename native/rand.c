#include "rand.h"

#include <math.h>

#include "benchtop_api.h"

#define BT_PI 3.14159265358979323846

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void bt_rng_seed(bt_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

uint64_t bt_rng_next(bt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Zipfian by rejection-inversion (Hormann & Derflinger 1996), with the
 * integral H(x) = ((x)^(1-q) - 1) / (1 - q) that stays defined at q = 1. */
static double zhelper1(double x)
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

static double zhelper2(double x)
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3.0) * (1 + 0.25 * x));
}

static double zh(double x, double e)
{
    return exp(-e * log(x));
}

static double zhintegral(double x, double e)
{
    double lx = log(x);
    return zhelper2((1 - e) * lx) * lx;
}

static double zhintegral_inv(double x, double e)
{
    double t = x * (1 - e);
    if (t < -1)
        t = -1;
    return exp(zhelper1(t) * x);
}

void bt_rand_params_init(bt_rand_params *p, int32_t dist, int32_t spec_iter, double spec_pct,
                         double spec_res, double pareto_h, double zipf_exp)
{
    p->default_dist = dist == BT_DIST_DEFAULT ? BT_DIST_UNIFORM : dist;
    p->spec_iter = spec_iter > 0 ? spec_iter : 12;
    p->spec_pct = spec_pct > 0 ? spec_pct : 1;
    p->spec_res = spec_res > 0 && spec_res < 100 ? spec_res : 75;
    if (pareto_h <= 0 || pareto_h >= 1)
        pareto_h = 0.2;
    p->pareto_power = log(pareto_h) / log(1.0 - pareto_h);
    p->zipf_exp = zipf_exp >= 0 ? zipf_exp : 0.8;
    p->zipf_s = 2 - zhintegral_inv(zhintegral(2.5, p->zipf_exp) - zh(2, p->zipf_exp), p->zipf_exp);
    p->zipf_hx1 = zhintegral(1.5, p->zipf_exp) - 1;
}

static int64_t zipfian(bt_rng *r, const bt_rand_params *p, int64_t n)
{
    double e = p->zipf_exp;
    double hn = zhintegral((double)n + 0.5, e);
    for (;;) {
        double u = hn + bt_rng_double(r) * (p->zipf_hx1 - hn);
        double x = zhintegral_inv(u, e);
        int64_t k = (int64_t)(x + 0.5);
        if (k < 1)
            k = 1;
        else if (k > n)
            k = n;
        if ((double)k - x <= p->zipf_s || u >= zhintegral((double)k + 0.5, e) - zh((double)k, e))
            return k;
    }
}

int64_t bt_rand_dist(bt_rng *r, const bt_rand_params *p, int32_t dist, int64_t a, int64_t b)
{
    if (b <= a)
        return a;
    if (dist == BT_DIST_DEFAULT)
        dist = p->default_dist;
    double t;
    switch (dist) {
    case BT_DIST_GAUSSIAN: {
        /* sysbench: mean of spec_iter uniforms over the whole range (Irwin-Hall) */
        t = (double)(b - a + 1);
        double sum = 0;
        for (int i = 0; i < p->spec_iter; i++)
            sum += bt_rng_double(r) * t;
        return a + (int64_t)(sum / p->spec_iter);
    }
    case BT_DIST_SPECIAL: {
        /* sysbench 1.0.20: spec_res% of draws uniform in the central spec_pct%
         * of the range, the rest gaussian over the whole range. */
        t = (double)(b - a);
        double range_size = t * (100.0 / (100.0 - p->spec_res));
        double rnd = bt_rng_double(r);
        double res = rnd * range_size;
        if (res < t) {
            double sum = 0;
            for (int i = 0; i < p->spec_iter; i++)
                sum += bt_rng_double(r);
            return a + (int64_t)(sum * t / p->spec_iter);
        }
        double d = t * p->spec_pct / 100.0;
        res = rnd * (d + 1);
        res += t / 2 - t * p->spec_pct / 200.0;
        int64_t v = a + (int64_t)res;
        return v > b ? b : v;
    }
    case BT_DIST_PARETO: {
        int64_t v = a + (int64_t)((double)(b - a + 1) * pow(bt_rng_double(r), p->pareto_power));
        return v > b ? b : v;
    }
    case BT_DIST_ZIPFIAN:
        return a + zipfian(r, p, b - a + 1) - 1;
    default: {
        uint64_t range = (uint64_t)(b - a) + 1;
        return a + (int64_t)(((unsigned __int128)bt_rng_next(r) * range) >> 64);
    }
    }
}

void bt_rand_template(bt_rng *r, const char *tmpl, char *out, uint32_t cap, uint32_t *len)
{
    uint32_t i = 0;
    uint64_t bits = 0;
    int nbits = 0;
    for (; tmpl[i] && i + 1 < cap; i++) {
        char c = tmpl[i];
        if (c == '#' || c == '@') {
            /* one 64-bit draw serves several characters */
            if (nbits < 16) {
                bits = bt_rng_next(r);
                nbits = 64;
            }
            uint32_t v = (uint32_t)(bits & 0xffff);
            bits >>= 16;
            nbits -= 16;
            out[i] = c == '#' ? (char)('0' + v % 10) : (char)('a' + v % 26);
        } else {
            out[i] = c;
        }
    }
    out[i] = '\0';
    *len = i;
}

/* Devroye's rejection method for Zipf, as pgbench's computeIterativeZipfian. */
static int64_t zipf_iterative(bt_rng *r, int64_t n, double s)
{
    double b = pow(2.0, s - 1.0);
    if (n <= 1)
        return 1;
    for (;;) {
        double u = bt_rng_double(r);
        double v = bt_rng_double(r);
        double x = floor(pow(u, -1.0 / (s - 1.0)));
        double t = pow(1.0 + 1.0 / x, s - 1.0);
        if (v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= (double)n)
            return (int64_t)x;
    }
}

int64_t bt_rand_pgbench(bt_rng *r, int32_t op, int64_t lo, int64_t hi, double param)
{
    if (hi < lo)
        return lo;
    double span = (double)(hi - lo) + 1.0;
    double unit;
    switch (op) {
    case BT_OP_RAND_GAUSSIAN: {
        double stdev;
        do {
            /* Box-Muller needs (0, 1] for the logarithm */
            double r1 = 1.0 - bt_rng_double(r);
            double r2 = bt_rng_double(r);
            stdev = sqrt(-2.0 * log(r1)) * sin(2.0 * BT_PI * r2);
        } while (stdev < -param || stdev >= param);
        unit = (stdev + param) / (param * 2.0);
        break;
    }
    case BT_OP_RAND_EXPONENTIAL: {
        double cut = exp(-param);
        double u = 1.0 - bt_rng_double(r);
        unit = -log(cut + (1.0 - cut) * u) / param;
        break;
    }
    default:
        return lo - 1 + zipf_iterative(r, hi - lo + 1, param);
    }
    int64_t off = (int64_t)(span * unit);
    return off > hi - lo ? hi : lo + off;
}

double bt_rand_exp(bt_rng *r, double mean)
{
    double u = bt_rng_double(r);
    return -log1p(-u) * mean;
}

static uint32_t permute(uint32_t x)
{
    const uint32_t prime = 4294967291u;
    if (x >= prime)
        return x;
    uint32_t residue = (uint32_t)(((uint64_t)x * x) % prime);
    return x <= prime / 2 ? residue : prime - residue;
}

uint32_t bt_rand_unique_permute(uint32_t index, uint32_t offset)
{
    return permute((permute(index) + offset) ^ 0x5bf03635u);
}
