/* benchtop_api.h: the only header cffi sees.
 *
 * Written in the subset cffi's cdef() understands (no #include, no macros with
 * expressions): _build.py feeds this file to cdef() after stripping the
 * preprocessor lines, and the C sources include it as an ordinary header.
 */
#ifndef BENCHTOP_API_H
#define BENCHTOP_API_H

#include <stdint.h>

#define BT_VERSION "0.1.0"

/* ---- status codes ------------------------------------------------------ */
enum {
    BT_OK = 0,
    BT_EINVAL = -1,      /* bad argument */
    BT_ENOMEM = -2,
    BT_ESTATE = -3,      /* call not valid in the engine's current state */
    BT_ECONNECT = -4,    /* could not connect */
    BT_ESQL = -5,        /* a statement failed */
    BT_ETHREAD = -6,     /* could not start a thread */
    BT_EDRIVER = -7      /* driver not built in */
};

/* ---- drivers ------------------------------------------------------------- */
enum {
    BT_DRIVER_NULL = 0,
    BT_DRIVER_SQLITE = 1,
    BT_DRIVER_MYSQL = 2,
    BT_DRIVER_PGSQL = 3,
    BT_DRIVER_FILEIO = 4  /* sysbench fileio: files in a folder, no SQL (driver_fileio.c) */
};

/* ---- engine states ------------------------------------------------------- */
enum {
    BT_STATE_IDLE = 0,
    BT_STATE_RUNNING = 1,
    BT_STATE_STOPPING = 2,
    BT_STATE_STOPPED = 3,
    BT_STATE_FAILED = 4   /* a fatal statement error or connect failure; see error */
};

/* ---- arrival process for open loop --------------------------------------- */
enum {
    BT_ARRIVAL_UNIFORM = 0,
    BT_ARRIVAL_POISSON = 1
};

/* ---- error kinds counted per interval ------------------------------------ */
enum {
    BT_ERRK_DEADLOCK = 0,       /* MySQL 1213, PG 40P01 */
    BT_ERRK_LOCK_TIMEOUT = 1,   /* MySQL 1205, PG 55P03 */
    BT_ERRK_SERIALIZATION = 2,  /* PG 40001, SQLite BUSY */
    BT_ERRK_IGNORED = 3,        /* any other code in --ignore-errors */
    BT_ERRK_LOST_CONNECTION = 4,
    BT_ERRK_FATAL = 5,
    BT_ERRK_TIMEOUT = 6,        /* --query-timeout expired; the connection is replaced */
    BT_ERRK_ABORTED = 7,        /* a pgbench script's expression failed: that client stops, as in pgbench */
    BT_ERRK_COUNT = 8
};

/* ---- workload program ---------------------------------------------------- *
 * A workload is compiled by benchtop/workload (Python) into a flat op array
 * and a string table; the C interpreter in workload.c runs it.  Registers are
 * per worker: BT_NREGS int64 registers and BT_NSREGS string registers.
 * Operand encoding: an "expr" is (reg, k): value = (reg >= 0 ? R[reg] : 0) + k.
 */
enum {
    BT_NREGS = 64,
    BT_NSREGS = 16,
    BT_SREG_CAP = 1024,
    BT_MAX_PARAMS = 32,
    BT_MAX_TXN_TYPES = 32,
    BT_MAX_THREADS = 4096,   /* over all thread groups */
    BT_MAX_CONNECTIONS = 65536,  /* with event-loop workers (loop_threads > 0), over all groups */
    BT_MAX_GROUPS = 8
};

