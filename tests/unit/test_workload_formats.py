"""The workload files added for TPC-C, TPC-B, LinkBench and the examples
compile for every engine; the script language's expressions mean what the
docs say (checked with a small evaluator of the compiled ops); malformed
files fail with FILE:LINE."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from benchtop.workload import (
    BUILTIN_DIR,
    builtin_program,
    load_program,
    resolve,
    workload_extra_lines,
)
from benchtop.workload import program as P
from benchtop.workload.compiler import WorkloadError, SourceText, compile_definition

NEW = ["tpcc", "tpcb", "tpcb_select_only", "linkbench"]
EXAMPLES = sorted((BUILTIN_DIR / "examples").glob("*.toml"))
ENGINES = ("mysql", "postgresql", "sqlite", "null")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", NEW + [str(p) for p in EXAMPLES])
def test_new_workloads_compile(name: str, engine: str) -> None:
    p = load_program(name, engine)
    assert p.txn_types and p.schema is not None and p.loads
    assert all(0 <= s.nparams <= P.MAX_PARAMS for s in p.stmts)
    assert len({i for op in p.ops for i in (op[1],) if op[0] in (P.OP_SET, P.OP_RAND, P.OP_ARITH)}) <= P.NREGS


def test_two_examples_ship() -> None:
    assert {p.stem for p in EXAMPLES} == {"kv_cache", "bank_transfer"}


def test_pgbench_names_resolve() -> None:
    assert resolve("tpcb-select-only").name == "tpcb_select_only.toml"
    p = builtin_program("tpcb-select-only", "postgresql", scale=3)
    assert p.txn_names == ("select_only",) and p.read_only
    assert [s.sql for s in p.stmts] == ["SELECT abalance FROM pgbench_accounts WHERE aid = ?"]


def test_tpcc_mix_and_options() -> None:
    p = builtin_program("tpcc", "mysql", scale=4, tables=2, trx_level="RC")
    # a deck of 23 cards (TPC-C 5.2.4.2): 43.5% payment, 4.3% each of the small three
    assert {t.name: t.weight for t in p.txn_types} == {
        "new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1}
    assert p.schema is not None and p.schema.tables == 2
    assert any("READ COMMITTED" in s.sql for s in p.stmts)
    assert not any("REPEATABLE READ" in s.sql for s in p.stmts)
    fk = builtin_program("tpcc", "postgresql", use_fk=False).schema
    assert fk is not None and fk.after_load == ()
    with pytest.raises(WorkloadError, match="--trx-level takes RC, RR, SER"):
        builtin_program("tpcc", "mysql", trx_level="XX")
    with pytest.raises(WorkloadError, match="--scale must be at least 1, not 0"):
        builtin_program("tpcc", "mysql", scale=0)


def test_tpcc_load_matches_consistency_at_small_scale() -> None:
    """The generated rows per table set: the counts TPC-C's population has."""
    p = builtin_program("tpcc", "sqlite", scale=2, customers=300, items=1000)
    rows = {ld.insert_prefix.split()[2].split("{")[0]: 0 for ld in p.loads}
    for ld in p.loads:
        rows[ld.insert_prefix.split()[2].split("{")[0]] += ld.rows
    assert rows == {"item": 1000, "warehouse": 2, "district": 20, "customer": 6000, "history": 6000,
                    "orders": 6000, "new_orders": 1800, "order_line": 60000, "stock": 2000}


def test_tpmc_line() -> None:
    from types import SimpleNamespace as NS

    p = builtin_program("tpcc", "null")
    lines = workload_extra_lines(p, NS(time_s=60.0, transactions=10, txn_types={"new_order": 120}))
    assert lines and "tpmC:" in lines[0] and "120.00" in lines[0]
    lb = workload_extra_lines(builtin_program("linkbench", "null"),
                              NS(time_s=2.0, transactions=4, txn_types={"get_node": 3, "add_link": 1}))
    assert any("get_node:" in ln and "75.0%" in ln for ln in lb)


def test_linkbench_weights_follow_fbworkload() -> None:
    p = builtin_program("linkbench", "postgresql")
    w = {t.name: t.weight for t in p.txn_types}
    assert len(w) == 11 and abs(sum(w.values()) - 1_000_000) < 100
    assert w["get_link_list"] / sum(w.values()) == pytest.approx(0.507, abs=0.001)


# ------------------------------------------------------------- expressions


class _Eval:
    """Runs SET/RAND(uniform)/ARITH/BEGIN_IF/LOOP ops like native/workload.c."""

    def __init__(self, program: P.Program, seed: int = 1) -> None:
        self.p, self.r = program, [0] * P.NREGS
        self.rng = random.Random(seed)

    def run(self, first: int = 0, n: int | None = None) -> None:
        from benchtop.workload.expr import fold_constant

        names = {v: k for k, v in P.ARITH.items()}
        ops = self.p.ops
        end = len(ops) if n is None else first + n
        pc = first
        while pc < end:
            code, a, b, c, d, x, y = ops[pc]
            lhs = (self.r[b] if b >= 0 else 0) + x
            if code == P.OP_SET:
                self.r[a] = lhs
            elif code == P.OP_RAND:
                self.r[a] = self.rng.randint(lhs, (self.r[d] if d >= 0 else 0) + y)
            elif code == P.OP_ARITH:
                self.r[a] = fold_constant(names[c], lhs, (self.r[d] if d >= 0 else 0) + y)
            elif code == P.OP_BEGIN_IF and self.r[a] == 0:
                pc += d
            elif code == P.OP_LOOP:
                for _ in range(lhs):
                    self.run(pc + 1, d)
                pc += d
            pc += 1

    def values(self) -> list[int]:
        """The parameters of the last statement: the variables it names."""
        return [self.r[reg] for kind, reg, _ in self.p.params[-self.p.stmts[-1].nparams:]]


