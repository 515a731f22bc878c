/* driver_mysql.h: what the MySQL driver's two halves share: driver_mysql.c
 * (the client library: connect, prepare, text statements, captured results)
 * and driver_mysql_wire.c (benchtop's own reads on the socket and its own
 * COM_STMT_EXECUTE).  Not seen by cffi or by the engine, which knows the
 * driver only as bt_driver_mysql (driver.h). */
#ifndef BT_DRIVER_MYSQL_H
#define BT_DRIVER_MYSQL_H

#include <stdint.h>

#include <mysql.h>

#include "driver.h"
#include "stmt_slots.h"
#include "textbuf.h"

/* Blocking reads (libmariadb only; see bt_my_blocking_reads).  ma_pvio.h is
 * Connector/C's plugin interface, installed with its headers and stable
 * within the libmariadb.so.3 ABI. */
#if defined(MARIADB_PACKAGE_VERSION_ID) && MARIADB_PACKAGE_VERSION_ID >= 30000 && \
    !defined(BT_MY_NO_BLOCKING_READS)
#define BT_MY_BLOCKING_READS 1
#include <ma_pvio.h>

typedef struct {
    PVIO_METHODS m;          /* first: pvio->methods points here */
    int fd;
    int async;               /* an event loop's: non-blocking, waits switch to the loop */
    int read_ms;             /* an event loop's read timeout: --query-timeout's, or the read timeout */
} bt_my_pvio_methods;
#endif

#if defined(MARIADB_PACKAGE_VERSION_ID) || !defined(MYSQL_VERSION_ID) || MYSQL_VERSION_ID < 80000
typedef my_bool bt_my_bool;
#else
typedef bool bt_my_bool;   /* MySQL 8 removed my_bool */
#endif

/* Error numbers, spelled out because MariaDB's and MySQL's headers name and
 * carry different subsets of them. */
enum {
    BT_MY_CHECKREAD = 1020,          /* record changed since last read (MVCC conflict) */
    BT_MY_SERVER_SHUTDOWN = 1053,
    BT_MY_LOCK_WAIT_TIMEOUT = 1205,
    BT_MY_DEADLOCK = 1213,
    BT_MY_UNKNOWN_STMT = 1243,
    BT_MY_UNSUPPORTED_PS = 1295,
    BT_MY_MAX_PREPARED = 1461,
    BT_MY_NEED_REPREPARE = 1615,
    BT_MY_CONNECTION_KILLED = 1927,
    BT_MY_CR_CONNECTION_ERROR = 2002,
    BT_MY_CR_CONN_HOST_ERROR = 2003,
    BT_MY_CR_SERVER_GONE = 2006,
    BT_MY_CR_SERVER_LOST = 2013,
    BT_MY_CR_SSL_CONNECTION_ERROR = 2026,  /* how a TLS connection reports EOF and timeouts */
    BT_MY_CR_SERVER_LOST_EXT = 2055,
    BT_MY_CLIENT_INTERACTION_TIMEOUT = 4031,  /* MySQL 8: disconnected for inactivity */
    BT_MY_CR_ERR_NET_READ = 5013,             /* libmariadb */
    BT_MY_CR_ERR_NET_WRITE = 5014
};

/* How a statement key runs on this connection. */
enum { BT_MYS_NEW = 0, BT_MYS_PREPARED = 1, BT_MYS_TEXT = 2 };

typedef struct {
    int64_t i;
    bt_textbuf s;            /* copy of a string value: MYSQL_BIND keeps a pointer */
    unsigned long len;
    bt_my_bool is_null;
    int type;                /* BT_VAL_* bound in pbind, -1 before the first bind */
} bt_my_param;

typedef struct {
    unsigned long len;
    bt_my_bool is_null;
    bt_my_bool error;
} bt_my_rcol;

typedef struct {
    int mode;                /* BT_MYS_* */
    MYSQL_STMT *stmt;
    unsigned long nparams;
    MYSQL_BIND *pbind;
    bt_my_param *pv;
    unsigned int nrbind;     /* result binds allocated */
    unsigned int rfields;    /* field count the result binds were made for */
    MYSQL_BIND *rbind;
    bt_my_rcol *rcol;        /* their length/null/error slots */
    int rwant;               /* res->want the result binds were made for; 0 = none */
    int64_t ri;
    char rs[BT_SREG_CAP];
} bt_my_stmt;

typedef struct {
    unsigned int read_timeout_s;
    unsigned int write_timeout_s;
    int blocking_reads;
    int32_t query_timeout_ms;  /* --query-timeout: what a lost connection this late is */
    int async;                 /* on an event loop's fiber: every wait goes through bt_io_wait */
} bt_my_opts;

typedef struct {
    MYSQL *my;
    int prepare;
    bt_my_opts opts;
#ifdef BT_MY_BLOCKING_READS
    bt_my_pvio_methods pvio_methods;   /* must outlive mysql_close */
#endif
    bt_stmt_slots stmts;     /* bt_my_stmt by key */
    bt_textbuf text;         /* interpolation buffer for the text protocol */
    bt_textbuf wire;         /* wire path: the COM_STMT_EXECUTE being sent */
} bt_my_conn;

/* driver_mysql.c: classifies a statement error (retry, lost, fatal); always
 * returns -1 for the caller to pass on. */
int bt_my_fail(bt_err *err, unsigned int code, const char *sqlstate, const char *msg);

#ifdef BT_MY_BLOCKING_READS
/* driver_mysql_wire.c */
/* Gives a plain TCP/Unix connection blocking reads (the library's own
 * non-blocking ones stay on TLS, or when any step fails). */
void bt_my_blocking_reads(bt_my_conn *c);
/* The reply can be read here, past the library: a plain socket with our
 * blocking reads and its read-ahead cache, no compression (TLS keeps the
 * library's reads).  Inline: every prepared execute asks. */
static inline int bt_my_own_reads(const bt_my_conn *c)
{
    const NET *net = &c->my->net;
    const MARIADB_PVIO *pvio = net->pvio;
    return pvio && pvio->methods == &c->pvio_methods.m && !pvio->ctls && pvio->cache && !net->compress;
}
/* Skips the rows of the pending binary result set; the rows skipped, -1
 * when the connection failed. */
int64_t bt_my_skip_rows(bt_my_conn *c);
/* A lost connection (2013) with `why` as its message; returns -1. */
int bt_my_lost(bt_err *err, const char *why);
/* Executes `st` on the wire: 0, -1 with err filled, or 1 when it cannot
 * (nothing was sent: the library's path runs it). */
int bt_my_wire_execute(bt_my_conn *c, bt_my_stmt *st, const bt_value *params, int32_t n,
                       bt_result *res, bt_err *err);
#endif

#endif
