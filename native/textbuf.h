/* textbuf.h: a growable byte buffer for statement text (text-protocol
 * interpolation, bulk-load INSERTs) and for copies of string parameters.
 *
 * A zeroed bt_textbuf is empty and valid.  The capacity grows by doubling from
 * BT_TEXTBUF_MIN_CAP, so a buffer reused call after call settles at one
 * allocation; `buf` moves when it grows, so whoever handed the pointer to a
 * client library (MYSQL_BIND) must watch `cap` and bind again.
 */
#ifndef BT_TEXTBUF_H
#define BT_TEXTBUF_H

#include <stddef.h>

#define BT_TEXTBUF_MIN_CAP 256

typedef struct {
    char *buf;
    size_t len;     /* bytes written by bt_textbuf_append; buf[len] is '\0' */
    size_t cap;
} bt_textbuf;

/* Makes cap at least `need` bytes; buf is non-NULL afterwards even for a
 * need of 0.  Returns 0, or -1 when out of memory (the buffer is unchanged). */
int bt_textbuf_reserve(bt_textbuf *b, size_t need);
/* Appends n bytes of s and a terminating NUL.  Returns 0 or -1 (out of
 * memory, nothing appended). */
int bt_textbuf_append(bt_textbuf *b, const char *s, size_t n);
void bt_textbuf_free(bt_textbuf *b);

#endif
