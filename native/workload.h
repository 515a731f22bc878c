/* workload.h: running a workload's transactions (workload.c).  Internal to
 * the engine; not seen by cffi. */
#ifndef BT_WORKLOAD_H
#define BT_WORKLOAD_H

#include <stdint.h>

#include "driver.h"
#include "worker.h"

/* Runs one transaction of type `type`.  Returns BT_DERR_NONE on commit;
 * otherwise the error kind, with err filled. *rolled_back is set when the
 * workload itself chose to roll back. */
int bt_workload_run_txn(bt_client *c, int32_t type, bt_err *err, int *rolled_back);
int32_t bt_workload_pick_type(bt_client *c);
/* One word of the comma-separated `list` per decimal digit of n (`digits` of them). */
void bt_words(const char *list, int64_t n, int32_t digits, char *out, uint32_t cap, uint32_t *len);

#endif
