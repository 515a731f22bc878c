/* histogram.h: log-linear latency histogram (HdrHistogram layout, 2 digits+).
 *
 * Values are nanoseconds.  Below 256 ns every value has its own bucket; above,
 * each power of two is split into 128 buckets, so a bucket is at most 1/128
 * (0.78%) of its value wide and a midpoint is within 0.4% of any value in it.
 * The top octave ends at 2^43 ns (~2.4 h); larger values land in the last
 * bucket.  Each worker owns its histogram and is its only writer; readers merge
 * with relaxed atomic loads, so recording takes no lock and no locked
 * instruction.
 */
#ifndef BT_HISTOGRAM_H
#define BT_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#define BT_HIST_SUB_BITS 7                       /* 128 buckets per octave */
#define BT_HIST_LINEAR 256                       /* exact buckets below 256 ns */
#define BT_HIST_MAX_MSB 42                       /* highest octave: [2^42, 2^43) */
#define BT_HIST_NBUCKETS (BT_HIST_LINEAR + (BT_HIST_MAX_MSB - 8 + 1) * (1 << BT_HIST_SUB_BITS))

typedef struct {
    /* buckets [lo, hi) hold every count (hi == 0: none yet): a merge reads
     * only those, so merging thousands of workers' histograms stays cheap */
    _Atomic int32_t lo, hi;
    _Atomic uint64_t counts[BT_HIST_NBUCKETS];
} bt_hist;

static inline int32_t bt_hist_index_inline(uint64_t v)
{
    if (v < BT_HIST_LINEAR)
        return (int32_t)v;
    int msb = 63 - __builtin_clzll(v);
    if (msb > BT_HIST_MAX_MSB)
        return BT_HIST_NBUCKETS - 1;
    int shift = msb - BT_HIST_SUB_BITS;
    uint64_t sub = (v >> shift) - (1u << BT_HIST_SUB_BITS);
    return (int32_t)(BT_HIST_LINEAR + (msb - 8) * (1 << BT_HIST_SUB_BITS) + (int32_t)sub);
}

/* Single writer: a relaxed load and store compile to a plain increment. */
static inline void bt_hist_record(bt_hist *h, uint64_t ns)
{
    int32_t i = bt_hist_index_inline(ns);
    int32_t hi = atomic_load_explicit(&h->hi, memory_order_relaxed);
    if (hi == 0) {
        atomic_store_explicit(&h->lo, i, memory_order_relaxed);
        atomic_store_explicit(&h->hi, i + 1, memory_order_release);
    } else if (i >= hi) {
        atomic_store_explicit(&h->hi, i + 1, memory_order_release);
    } else if (i < atomic_load_explicit(&h->lo, memory_order_relaxed)) {
        atomic_store_explicit(&h->lo, i, memory_order_relaxed);
    }
    _Atomic uint64_t *c = &h->counts[i];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Adds h's counts into out (plain array of BT_HIST_NBUCKETS). */
void bt_hist_merge_into(const bt_hist *h, uint64_t *out);

#endif
