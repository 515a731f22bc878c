"""Workload files compile for every engine; malformed ones name file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchtop.workload import WorkloadError, builtin_names, builtin_program, load_program
from benchtop.workload import program as P

ENGINES = ("mysql", "postgresql", "sqlite", "null")


@pytest.mark.parametrize("name", builtin_names())
@pytest.mark.parametrize("engine", ENGINES)
def test_every_builtin_compiles(name: str, engine: str) -> None:
    p = builtin_program(name, engine)
    assert p.txn_types and p.ops
    for op in p.ops:
        if op[0] == P.OP_EXEC:
            assert 0 <= op[3] < len(p.stmts)


def test_oltp_read_write_matches_sysbench_statement_mix() -> None:
    p = builtin_program("oltp_read_write", "mysql")
    sqls = [s.sql for s in p.stmts]
    assert "SELECT c FROM sbtest{t} WHERE id=?" in sqls
    assert "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c" in sqls
    assert "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)" in sqls
    assert p.stmts[0].sql == "BEGIN" and p.stmts[0].is_begin == 1
    schema = p.schema
    assert schema is not None and "CHAR(120)" in schema.create[0] and "AUTO_INCREMENT" in schema.create[0]
    assert schema.indexes == ("CREATE INDEX k_{t} ON sbtest{t}(k)",)


def test_options_are_compile_time(tmp_path: Path) -> None:
    p = builtin_program("oltp_read_write", "mysql", skip_trx="on", range_selects="off")
    sqls = [s.sql for s in p.stmts]
    assert "BEGIN" not in sqls and not any("BETWEEN" in s for s in sqls)
    with pytest.raises(WorkloadError, match="--skip-trx takes on/off"):
        builtin_program("oltp_read_write", "mysql", skip_trx="maybe")


@pytest.mark.parametrize(
    "body, line, message",
    [
        ("[[transaction]]\nname = 'x'\nscript = '''\nset a = rand(1, 10)\nexec read: SELECT :b\n'''\n", 5, "unknown variable 'b'"),
        ("[[transaction]]\nscript = '''\nloop 3\nset a = 1\n'''\n", 3, "never closed"),
        ("[[transaction]]\nscript = '''\nfrobnicate\n'''\n", 3, "unknown step 'frobnicate'"),
        ("name = \n", 1, "invalid TOML"),
        ("[[transaction]]\nscript = '''\nexec read: SELECT * FROM t{t}\n'''\n", 3, "no table variable"),
        ("[[transaction]]\nscript = '''\nset x = frobnicate(1, 2)\n'''\n", 3, "unknown function"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, body: str, line: int, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(body)
    with pytest.raises(WorkloadError) as exc:
        load_program(str(f), "sqlite")
    text = str(exc.value)
    assert text.startswith(f"{f}:{line}:"), text
    assert message in text
    assert "\n" not in text


def test_unknown_workload_lists_choices() -> None:
    with pytest.raises(WorkloadError, match="unknown workload 'nope'.*oltp_read_write"):
        load_program("nope", "sqlite")


@pytest.mark.parametrize("between", ['["rows"]', '[2000, 500]', '["nope", 2000]'])
def test_complete_between_must_bracket_the_rows_loaded(tmp_path: Path, between: str) -> None:
    f = tmp_path / "w.toml"
    f.write_text("[schema]\ncreate = ['CREATE TABLE t{t} (a int)']\n"
                 "[[load]]\ninsert = 'INSERT INTO t{t} (a) VALUES '\nrows = 1000\ncolumns = ['seq']\n"
                 f"complete_between = {between}\n"
                 "[[transaction]]\nscript = '''\nexec read: SELECT 1\n'''\n")
    with pytest.raises(WorkloadError, match=r"complete_between must be \[LOW, HIGH\] around rows"):
        load_program(str(f), "sqlite")


def test_tpcc_order_lines_are_complete_at_5_to_15_per_order() -> None:
    from benchtop.workload.tables import Asked, asked_rows

    program = load_program("tpcc", "mysql", {"scale": "2", "customers": "300", "items": "1000"})
    asked = asked_rows(program, 1)
    assert asked["order_line1"] == Asked(2 * 10 * 300 * 10, 2 * 10 * 300 * 5, 2 * 10 * 300 * 15)
    assert asked["orders1"] == Asked(6000, 6000, 6000)  # the fixed cardinalities stay exact
