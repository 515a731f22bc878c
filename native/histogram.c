#include "histogram.h"

#include "benchtop_api.h"

void bt_hist_merge_into(const bt_hist *h, uint64_t *out)
{
    int32_t hi = atomic_load_explicit(&h->hi, memory_order_acquire);
    int32_t lo = atomic_load_explicit(&h->lo, memory_order_relaxed);
    /* a count recorded while we read may be missed: it is in the next merge */
    for (int32_t i = lo; i < hi; i++)
        out[i] += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
}

int32_t bt_hist_nbuckets(void)
{
    return BT_HIST_NBUCKETS;
}

int32_t bt_hist_index(uint64_t ns)
{
    return bt_hist_index_inline(ns);
}

uint64_t bt_hist_bucket_low(int32_t i)
{
    if (i < 0)
        return 0;
    if (i < BT_HIST_LINEAR)
        return (uint64_t)i;
    if (i >= BT_HIST_NBUCKETS)
        i = BT_HIST_NBUCKETS - 1;
    int32_t j = i - BT_HIST_LINEAR;
    int msb = 8 + j / (1 << BT_HIST_SUB_BITS);
    uint64_t sub = (uint64_t)(j % (1 << BT_HIST_SUB_BITS)) + (1u << BT_HIST_SUB_BITS);
    return sub << (msb - BT_HIST_SUB_BITS);
}

uint64_t bt_hist_bucket_high(int32_t i)
{
    if (i < BT_HIST_LINEAR)
        return (uint64_t)(i < 0 ? 0 : i) + 1;
    if (i >= BT_HIST_NBUCKETS)
        i = BT_HIST_NBUCKETS - 1;
    int32_t j = i - BT_HIST_LINEAR;
    int msb = 8 + j / (1 << BT_HIST_SUB_BITS);
    return bt_hist_bucket_low(i) + ((uint64_t)1 << (msb - BT_HIST_SUB_BITS));
}
