/* driver_common.c: helpers every driver shares. */
#include <stdio.h>
#include <string.h>

#include "driver.h"

void bt_err_set(bt_err *err, int kind, int errk, int32_t code, const char *sqlstate,
                const char *msg)
{
    err->kind = kind;
    err->errk = errk;
    err->code = code;
    snprintf(err->sqlstate, sizeof err->sqlstate, "%s", sqlstate ? sqlstate : "");
    snprintf(err->msg, sizeof err->msg, "%s", msg ? msg : "");
}

/* SQLSTATEs are 5 characters of [0-9A-Z]: read them as a base-36 number so
 * --ignore-errors can hold MySQL errnos and SQLSTATEs in one int list. */
int32_t bt_sqlstate_code(const char *sqlstate)
{
    int32_t v = 0;
    for (int i = 0; i < 5 && sqlstate && sqlstate[i]; i++) {
        char c = sqlstate[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'Z') ? c - 'A' + 10 : 0;
        v = v * 36 + d;
    }
    return v;
}

static int bt_sql_fill(const bt_driver *drv, void *conn, const char *sql,
                       const bt_value *params, int32_t nparams, char *out, size_t cap)
{
    size_t o = 0;
    int32_t p = 0;
    char quote = 0;
    for (const char *s = sql; *s; s++) {
        if (o + 2 >= cap)
            return -1;
        if (quote) {
            if (*s == quote)
                quote = 0;
            out[o++] = *s;
            continue;
        }
        if (*s == '\'' || *s == '"') {
            quote = *s;
            out[o++] = *s;
            continue;
        }
        if (*s != '?' || p >= nparams) {
            out[o++] = *s;
            continue;
        }
        const bt_value *v = &params[p++];
        if (v->type == BT_VAL_INT) {
            int n = snprintf(out + o, cap - o, "%lld", (long long)v->i);
            if (n < 0 || (size_t)n >= cap - o)
                return -1;
            o += (size_t)n;
        } else if (v->type == BT_VAL_NULL) {
            if (o + 5 >= cap)
                return -1;
            memcpy(out + o, "NULL", 4);
            o += 4;
        } else {
            if (o + 2 * (size_t)v->len + 3 >= cap)
                return -1;
            if (drv && drv->quote) {
                o += drv->quote(conn, out + o, cap - o, v->s, v->len);
            } else {
                out[o++] = '\'';
                for (uint32_t i = 0; i < v->len; i++) {
                    if (v->s[i] == '\'')
                        out[o++] = '\'';
                    out[o++] = v->s[i];
                }
                out[o++] = '\'';
            }
        }
    }
    out[o] = '\0';
    return 0;
}

int bt_sql_interpolate(const bt_driver *drv, void *conn, const char *sql,
                       const bt_value *params, int32_t nparams, bt_textbuf *out, bt_err *err)
{
    /* An upper bound: a quoted string at worst doubles, plus its quotes and
     * the NUL; an integer or NULL takes at most 20 characters. */
    size_t need = strlen(sql) + 1;
    for (int32_t i = 0; i < nparams; i++)
        need += params[i].type == BT_VAL_STR ? 2 * (size_t)params[i].len + 3 : 24;
    if (bt_textbuf_reserve(out, need) != 0) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "out of memory");
        return -1;
    }
    if (bt_sql_fill(drv, conn, sql, params, nparams, out->buf, out->cap) != 0) {
        bt_err_set(err, BT_DERR_SQL, BT_ERRK_FATAL, 0, "", "statement too long to interpolate");
        return -1;
    }
    out->len = strlen(out->buf);
    return 0;
}
