/* driver_pg_pipeline.c: the PostgreSQL driver's pipeline mode (--pipeline),
 * on libpq's pipeline API.
 *
 * Inside an explicit transaction, statements whose result nobody reads (no
 * capture) are only queued; they go out together, with one Sync, when a
 * statement needs its result, when the transaction ends (COMMIT/ROLLBACK,
 * through execute or exec_text) or when the queue is full.  A whole
 * sysbench read-write transaction is then one round trip.  The price: an
 * error in a queued statement is reported by the statement that flushed the
 * queue (usually COMMIT), with the failing statement's own message and code,
 * and the rows count of a queued statement is not known (reported as 0).
 */
#include <string.h>

#include <libpq-fe.h>

#include "driver_pg.h"

static int bt_pg_word_is(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < n; i++)
        if ((s[i] & ~0x20) != word[i])
            return 0;
    char next = s[n];
    return !((next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') || next == '_');
}

int bt_pg_txn_word(const char *sql)
{
    while (*sql == ' ' || *sql == '\t' || *sql == '\n' || *sql == '\r')
        sql++;
    if (bt_pg_word_is(sql, "BEGIN") || bt_pg_word_is(sql, "START"))
        return BT_PG_TXN_BEGIN;
    if (bt_pg_word_is(sql, "COMMIT") || bt_pg_word_is(sql, "END"))
        return BT_PG_TXN_COMMIT;
    if (bt_pg_word_is(sql, "ROLLBACK") || bt_pg_word_is(sql, "ABORT"))
        return BT_PG_TXN_ROLLBACK;
    return BT_PG_TXN_NONE;
}

/* Syncs and reads back every queued statement, in order; the first error is
 * reported, and the last statement's result goes to res. */
int bt_pg_pipeline_finish(bt_pg_conn *c, bt_result *res, bt_err *err)
{
    int rc = 0, pooler = 0;
    if (PQpipelineSync(c->pg) != 1) {
        rc = bt_pg_fail(c, NULL, err);
        goto out;
    }
    for (int i = 0; i < c->npending; i++) {
        bt_pg_pending *p = &c->pending[i];
        PGresult *r = bt_pg_next(c);
        if (!r) {
            if (rc == 0)
                rc = bt_pg_fail(c, NULL, err);
            goto out;
        }
        ExecStatusType status = PQresultStatus(r);
        if (status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED) {
            if (p->is_prepare)
                p->st->prepared = 0;
            if (status == PGRES_FATAL_ERROR && rc == 0) {
                pooler = bt_pg_broken_name(r);
                rc = bt_pg_fail(c, r, err);
            }
            PQclear(r);
        } else if (i == c->npending - 1 && rc == 0) {
            rc = bt_pg_result(c, r, res, err);
        } else {
            PQclear(r);
        }
        /* each statement's results end with a NULL */
        while ((r = bt_pg_next(c)) != NULL)
            PQclear(r);
    }
    PGresult *r = bt_pg_next(c);
    if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
        if (rc == 0)
            rc = bt_pg_fail(c, r, err);
    }
    PQclear(r);
out:
    c->npending = 0;
    if (pooler) {
        bt_pg_note_unnamed(c);
        rc = bt_pg_lost_to_pooler(err);
    }
    if (PQpipelineStatus(c->pg) != PQ_PIPELINE_OFF && PQexitPipelineMode(c->pg) != 1) {
        /* results still owed: the connection cannot be trusted any more */
        char msg[sizeof err->msg];
        bt_pg_msg(msg, sizeof msg, PQerrorMessage(c->pg));
        bt_err_set(err, BT_DERR_LOST, BT_ERRK_LOST_CONNECTION, 0, "", msg);
        rc = -1;
    }
    return rc;
}

int bt_pg_pipeline_execute(bt_pg_conn *c, bt_pg_stmt *st, int txn, bt_result *res, bt_err *err)
{
    if (c->npending == 0 && PQenterPipelineMode(c->pg) != 1)
        return bt_pg_fail(c, NULL, err);
    if (!st->prepared) {
        if (PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL) != 1)
            goto send_failed;
        c->pending[c->npending++] = (bt_pg_pending){st, 1};
        st->prepared = 1;   /* the drain clears it again if the Parse fails */
    }
    if (PQsendQueryPrepared(c->pg, st->name, st->nparams, st->values, NULL, NULL, 0) != 1)
        goto send_failed;
    c->pending[c->npending++] = (bt_pg_pending){st, 0};
    if (txn == BT_PG_TXN_BEGIN)
        c->in_txn = 1;
    if ((txn == BT_PG_TXN_NONE || txn == BT_PG_TXN_BEGIN) && c->in_txn &&
        !(res && res->want) && c->npending + 2 <= BT_PG_MAX_PENDING)
        return 0;
    if (txn == BT_PG_TXN_COMMIT || txn == BT_PG_TXN_ROLLBACK)
        c->in_txn = 0;
    return bt_pg_pipeline_finish(c, res, err);
send_failed:
    /* part of the queue may be on the wire: nothing sensible is left to do
     * with this connection but drop it */
    bt_pg_fail(c, NULL, err);
    err->kind = BT_DERR_LOST;
    err->errk = BT_ERRK_LOST_CONNECTION;
    c->npending = 0;
    return -1;
}
