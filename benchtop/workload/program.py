"""A compiled workload: the flat op array the C interpreter runs, plus what
`prepare`/`cleanup` need.  Plain data; benchtop.engine turns it into structs.

Op and constant numbers mirror native/benchtop_api.h.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OP_SET, OP_RAND, OP_STR, OP_EXEC, OP_LOOP, OP_BEGIN_IF, OP_UNIQUE, OP_ROLLBACK_IF, OP_SLEEP_US = range(1, 10)
OP_ARITH, OP_WORDS = 10, 11
# pgbench's random_gaussian / random_exponential / random_zipfian (parameter in millionths in c)
OP_RAND_PARAM = {"random_gaussian": 12, "random_exponential": 13, "random_zipfian": 14}
# BT_ARITH_* operators of OP_ARITH, by the spelling workload scripts use
ARITH = {"+": 0, "-": 1, "*": 2, "/": 3, "%": 4, "<": 5, "<=": 6, ">": 7, ">=": 8, "==": 9, "!=": 10,
         "and": 11, "or": 12, "|": 13, "&": 14, "min": 15, "max": 16}
DIST = {"uniform": 0, "gaussian": 1, "special": 2, "pareto": 3, "zipfian": 4, "rand": 9}
QK = {"read": 0, "write": 1, "other": 2}
PARAM_REG, PARAM_SREG, PARAM_CONST, PARAM_NULL = range(4)
GEN_SEQ, GEN_RAND, GEN_TEMPLATE, GEN_CONST, GEN_DIV, GEN_LITERAL, GEN_MOD, GEN_DECIMAL, GEN_WORDS = range(9)
# bytes a stored row takes besides its values (header, slot, index entry), roughly
ROW_OVERHEAD = 32
NREGS, NSREGS, MAX_PARAMS, MAX_TXN_TYPES, MAX_GROUPS = 64, 16, 32, 32, 8
ENGINES = ("mysql", "postgresql", "sqlite", "null")


@dataclass(frozen=True, slots=True)
class Stmt:
    sql: str
    table_reg: int
    nparams: int
    kind: int
    is_begin: int  # 1 BEGIN, 2 COMMIT, 0 other


@dataclass(frozen=True, slots=True)
class TxnType:
    name: str
    weight: int
    first_op: int
    nops: int


@dataclass(frozen=True, slots=True)
class Group:
    """A workload's `[[group]]`: a pool of threads with its own rate running
    some of the transaction types (`weights` by type index; 0: not run)."""

    name: str
    threads: int
    rate: float
    arrival: str
    weights: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Gen:
    kind: int
    dist: int = 0
    lo: int = 0
    hi: int = 0
    text: str | None = None


@dataclass(frozen=True, slots=True)
class LoadSpec:
    insert_prefix: str
    cols: tuple[Gen, ...]
    first_table: int
    last_table: int
    rows: int
    rows_per_insert: int = 1000
    rows_per_commit: int = 0
    # the rows that make the table complete when another tool loaded it, when these vary by design
    # (TPC-C's order lines: 5 to 15 per order); None: exactly `rows`
    complete_between: tuple[int, int] | None = None

    @property
    def row_bytes(self) -> int:
        """A loaded row's size on disk, roughly: its text as generated, 8 bytes
        a number, and a row header (the estimate a free-space check needs,
        within a factor of two of what SQLite, InnoDB and PostgreSQL store)."""
        text = sum(len(g.text or "") * (g.hi if g.kind == GEN_WORDS else 1) for g in self.cols)
        return ROW_OVERHEAD + text + 8 * sum(1 for g in self.cols if g.text is None)


@dataclass(frozen=True, slots=True)
class Schema:
    """Per-table statements, already chosen for one engine; "{t}" is the table number."""

    tables: int
    create: tuple[str, ...] = ()
    after_load: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    check: str = ""
    once_before: tuple[str, ...] = ()  # not per table (e.g. CREATE EXTENSION)

    def per_table(self, stmts: tuple[str, ...], table: int) -> list[str]:
        return [s.replace("{t}", str(table)) for s in stmts]


@dataclass(frozen=True, slots=True)
class Program:
    name: str
    engine: str
    options: dict[str, object]
    ops: tuple[tuple[int, int, int, int, int, int, int], ...]
    params: tuple[tuple[int, int, int], ...]
    stmts: tuple[Stmt, ...]
    strings: tuple[str, ...]
    txn_types: tuple[TxnType, ...]
    init_regs: tuple[int, ...]
    max_table: int
    schema: Schema | None = None
    loads: tuple[LoadSpec, ...] = ()
    description: str = ""
    source: str = ""
    read_only: bool = False
    extra: dict[str, object] = field(default_factory=dict)
    groups: tuple[Group, ...] = ()
    presets: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> "group.key=value" settings
    # names of the query kinds (read, write, other) when each statement's
    # latency is measured apart (fileio: read, write, fsync); () when not
    query_kinds: tuple[str, ...] = ()
    # pgbench scripts: an expression that fails (division by zero, an empty
    # random range) aborts the client, as pgbench does, instead of giving 0
    strict_eval: bool = False

    @property
    def txn_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.txn_types)

    @property
    def writing_types(self) -> tuple[bool, ...]:
        """Per transaction type: whether it runs a statement marked write
        (what its host writes and WAL are charged by, benchtop.run.costs)."""
        return tuple(any(op[0] == OP_EXEC and op[5] == QK["write"] for op in self.ops[t.first_op : t.first_op + t.nops])
                     for t in self.txn_types)
