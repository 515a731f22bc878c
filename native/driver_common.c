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

int bt_sql_interpolate(const bt_driver *drv, void *conn, const char *sql,
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