enum {
    BT_OP_SET = 1,        /* R[a] = expr(b, x) */
    BT_OP_RAND = 2,       /* R[a] = rand(dist=c, lo=expr(b,x), hi=expr(d,y)) */
    BT_OP_STR = 3,        /* S[a] = template strings[c] ('#' digit, '@' letter) */
    BT_OP_EXEC = 4,       /* run statement c; params at params[b .. b+d); kind in x;
                             capture first column of first row into R[a] (a >= 0),
                             or into S[-a-2] when a <= -2; a == -1: no capture */
    BT_OP_LOOP = 5,       /* repeat the next d ops expr(b, x) times (nestable) */
    BT_OP_BEGIN_IF = 6,   /* skip the next d ops unless R[a] != 0 */
    BT_OP_UNIQUE = 7,     /* R[a] = next value of a per-run unique sequence (rand.unique) */
    BT_OP_ROLLBACK_IF = 8,/* if R[a] != 0 the transaction ends with a rollback (counted) */
    BT_OP_SLEEP_US = 9,   /* think time: sleep expr(b, x) microseconds */
    BT_OP_ARITH = 10,     /* R[a] = expr(b, x) <BT_ARITH_* c> expr(d, y) */
    BT_OP_WORDS = 11,     /* S[a] = one word of the comma list strings[c] per decimal digit
                             of expr(b, x), d digits (TPC-C last names: BARPRICALLY) */
    /* pgbench's random_gaussian / random_exponential / random_zipfian:
       R[a] = draw in [expr(b, x), expr(d, y)] with parameter c / 1e6 */
    BT_OP_RAND_GAUSSIAN = 12,
    BT_OP_RAND_EXPONENTIAL = 13,
    BT_OP_RAND_ZIPFIAN = 14
};

/* Operators of BT_OP_ARITH.  Division and modulo by zero give 0; comparisons
 * and logic give 0 or 1. */
enum {
    BT_ARITH_ADD = 0,
    BT_ARITH_SUB = 1,
    BT_ARITH_MUL = 2,
    BT_ARITH_DIV = 3,
    BT_ARITH_MOD = 4,
    BT_ARITH_LT = 5,
    BT_ARITH_LE = 6,
    BT_ARITH_GT = 7,
    BT_ARITH_GE = 8,
    BT_ARITH_EQ = 9,
    BT_ARITH_NE = 10,
    BT_ARITH_AND = 11,
    BT_ARITH_OR = 12,
    BT_ARITH_BITOR = 13,
    BT_ARITH_BITAND = 14,
    BT_ARITH_MIN = 15,
    BT_ARITH_MAX = 16
};

enum {
    BT_DIST_UNIFORM = 0,
    BT_DIST_GAUSSIAN = 1,
    BT_DIST_SPECIAL = 2,
    BT_DIST_PARETO = 3,
    BT_DIST_ZIPFIAN = 4,
    BT_DIST_DEFAULT = 9   /* whatever --rand-type selects */
};

enum {
    BT_QK_READ = 0,
    BT_QK_WRITE = 1,
    BT_QK_OTHER = 2
};

/* A statement parameter: an int64 register, a string register or a constant. */
enum {
    BT_PARAM_REG = 0,
    BT_PARAM_SREG = 1,
    BT_PARAM_CONST = 2,
    BT_PARAM_NULL = 3
};

typedef struct {
    int32_t code;
    int32_t a, b, c, d;
    int64_t x, y;
} bt_op;

typedef struct {
    int32_t kind;      /* BT_PARAM_* */
    int32_t reg;
    int64_t k;         /* constant, or added to a register */
} bt_param;

typedef struct {
    const char *sql;       /* '?' placeholders; "{t}" is replaced by the table number */
    int32_t table_reg;     /* register holding the table number, or -1 */
    int32_t nparams;
    int32_t kind;          /* BT_QK_* (a statement that changes 0 rows still counts here) */
    int32_t is_begin;      /* 1: BEGIN, 2: COMMIT; the driver may map these to API calls */
} bt_stmt;

typedef struct {
    const char *name;
    int32_t weight;
    int32_t first_op;
    int32_t nops;
} bt_txn_type;

