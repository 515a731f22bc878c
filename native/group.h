/* group.h: thread groups (group.c).  Internal to the engine; not seen by cffi.
 *
 * Workers live in the engine's one flat slot array (so stopping, joining and
 * snapshots see them all); a group maps its i-th thread to a slot, taken the
 * first time the group grows that far and kept for reuse. */
#ifndef BT_GROUP_H
#define BT_GROUP_H

#include <stdatomic.h>
#include <stdint.h>

#include "benchtop_api.h"
#include "scheduler.h"

typedef struct bt_worker bt_worker;
typedef struct bt_client bt_client;

typedef struct {
    _Atomic int32_t threads_target;
    bt_sched sched;
    int32_t cum_weight[BT_MAX_TXN_TYPES];
    int32_t total_weight;
    int32_t only_type;      /* >= 0: the group runs this one type (no draw) */
    int32_t nslots;
    int32_t slots[BT_MAX_THREADS];
    /* its connections, by number (ctl_mu; never freed before the engine):
     * a thread per connection has one each, an event loop many */
    bt_client **clients;
    _Atomic int32_t nclients;
    int32_t clients_cap;
} bt_group_rt;

#define BT_CLOSED_LOOP_NICE 19  /* the lowest priority: closed loop takes what CPU is left */
#define BT_OPEN_LOOP_NICE (-10)  /* where allowed (root, CAP_SYS_NICE); else it stays at 0 */

int bt_groups_init(bt_engine *e, const bt_config *cfg);
void bt_groups_destroy(bt_engine *e);
/* Starts the group's threads [0, n) that are not running (ctl_mu held). */
int bt_group_spawn(bt_engine *e, int32_t g, int32_t n);
int32_t bt_groups_threads_target(bt_engine *e);
/* Called first thing by each worker thread. */
void bt_group_worker_started(bt_worker *w);

#endif
