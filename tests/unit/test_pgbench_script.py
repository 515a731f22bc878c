"""pgbench custom scripts translated for the native engine: what runs, what
is refused (with the script's own line number)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from benchtop.workload import program as P
from benchtop.workload.compiler import WorkloadError
from benchtop.workload.pgbench_script import (ScriptSpec, parse_defines, parse_script_arg, pgbench_program,
                                              translate)

TPCB_LIKE = (ROOT / "workloads" / "examples" / "pgbench_tpcb_like.sql").read_text()


def test_tpcb_like_translates_line_for_line() -> None:
    out = translate(TPCB_LIKE, "t.sql").splitlines()
    assert out[1] == "set aid = random(1, 100000 * scale)"
    assert out[5] == "exec begin: BEGIN"
    assert out[6].startswith("exec write: UPDATE pgbench_accounts SET abalance = abalance + :delta")
    assert out[7].startswith("exec read: SELECT abalance")
    assert out[11] == "exec commit: END"
    assert len(out) == len(TPCB_LIKE.splitlines())


def test_program_of_weighted_scripts(tmp_path: Path) -> None:
    a, b = tmp_path / "tpcb.sql", tmp_path / "sel.sql"
    a.write_text(TPCB_LIKE)
    b.write_text("\\set aid random_zipfian(1, 100000 * :scale, 1.07)\nSELECT abalance FROM pgbench_accounts\n"
                 "  WHERE aid = :aid;\n")
    prog = pgbench_program([parse_script_arg(f"{a}@1"), parse_script_arg(f"{b}@3")], "postgresql",
                           parse_defines(["scale=10"]))
    assert [(t.name, t.weight) for t in prog.txn_types] == [("tpcb", 1), ("sel", 3)]
    zipf = [op for op in prog.ops if op[0] == P.OP_RAND_PARAM["random_zipfian"]]
    assert zipf and zipf[0][3] == 1_070_000 and zipf[0][6] == 1_000_000  # parameter, high = 100000 * scale
    assert any(s.sql == "SELECT abalance FROM pgbench_accounts WHERE aid = ?" for s in prog.stmts)


def test_gset_sleep_and_functions(tmp_path: Path) -> None:
    text = ("\\set aid least(greatest(abs(-3), 1), 10) + mod(17, 5)\n"
            "\\set g random_gaussian(1, 100, 2.5)\n"
            "SELECT abalance AS before\n  FROM pgbench_accounts WHERE aid = :aid \\gset p_\n"
            "\\set after :p_before + :g\n"
            "\\sleep 2 ms\n"
            "UPDATE pgbench_accounts SET abalance = :after WHERE aid = :aid;\n")
    out = translate(text, "g.sql").splitlines()
    assert out[2] == "exec read -> p_before: SELECT abalance AS before FROM pgbench_accounts WHERE aid = :aid"
    assert out[3] == "" and out[5] == "sleep (2) * 1000"
    f = tmp_path / "g.sql"
    f.write_text(text)
    prog = pgbench_program([ScriptSpec(str(f))], "postgresql", parse_defines([]))
    assert prog.ops[0][:2] == (P.OP_SET, 0) and prog.ops[0][5] == 5  # folded: least(greatest(3, 1), 10) + 2


@pytest.mark.parametrize("text, message", [
    ("\\set a 1\n\\if :a = 1\nSELECT 1;\n\\endif\n", "x.sql:2: \\\\if is not supported"),
    ("SELECT 1;\n\\setshell v echo 1\n", "x.sql:2: \\\\setshell is not supported"),
    ("SELECT 1;\n\\gset\n", "x.sql:2: \\\\gset must end a query"),
    ("SELECT a, b FROM t \\gset\n", "x.sql:1: \\\\gset stores one column"),
    ("SELECT 1 \\aset\n", "x.sql:1: \\\\aset after a query is not supported"),
    ("\\set z random_zipfian(1, 10, 0.5)\nSELECT 1;\n", "x.sql:1: random_zipfian\\(\\): the parameter must be"),
    ("\\set z random(1, 10) * 1.5\nSELECT 1;\n", "x.sql:1: .*decimal numbers are only allowed"),
    ("\\set z hash(1)\nSELECT 1;\n", "x.sql:1: unknown function hash"),
    ("\\set z 1\n", "the script runs no SQL"),
])
def test_unsupported_is_refused_with_the_line(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "x.sql"
    f.write_text(text)
    with pytest.raises(WorkloadError, match=message):
        pgbench_program([ScriptSpec(str(f))], "postgresql", parse_defines([]))


def test_arguments() -> None:
    assert parse_script_arg("a.sql") == ScriptSpec("a.sql", 1)
    assert parse_script_arg("dir@x/a.sql") == ScriptSpec("dir@x/a.sql", 1)
    assert parse_defines(["scale=3", "n=-2"]) == {"scale": 3, "n": -2}
    with pytest.raises(WorkloadError, match="NAME=INTEGER"):
        parse_defines(["scale"])
    with pytest.raises(WorkloadError, match="at least 1"):
        parse_script_arg("a.sql@0")