typedef struct {
    const bt_op *ops;
    int32_t nops;
    const bt_param *params;
    int32_t nparams;
    const bt_stmt *stmts;
    int32_t nstmts;
    const char *const *strings;  /* templates for BT_OP_STR */
    int32_t nstrings;
    const bt_txn_type *txn_types;
    int32_t ntxn_types;
    int32_t max_table;           /* statements use table numbers 1..max_table */
    /* registers preset at the start of each worker: R[i] = init_regs[i] */
    const int64_t *init_regs;
    int32_t ninit_regs;
    int32_t time_queries;        /* 1: a latency histogram per query kind (fileio's read/write/fsync) */
    /* 1: as pgbench, an expression that fails (division by zero, an empty
     * random range, bigint overflow) aborts the client; 0: it gives 0 (or
     * the range's low end) and the transaction goes on */
    int32_t strict_eval;
} bt_program;

/* ---- bulk load (prepare) ------------------------------------------------- *
 * Multi-row INSERTs of generated rows, split into chunks that workers take in
 * turn, so one table still loads on every thread.
 */
enum {
    BT_GEN_SEQ = 0,       /* row number, 1-based: lo + i */
    BT_GEN_RAND = 1,      /* rand(dist, lo, hi) */
    BT_GEN_TEMPLATE = 2,  /* string template (quoted) */
    BT_GEN_CONST = 3,     /* lo */
    BT_GEN_DIV = 4,       /* (row - 1) / lo + 1: e.g. bid for an account */
    BT_GEN_LITERAL = 5,   /* text, unquoted (e.g. CURRENT_TIMESTAMP or 0) */
    BT_GEN_MOD = 6,       /* ((row - 1) / lo) % hi + 1 + dist: e.g. d_id of a customer row */
    BT_GEN_DECIMAL = 7,   /* uniform(lo, hi) / 10^dist, printed with dist decimals */
    BT_GEN_WORDS = 8      /* BT_OP_WORDS of ((row - 1) / lo) % hi with dist digits; text = list */
};

typedef struct {
    int32_t kind;
    int32_t dist;
    int64_t lo, hi;
    const char *text;  /* template or literal */
} bt_gen;

typedef struct {
    const char *insert_prefix;  /* "INSERT INTO sbtest{t}(k, c, pad) VALUES " */
    const bt_gen *cols;
    int32_t ncols;
    int32_t first_table, last_table;
    int64_t rows;               /* per table */
    int32_t rows_per_insert;
    int32_t rows_per_commit;    /* 0: autocommit each INSERT */
} bt_load;

/* ---- thread groups --------------------------------------------------------- *
 * A group is a pool of workers with its own thread count, its own arrival
 * schedule (closed loop, or open loop at its own rate) and its own mix of
 * transaction types: the insert benchmark's one rate-limited inserter beside
 * ten closed-loop query threads.  Without groups (ngroups == 0) the engine
 * has one group made of bt_config's threads and rate and the program's
 * weights.
 */
typedef struct {
    const char *name;
    int32_t threads;
    double rate;               /* 0: closed loop */
    int32_t arrival;           /* BT_ARRIVAL_* */
    int32_t weights[32];       /* per transaction type; 0: not run by this group */
} bt_group;

/* One group's cumulative counters (engine-wide ones are in bt_snapshot). */
typedef struct {
    int32_t threads_target;
    int32_t threads_running;
    double rate;
    uint64_t transactions;
    uint64_t errors;                  /* every kind but fatal */
    uint64_t latency_ns_sum;
    uint64_t service_ns_sum;
    uint64_t busy_ns;
    double queue_ns;
    uint64_t tickets_due;
} bt_group_snapshot;

/* ---- configuration ------------------------------------------------------- */
typedef struct {
    int32_t driver;            /* BT_DRIVER_* */
    const char *host;
    int32_t port;
    const char *user;
    const char *password;      /* kept only in memory; never logged */
    const char *database;      /* SQLite: file path */
    const char *socket;
    const char *options;       /* driver-specific: libpq conninfo extras, ssl mode ... */
    int32_t ssl;               /* 0 off, 1 required, 2 verify */
    int32_t prepare;           /* 1: server-side prepared statements */
    int32_t pipeline;          /* PG pipeline mode */
    int32_t connect_timeout_s;
    int32_t query_timeout_ms;  /* 0: none; else a statement's reply is awaited this long */
} bt_conn_config;

