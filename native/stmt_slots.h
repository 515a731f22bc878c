/* stmt_slots.h: a connection's prepared statements, by statement key.
 *
 * The engine numbers statements (statement x table, driver.h) and the MySQL
 * and PostgreSQL drivers prepare each on first use, so a connection's table
 * of them grows to the largest key it has seen.  Each slot holds a pointer to
 * a statement of the driver's own type: a grow moves the pointers, never the
 * statements, whose buffers a client library may hold (MYSQL_BIND).
 */
#ifndef BT_STMT_SLOTS_H
#define BT_STMT_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"

typedef struct {
    void **slot;     /* by key; NULL where no statement was made yet */
    int32_t n;       /* slots allocated; a zeroed bt_stmt_slots is empty and valid */
} bt_stmt_slots;

/* The statement of `key`: an existing one, or a new zeroed one of `size`
 * bytes (*fresh, when given, says which: the caller fills a new one).  NULL
 * with err filled for a key out of range or out of memory. */
void *bt_stmt_slots_get(bt_stmt_slots *s, int32_t key, size_t size, int *fresh, bt_err *err);
/* Frees every statement with free_stmt (the driver's own), then the table. */
void bt_stmt_slots_free(bt_stmt_slots *s, void (*free_stmt)(void *));

#endif
