/* textbuf.c: the growable byte buffer of textbuf.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf.h"

int bt_textbuf_reserve(bt_textbuf *b, size_t need)
{
    if (b->buf && need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : BT_TEXTBUF_MIN_CAP;
    while (cap < need) {
        /* doubling past SIZE_MAX / 2 would wrap to a buffer smaller than need */
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *nb = realloc(b->buf, cap);
    if (!nb)
        return -1;
    b->buf = nb;
    b->cap = cap;
    return 0;
}

int bt_textbuf_append(bt_textbuf *b, const char *s, size_t n)
{
    /* len + n + 1 must not wrap into a small request that "fits" */
    if (n >= SIZE_MAX - b->len || bt_textbuf_reserve(b, b->len + n + 1) != 0)
        return -1;
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return 0;
}

void bt_textbuf_free(bt_textbuf *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = 0;
    b->cap = 0;
}