typedef struct {
    bt_conn_config conn;
    const bt_program *program;
    int32_t threads;
    double rate;               /* 0: closed loop */
    int32_t arrival;           /* BT_ARRIVAL_* */
    int64_t max_events;        /* 0: unlimited */
    int32_t rand_type;         /* BT_DIST_* used by BT_DIST_DEFAULT */
    int32_t rand_spec_iter;    /* 12 */
    double rand_spec_pct;      /* 1 */
    double rand_spec_res;      /* 75 */
    double rand_pareto_h;      /* 0.2 */
    double rand_zipfian_exp;   /* 0.8 */
    uint64_t seed;             /* 0: from the clock */
    int32_t reconnect_every;   /* 0: never; N: new connection every N transactions */
    int32_t ignore_all_errors;
    const int32_t *ignore_codes;   /* extra codes (MySQL errno, or PG SQLSTATE as base-36) */
    int32_t nignore_codes;
    int32_t max_retries;       /* per transaction for retryable errors; 0 = unlimited */
    const bt_group *groups;    /* NULL/0: one group from threads, rate and the program's weights */
    int32_t ngroups;
    int32_t idle_workers;      /* 1: workers run under SCHED_IDLE from the start, so a server
                                  sharing this host takes its CPU first (target/locality.py) */
    int32_t loop_threads;      /* 0: a thread per connection; J > 0: each group's threads (and
                                  groups' threads) count connections, driven by J event-loop
                                  threads per group (epoll; MySQL and PostgreSQL drivers) */
} bt_config;

/* ---- snapshot ------------------------------------------------------------ *
 * Cumulative counters since start, merged from every worker (running or
 * retired) without stopping them.  Interval figures are differences between
 * two snapshots (benchtop/engine computes them).  The caller passes buffers
 * of bt_hist_nbuckets() uint64 for the histograms.
 */
typedef struct {
    double t;                         /* seconds since start */
    int32_t state;                    /* BT_STATE_* */
    int32_t threads_target;
    int32_t threads_running;          /* started and not retired */
    int32_t in_flight;                /* workers inside a transaction now */
    uint64_t unfinished;              /* transactions cut short at a stop (bt_engine_abort_io) */
    int32_t paused;
    double rate;                      /* current target, 0 = closed loop */
    uint64_t transactions;            /* committed (== sum of latency histogram) */
    uint64_t rollbacks;               /* transactions ended by a workload rollback */
    uint64_t queries[3];              /* BT_QK_READ/WRITE/OTHER */
    uint64_t errors[8];               /* by BT_ERRK_* */
    uint64_t retries;                 /* transactions retried after a retryable error */
    uint64_t reconnects;
    uint64_t connects;
    uint64_t connect_ns_sum;
    uint64_t connect_ns_max;
    uint64_t connect_failures;        /* connection attempts that failed (refused, too many, denied) */
    int32_t connected;                /* running workers holding a connection now */
    int32_t connections_served;       /* connections that completed a transaction */
    int32_t loops_running;            /* event-loop threads running */
    uint64_t latency_ns_sum;          /* corrected (from intended start) */
    uint64_t latency_ns_min;
    uint64_t latency_ns_max;
    uint64_t service_ns_sum;          /* from the actual start */
    uint64_t service_ns_max;
    uint64_t busy_ns;                 /* integral of busy workers over time */
    double queue_ns;                  /* integral of queue length over time (tickets x ns) */
    uint64_t tickets_due;             /* open loop: intended starts so far */
    uint64_t txn_by_type[32];         /* committed (not rolled back), per transaction type */
    uint64_t txn_ns_by_type[32];      /* latency sum, per transaction type */
    uint64_t svc_ns_by_type[32];      /* service time sum (from the actual start), per transaction type */
    uint64_t rows_loaded;             /* bulk load progress */
    char error[512];                  /* the fatal error, if state == FAILED */
    char connect_error[256];          /* the server's word on the latest refused connection attempt */
    char lost_error[256];             /* why the latest lost connection was lost */
} bt_snapshot;