def _compile(script: str, names: str, options: dict | None = None) -> P.Program:
    script += "\nexec read: SELECT " + ", ".join(":" + n for n in names.split())
    data = {"options": options or {}, "transaction": [{"name": "t", "script": script}]}
    return compile_definition(data, SourceText("test.toml", script), "null")


def test_arithmetic_precedence_and_truncation() -> None:
    src = "set a = 7\nset b = a * 3 - 1\nset c = -b / 4\nset d = b % 6 + (a >= 7) * 100\nset e = not (a == 7) or b > 19"
    ev = _Eval(_compile(src, "a b c d e"))
    ev.run()
    assert ev.values() == [7, 20, -5, 102, 1]


def test_remote_warehouse_is_never_home() -> None:
    src = ("set w = uniform(1, scale)\nset other = uniform(1, scale - 1)\n"
           "set s = other + (other >= w)")
    prog = _compile(src, "w s", {"scale": 4})
    seen = set()
    for seed in range(400):
        ev = _Eval(prog, seed)
        ev.run()
        w, s = ev.values()
        assert s != w and 1 <= s <= 4
        seen.add(s)
    assert seen == {1, 2, 3, 4}


def test_nurand_stays_in_range() -> None:
    src = "set c = nurand(1023, 1, 3000)"
    prog = _compile(src, "c")
    values = []
    for seed in range(300):
        ev = _Eval(prog, seed)
        ev.run()
        values.append(ev.values()[0])
    assert min(values) >= 1 and max(values) <= 3000 and len(set(values)) > 100


def test_compile_time_conditions_remove_blocks() -> None:
    src = 'if mode == "a"\n  exec read: SELECT 1\nend\nif scale > 1\n  exec read: SELECT 2\nend'
    p = _compile(src, "scale", {"mode": "a", "scale": 1})
    assert [s.sql for s in p.stmts] == ["SELECT 1", "SELECT ?"]
    assert not any(op[0] == P.OP_BEGIN_IF for op in p.ops)


def test_counter_starts_at_zero_and_words_op() -> None:
    ev = _Eval(_compile("set n = n + 1\nset n = n + 1", "n"))
    ev.run()
    ev.run()
    assert ev.values() == [4]
    data = {"strings": {"syl": "A,B,C"}, "transaction": [{"script": "set n = n + 1\nset $w = words(syl, n * 10 + 1, 3)\nexec read: SELECT :$w"}]}
    p = compile_definition(data, SourceText("w.toml", ""), "sqlite")
    words = [op for op in p.ops if op[0] == P.OP_WORDS]
    assert len(words) == 1 and p.strings[words[0][3]] == "A,B,C" and words[0][4] == 3


# ------------------------------------------------------------- errors

BAD = [
    ("set x = foo(1)\n", "unknown function foo()"),
    ("set x = (1 +\n", "ends too early"),
    ("set x = 1\nrollback if\n", "expected: rollback if CONDITION"),
    ("set $s = words(syl, 1)\n", "words() takes"),
    ("set x = y * 2\n", "unknown variable 'y'"),
    ("set x = uniform(1, 2) + 'a'\n", "strings can only be compared"),
    ("set x = 1\nif x > \nend\n", "ends too early"),
]


@pytest.mark.parametrize("script,problem", BAD)
def test_malformed_scripts_name_file_and_line(tmp_path: Path, script: str, problem: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("name = 'bad'\n[strings]\nsyl = 'A,B'\n\n[[transaction]]\nscript = '''\n" + script + "'''\n")
    with pytest.raises(WorkloadError) as exc:
        load_program(str(f), "sqlite")
    msg = str(exc.value)
    assert re.match(rf"^{re.escape(str(f))}:\d+: ", msg), msg
    assert problem in msg
    bad_line = int(msg.split(":")[1])
    offending = f.read_text().splitlines()[bad_line - 1]
    assert offending.strip() and offending.strip() in script


def test_malformed_load_column_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "load.toml"
    f.write_text("[schema]\ntables = 1\ncreate.default = ['CREATE TABLE x (a int)']\n\n[[load]]\n"
                 "insert = 'INSERT INTO x (a) VALUES '\nrows = 10\ncolumns = ['mod(0, 5)']\n\n"
                 "[[transaction]]\nscript = 'exec read: SELECT 1'\n")
    with pytest.raises(WorkloadError, match=rf"^{re.escape(str(f))}:5: load column 'mod\(0, 5\)'"):
        load_program(str(f), "sqlite")
