/* stmt_slots.c: the statement table of stmt_slots.h. */
#include <stdlib.h>
#include <string.h>

#include "stmt_slots.h"

enum { BT_STMT_SLOTS_MIN = 16 };

static void *bt_stmt_slots_fail(bt_err *err, const char *msg)
{
    bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", msg);
    return NULL;
}

void *bt_stmt_slots_get(bt_stmt_slots *s, int32_t key, size_t size, int *fresh, bt_err *err)
{
    if (fresh)
        *fresh = 0;
    if (key < 0)
        return bt_stmt_slots_fail(err, "negative statement key");
    /* doubling past it would overflow int32_t (keys are far smaller) */
    if (key >= INT32_MAX / 2)
        return bt_stmt_slots_fail(err, "statement key out of range");
    if (key >= s->n) {
        /* doubling: a connection's keys arrive one by one on first use */
        int32_t n = s->n ? s->n : BT_STMT_SLOTS_MIN;
        while (n <= key)
            n *= 2;
        void **grown = realloc(s->slot, (size_t)n * sizeof *grown);
        if (!grown)
            return bt_stmt_slots_fail(err, "out of memory");
        memset(grown + s->n, 0, (size_t)(n - s->n) * sizeof *grown);
        s->slot = grown;
        s->n = n;
    }
    if (s->slot[key])
        return s->slot[key];
    if (!(s->slot[key] = calloc(1, size)))
        return bt_stmt_slots_fail(err, "out of memory");
    if (fresh)
        *fresh = 1;
    return s->slot[key];
}

void bt_stmt_slots_free(bt_stmt_slots *s, void (*free_stmt)(void *))
{
    for (int32_t k = 0; k < s->n; k++)
        if (s->slot[k])
            free_stmt(s->slot[k]);
    free(s->slot);
    s->slot = NULL;
    s->n = 0;
}