typedef struct bt_engine bt_engine;

/* ---- engine API ------------------------------------------------------------ */
const char *bt_version(void);
const char *bt_strerror(int rc);
int bt_driver_available(int driver);

int bt_engine_new(const bt_config *cfg, bt_engine **out);
int bt_engine_start(bt_engine *e);
/* The run's clock starts once every connection asked for at the start has
 * made its first attempt: 1 once it has (or the engine no longer runs), 0
 * when timeout_ms passed first.  Snapshots' t counts from there. */
int32_t bt_engine_wait_started(bt_engine *e, int32_t timeout_ms);
/* When the run started (CLOCK_MONOTONIC ns; 0: not yet). */
uint64_t bt_engine_start_ns(bt_engine *e);
int bt_engine_set_threads(bt_engine *e, int32_t n);
int bt_engine_set_rate(bt_engine *e, double rate, int32_t arrival);
int bt_engine_set_paused(bt_engine *e, int32_t paused);
int bt_engine_stop(bt_engine *e);          /* ask workers to stop; returns at once */
int bt_engine_join(bt_engine *e);          /* wait until every worker has exited */
int32_t bt_engine_join_timeout(bt_engine *e, int32_t timeout_ms); /* workers still running after it (0: all joined) */
int32_t bt_engine_abort_io(bt_engine *e);  /* after stop: shut down the workers' sockets; returns how many */
int32_t bt_engine_state(bt_engine *e);   /* BT_STATE_* without a snapshot's cost (BT_STATE_FAILED for NULL) */
int bt_engine_snapshot(bt_engine *e, bt_snapshot *out, uint64_t *lat_hist, uint64_t *svc_hist);
/* Latency histogram of one transaction type (workloads with several types),
 * merged over every worker like the main one. */
int bt_engine_type_hist(bt_engine *e, int32_t type, uint64_t *out);
/* Latency histogram of the statements of one kind (BT_QK_*), for programs
 * with time_queries set; all zeros otherwise. */
int bt_engine_query_hist(bt_engine *e, int32_t kind, uint64_t *out);
int32_t bt_engine_free(bt_engine *e);  /* workers abandoned (they free the engine when they exit) */

/* Thread groups: bt_engine_set_threads/set_rate act on group 0. */
int bt_engine_set_group_threads(bt_engine *e, int32_t group, int32_t n);
int bt_engine_set_group_rate(bt_engine *e, int32_t group, double rate, int32_t arrival);
int bt_engine_group_snapshot(bt_engine *e, int32_t group, bt_group_snapshot *out, uint64_t *lat_hist,
                             uint64_t *svc_hist);

/* Bulk load with the engine's connection settings on `threads` threads. */
int bt_engine_load(bt_engine *e, const bt_load *load, int32_t threads);

/* One statement on a fresh connection (DDL, cleanup, checks).  If `out` is
 * non-NULL, the first column of the first row is written there as text
 * (truncated to outlen). errbuf receives the server's message. */
int bt_exec_sql(const bt_conn_config *conn, const char *sql, char *out, int32_t outlen,
                char *errbuf, int32_t errlen);

/* ---- histogram layout ----------------------------------------------------- */
int32_t bt_hist_nbuckets(void);
uint64_t bt_hist_bucket_low(int32_t i);    /* ns, inclusive */
uint64_t bt_hist_bucket_high(int32_t i);   /* ns, exclusive */
int32_t bt_hist_index(uint64_t ns);

#endif
