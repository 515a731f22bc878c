"""benchtop capture and workload from-capture, the pure parts: placeholders
read from digest texts, values fitted, the window's deltas, and the workload
file written, which must compile and carry the captured rate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchtop.capture.fit import Pool, fit, fit_one
from benchtop.capture.model import (Capture, CaptureError, Column, Placeholder, Statement, read_capture,
                                    write_capture)
from benchtop.capture.normalize import (literal_values, placeholder_sites, runnable, split_at_placeholders,
                                        with_numbered_params)
from benchtop.capture.order import Seen
from benchtop.capture.model import Order
from benchtop.capture.twin import twin_toml
from benchtop.capture.window import Totals, capture
from benchtop.commands.workload import main as workload_main
from benchtop.options.run_options import options_from_argv
from benchtop.workload import file_run_defaults, load_program

# what MariaDB's events_statements_summary_by_digest shows of sysbench oltp_read_write (--db-ps-mode=disable)
SYSBENCH = [
    ("BEGIN ", 1000, 0, 0, 0),
    ("SELECT `c` FROM `sbtest1` WHERE ID = ? ", 10000, 10000, 0, 10000),
    ("SELECT `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ? ", 1000, 100000, 0, 100000),
    ("SELECT SUM ( `k` ) FROM `sbtest1` WHERE ID BETWEEN ? AND ? ", 1000, 1000, 0, 100000),
    ("UPDATE `sbtest1` SET `k` = `k` + ? WHERE ID = ? ", 1000, 0, 1000, 1000),
    ("UPDATE `sbtest1` SET `c` = ? WHERE ID = ? ", 1000, 0, 1000, 1000),
    ("DELETE FROM `sbtest1` WHERE ID = ? ", 1000, 0, 1000, 1000),
    ("INSERT INTO `sbtest1` ( ID , `k` , `c` , `pad` ) VALUES (...) ", 1000, 0, 1000, 0),
    ("COMMIT ", 1000, 0, 0, 0),
]
_COLUMNS = {"ID": Column("sbtest1", "id", True, 1, 10000), "k": Column("sbtest1", "k", True, 1, 10000),
            "c": Column("sbtest1", "c", False, length=120), "pad": Column("sbtest1", "pad", False, length=60)}


class FakeReader:
    """Canned digest totals: `before` at the window's start, `after` at its end."""

    engine = "mysql"
    target = "mysql://u@h:3306/sbtest"
    version = "10.11"
    sample_source = "column statistics"
    order_source = "performance_schema.events_statements_history_long"
    whole_transactions = True

    def __init__(self, before: dict[str, Totals], after: dict[str, Totals],
                 samples: list[tuple[str, list[str]]] = (), commits: list[int] = (), in_txns: list[Seen] = ()) -> None:
        self._readings = [before, after]
        self._in_txns = list(in_txns)
        self._commits = list(commits)
        self._samples = list(samples)

    def totals(self) -> dict[str, Totals]:
        return self._readings.pop(0)

    def samples(self) -> list[tuple[str, list[str]]]:
        out, self._samples = self._samples, []
        return out

    def literals(self) -> bool:
        return True

    def in_transactions(self) -> list[Seen]:
        return self._in_txns

    def notes(self) -> list[str]:
        return []

    def commits(self) -> int | None:
        return self._commits.pop(0) if self._commits else None

    def column(self, table: str, name: str) -> Column | None:
        return _COLUMNS.get(name)

    def close(self) -> None:
        pass


def _sysbench_capture(window_s: float = 10.0) -> Capture:
    before = {f"d{i}": Totals(text, 5, 1.0, 1, 1, 1) for i, (text, *_rest) in enumerate(SYSBENCH)}
    after = {f"d{i}": Totals(text, 5 + calls, 1.0 + calls * 0.1, 1 + sent, 1 + affected, 1 + examined)
             for i, (text, calls, sent, affected, examined) in enumerate(SYSBENCH)}
    clock = iter([0.0, 0.0, window_s, window_s])
    return capture(FakeReader(before, after), window_s, clock=lambda: next(clock), wait=lambda s: None)


def test_placeholders_of_sysbench_digests_name_their_columns() -> None:
    sites = placeholder_sites("INSERT INTO `sbtest1` ( ID , `k` , `c` , `pad` ) VALUES (...) ")
    assert [(s.role, s.table, s.column) for s in sites] == [
        ("insert", "sbtest1", "ID"), ("insert", "sbtest1", "k"), ("insert", "sbtest1", "c"),
        ("insert", "sbtest1", "pad")]
    sites = placeholder_sites("SELECT DISTINCTROW `c` FROM `sbtest2` WHERE ID BETWEEN ? AND ? ORDER BY `c` ")
    assert [(s.role, s.column) for s in sites] == [("between_lo", "ID"), ("between_hi", "ID")]


def test_a_digest_runs_again_as_it_was_digested() -> None:
    """MySQL reads `SUM (` as a stored function: the digest's blank goes."""
    text = runnable("SELECT SUM ( `k` ) FROM `sbtest1` WHERE ID BETWEEN ? AND ? ", "mysql")
    assert text.startswith("SELECT SUM( `k` )")
    assert split_at_placeholders(runnable("INSERT INTO `t` ( ID , `k` ) VALUES (...)", "mysql")) == [
        "INSERT INTO `t` ( ID , `k` ) VALUES(", ", ", ")"]


def test_pgbench_queries_match_pg_stat_statements_texts() -> None:
    """pg_stat_activity's text with its literals numbered is pg_stat_statements' text, negative numbers whole."""
    seen = "UPDATE pgbench_accounts SET abalance = abalance + -4211 WHERE aid = 140233;"
    text, values = with_numbered_params(seen)
    assert text == "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
    assert values == ["-4211", "140233"] == literal_values(seen)
    text, values = with_numbered_params(
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 3, -2, CURRENT_TIMESTAMP);")
    assert text == "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
    assert values == ["7", "1", "3", "-2"]


def test_the_window_counts_what_ran_in_it() -> None:
    cap = _sysbench_capture()
    assert cap.transactions == 1000 and cap.commits == 1000
    assert cap.rate == pytest.approx(100.0)
    point = next(s for s in cap.statements if s.text.startswith("SELECT `c` FROM `sbtest1` WHERE ID = "))
    assert (point.calls, point.rows_sent, point.kind) == (10000, 10000, "read")
    assert point.mean_ms == pytest.approx(0.1)
    assert point.placeholders[0].column == _COLUMNS["ID"]


def test_a_statement_new_in_the_window_or_reset_counts_whole() -> None:
    before = {"a": Totals("SELECT 1", 50, 5.0)}
    after = {"a": Totals("SELECT 1", 20, 2.0), "b": Totals("BEGIN", 7, 0.1)}
    clock = iter([0.0, 0.0, 2.0, 2.0])
    cap = capture(FakeReader(before, after), 2.0, clock=lambda: next(clock), wait=lambda s: None)
    assert {s.text: s.calls for s in cap.statements} == {"SELECT 1": 20, "BEGIN": 7}


def test_samples_reach_their_placeholders() -> None:
    before = {"a": Totals("SELECT c FROM t WHERE id = $1", 0, 0.0)}
    after = {"a": Totals("SELECT c FROM t WHERE id = $1", 30, 3.0, 30)}
    clock = iter([0.0, 0.0, 0.5, 1.0, 1.0])
    reader = FakeReader(before, after, [("a", ["5"]), ("a", ["9"]), ("zz", ["1"])])
    cap = capture(reader, 1.0, clock=lambda: next(clock), wait=lambda s: None)
    assert cap.statements[0].placeholders[0].samples == ("5", "9")


def test_capture_json_round_trips(tmp_path: Path) -> None:
    cap = _sysbench_capture()
    write_capture(tmp_path, cap)
    assert read_capture(tmp_path) == cap
    with pytest.raises(CaptureError, match="no capture.json"):
        read_capture(tmp_path / "nowhere")


def test_fitting_keeps_a_range_width_and_pools_columns() -> None:
    cap = _sysbench_capture()
    rng = next(s for s in cap.statements if "BETWEEN" in s.text and "SUM" not in s.text)
    lo, width = fit(rng)
    assert (lo.kind, lo.lo, lo.hi) == ("int", 1, 10000)
    assert (width.kind, width.lo) == ("width", 99)
    # SUM returns one row: the width comes from the rows it examined
    assert fit(next(s for s in cap.statements if "SUM" in s.text))[1].lo == 99
    # a column seen once here, often elsewhere, takes the values seen elsewhere
    many = Statement("a", "read", 1, 1.0, placeholders=(
        Placeholder(0, "eq", Column("acc", "aid", True), tuple(str(v) for v in range(100, 2100, 100))),))
    once = Placeholder(0, "insert", Column("hist", "aid", True), ("700",))
    assert (fit_one(once).lo, fit_one(once).hi) == (700, 700)
    pooled = fit_one(once, Pool.of([many]))
    assert (pooled.lo, pooled.hi) == (0, 2100)


def _twin_file(tmp_path: Path, cap: Capture) -> Path:
    path = tmp_path / "twin.toml"
    path.write_text(twin_toml(cap, "twin"))
    return path


def test_the_twin_compiles_with_the_captured_rate_and_protocol(tmp_path: Path) -> None:
    path = _twin_file(tmp_path, _sysbench_capture())
    text = path.read_text()
    program = load_program(str(path), "mysql")
    assert program.name == "twin" and [t.name for t in program.txn_types] == ["captured"]
    assert len(program.stmts) == len(SYSBENCH)
    assert file_run_defaults(str(path)).rate == pytest.approx(100.0)
    assert file_run_defaults(str(path)).prepare is False
    # ten point selects per transaction, a range every transaction
    assert re.search(r"loop 10\n  set v1 = uniform\(1, 10000\)  # the column's range or length\n"
                     r"  exec read: SELECT `c` FROM `sbtest1` WHERE ID = :v1", text)
    assert "set v2 = v1 + 99  # the range's width from the rows per execution" in text
    # the INSERT puts back the key the DELETE took
    assert re.search(r"exec write: DELETE FROM `sbtest1` WHERE ID = :v1\n.*VALUES\(:v1, :w2, :\$s1, :\$s2\)", text,
                     re.S)
    # `k = k + ?` adds one, not a value of k
    assert re.search(r"set v1 = 1  # nothing seen: a guess\nset v2 = uniform\(1, 10000\).*\n"
                     r"exec write: UPDATE `sbtest1` SET `k` = `k` \+ :v1", text)


def test_fractions_of_a_statement_per_transaction_are_drawn(tmp_path: Path) -> None:
    cap = _sysbench_capture()
    stmts = tuple(s if not s.text.startswith("UPDATE `sbtest1` SET `c`") else
                  Statement(s.text, s.kind, 250, s.total_ms, placeholders=s.placeholders) for s in cap.statements)
    cap = Capture(**{**{f: getattr(cap, f) for f in cap.__slots__}, "statements": stmts})
    text = _twin_file(tmp_path, cap).read_text()
    assert "set n = 0 + (uniform(1, 1000000) <= 250000)\nloop n" in text
    load_program(str(tmp_path / "twin.toml"), "mysql")


def test_without_transactions_each_statement_is_one_dealt_by_its_count(tmp_path: Path) -> None:
    stmts = (Statement("SELECT v FROM kv WHERE k = $1", "read", 900, 9.0, 900,
                       placeholders=(Placeholder(0, "eq", Column("kv", "k", True, 1, 50)),)),
             Statement("UPDATE kv SET v = v + $1 WHERE k = $2", "write", 100, 2.0, 0, 100,
                       placeholders=(Placeholder(0, "arith", Column("kv", "v", True)),
                                     Placeholder(1, "eq", Column("kv", "k", True, 1, 50)))))
    cap = Capture("postgresql", "postgresql://u@h/db", "16", 0.0, 10.0, 0, 0, False, "pg_stat_activity", stmts)
    path = _twin_file(tmp_path, cap)
    program = load_program(str(path), "postgresql")
    assert [(t.name, t.weight) for t in program.txn_types] == [("s1", 900), ("s2", 100)]
    assert file_run_defaults(str(path)) == file_run_defaults(str(path)).__class__(100.0, True, "poisson")


def test_a_run_takes_the_files_rate_unless_told(tmp_path: Path) -> None:
    path = str(_twin_file(tmp_path, _sysbench_capture()))
    opts = options_from_argv("run", ["--engine", "null", "--workload", path, "--headless"])
    # production's clients arrive independently: the twin's transactions too, unless told
    assert opts.rate == pytest.approx(100.0) and opts.prepare_statements is False and opts.arrival == "poisson"
    opts = options_from_argv("run", ["--engine", "null", "--workload", path, "--headless", "--rate", "0",
                                     "--arrival", "uniform"])
    assert opts.rate == 0.0 and opts.arrival == "uniform"
    plain = options_from_argv("run", ["--engine", "null", "--headless"])
    assert plain.rate == 0.0 and plain.arrival == "uniform"


def test_a_bad_rate_in_a_workload_file_is_one_line(tmp_path: Path) -> None:
    path = _twin_file(tmp_path, _sysbench_capture())
    path.write_text(path.read_text().replace("rate = 100.000", "rate = \"fast\""))
    from benchtop.workload import WorkloadError

    with pytest.raises(WorkloadError, match=r"twin.toml:\d+: rate is the default --rate"):
        file_run_defaults(str(path))
    path.write_text(path.read_text().replace("rate = \"fast\"", "rate = 100").replace('arrival = "poisson"',
                                                                                       'arrival = "bursty"'))
    with pytest.raises(WorkloadError, match=r"twin.toml:\d+: arrival is the default --arrival: uniform or poisson"):
        file_run_defaults(str(path))


def test_from_capture_prints_the_file_or_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_capture(tmp_path / "cap", _sysbench_capture())
    assert workload_main(["from-capture", str(tmp_path / "cap")]) == 0
    out = capsys.readouterr().out
    assert 'name = "cap"' in out and "rate = 100.000" in out
    assert workload_main(["from-capture", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no capture.json" in err


def test_an_insert_listed_before_its_delete_still_puts_the_key_back(tmp_path: Path) -> None:
    """Ordered by count, the INSERT may come first: it still follows its DELETE, with the DELETE's key."""
    cap = _sysbench_capture()
    stmts = [s if not s.text.startswith("INSERT") else
             Statement(s.text, s.kind, s.calls + 5, s.total_ms, placeholders=s.placeholders) for s in cap.statements]
    cap = Capture(**{**{f: getattr(cap, f) for f in cap.__slots__}, "statements": tuple(stmts)})
    text = _twin_file(tmp_path, cap).read_text()
    assert text.count("INSERT") == 1
    assert re.search(r"exec write: DELETE FROM `sbtest1` WHERE ID = :v1\n.*VALUES\(:v1, :w2, :\$s1, :\$s2\)", text,
                     re.S)


def test_alternatives_run_one_a_transaction(tmp_path: Path) -> None:
    """Point selects of two tables never seen in one transaction: each transaction runs ten of one table,
    drawn by their counts, not five of each (the first statement after BEGIN costs more)."""
    seen = next(s for s in _sysbench_capture().statements if s.text.startswith("SELECT `c` FROM `sbtest1` WHERE ID ="))
    point1 = Statement(seen.text, "read", 6000, 60.0, 6000, placeholders=seen.placeholders)
    point2 = Statement(seen.text.replace("sbtest1", "sbtest2"), "read", 4000, 40.0, 4000, placeholders=seen.placeholders)
    stmts = (Statement("BEGIN", "begin", 1000, 1.0), point1, point2, Statement("COMMIT", "commit", 1000, 1.0))
    order = Order("x", 500, (point1.text, point2.text), (), ((point1.text, point2.text),))
    cap = Capture("mysql", "m", "10.11", 0.0, 10.0, 1000, 1000, True, "x", stmts, (), order)
    text = _twin_file(tmp_path, cap).read_text()
    assert re.search(r"set pick1 = uniform\(1, 1000000\)\nif pick1 > 0 and pick1 <= 600000\n.*loop 10\n.*sbtest1.*\n"
                     r"(  )?end\nend\nif pick1 > 600000 and pick1 <= 1000000\n.*loop 10\n.*sbtest2", text, re.S), text
    assert len(load_program(str(tmp_path / "twin.toml"), "mysql").stmts) == 4


def test_transactions_the_statistics_miss_are_counted_from_commits(tmp_path: Path) -> None:
    """pg_stat_statements keeps no BEGIN sent as a prepared statement: the server's commits count them."""
    text = "UPDATE a SET b = b + $1 WHERE id = $2"
    before, after = {"u": Totals(text, 0, 0.0)}, {"u": Totals(text, 300, 3.0, 300)}
    clock = iter([0.0, 0.0, 10.0, 10.0])
    cap = capture(FakeReader(before, after, commits=[1000, 1100]), 10.0, clock=lambda: next(clock), wait=lambda s: None)
    assert (cap.transactions, cap.rate) == (100, 10.0)
    assert any("from the server's 100 commits" in n for n in cap.notes)
    text = twin_toml(cap)
    assert "exec begin: BEGIN\n" in text and "loop 3\n" in text and text.rstrip().endswith("exec commit: COMMIT\n'''")
    # as many commits as statements: each statement was its own transaction
    clock = iter([0.0, 0.0, 10.0, 10.0])
    cap = capture(FakeReader(before, after, commits=[1000, 1300]), 10.0, clock=lambda: next(clock), wait=lambda s: None)
    assert cap.transactions == 0 and cap.rate == 30.0
    # a client connecting inside the window: its first prepared BEGIN is the only one the statistics keep
    after_with_begin = {**after, "b": Totals("BEGIN", 1, 0.0)}
    clock = iter([0.0, 0.0, 10.0, 10.0])
    cap = capture(FakeReader({**before, "b": Totals("BEGIN", 0, 0.0)}, after_with_begin, commits=[1000, 1100]), 10.0,
                  clock=lambda: next(clock), wait=lambda s: None)
    assert cap.transactions == 100 and any(n.startswith("1 BEGIN in the statement statistics") for n in cap.notes)


@pytest.mark.parametrize("args, says", [
    (["--mysql", "mysql://u@127.0.0.1:1/db", "--pgsql", "postgresql://u@127.0.0.1:1/db", "--out", "x"],
     "not allowed with argument"),
    (["--mysql", "postgresql://u@127.0.0.1:1/db", "--out", "x"], "--mysql needs a mysql:// DSN"),
    (["--mysql", "mysql://u:secret@127.0.0.1:1/db", "--time", "0", "--out", "x"], "--time"),
    (["--mysql", "mysql://u:secret@127.0.0.1:1/db", "--time", "1", "--out", "x"], "cannot connect to mysql://u@"),
    (["--pgsql", "postgresql://u:secret@127.0.0.1:1/db", "--time", "1", "--out", "x"],
     "cannot connect to postgresql://u@"),
])
def test_capture_bad_input_is_one_line(args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from benchtop.commands.capture import main as capture_main

    assert capture_main(args) in (1, 2)
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "secret" not in err and "Traceback" not in err


def test_report_shows_a_capture(tmp_path: Path) -> None:
    import io

    from benchtop.commands.report import main as report_main

    write_capture(tmp_path / "cap", _sysbench_capture())
    out = io.StringIO()
    assert report_main([str(tmp_path / "cap")], out=out) == 0
    lines = out.getvalue().splitlines()
    assert "1000 transactions, 100.0/s" in lines[0]
    point = next(line for line in lines if "WHERE ID = ?" in line and line.rstrip().endswith("`sbtest1` WHERE ID = ?"))
    assert point.split()[:5] == ["55.6%", "1000.0", "0.100", "1.00", "0/1"]


def _twin_capture() -> Capture:
    """The twin's run as a second capture: point selects a little more often
    and slower, the range's rows off by a fifth, the DELETE never seen, a
    statement production did not run."""
    stmts = []
    for text, calls, sent, affected, examined in SYSBENCH:
        if text.startswith("DELETE"):
            continue
        if text.startswith("SELECT `c` FROM `sbtest1` WHERE ID = ?"):
            calls = sent = 11000
        sent = 80000 if "`c` FROM `sbtest1` WHERE ID BETWEEN" in text else sent
        stmts.append(Statement(" ".join(text.lower().split()), "read", calls, calls * 0.15, sent, affected, examined))
    stmts.append(Statement("SELECT 1", "read", 500, 5.0, 500))
    return Capture("mysql", "mysql://u@h:3306/sbtest", "10.11", 0.0, 10.0, 950, 950, True, "column statistics",
                   tuple(stmts))


def test_report_compares_two_captures_statement_by_statement(tmp_path: Path) -> None:
    import io

    from benchtop.commands.report import main as report_main

    write_capture(tmp_path / "prod", _sysbench_capture())
    write_capture(tmp_path / "twin", _twin_capture())
    out = io.StringIO()
    assert report_main([str(tmp_path / "prod"), str(tmp_path / "twin")], out=out) == 0
    lines = out.getvalue().splitlines()
    assert "100.0 transactions/s" in lines[0] and "95.0 transactions/s" in lines[0] and "(rate -5%)" in lines[0]

    def row(text: str) -> list[str]:
        return next(line for line in lines if line.rstrip().endswith(text)).split()

    # matched across case and blanks: 10000 of 18000 against 11000 of 18500 executions, 0.1 ms against 0.15 ms
    assert row("FROM `sbtest1` WHERE ID = ?")[:9] == ["55.6%", "59.5%", "+3.9", "0.100", "0.150", "+50%",
                                                      "1.00", "1.00", "+0%"]
    assert row("FROM `sbtest1` WHERE ID BETWEEN ? AND ?")[6:9] == ["100.00", "80.00", "-20%"]
    assert row("DELETE FROM `sbtest1` WHERE ID = ?")[:4] == ["5.6%", "0.0%", "-5.6", "0.100"]
    assert row("SELECT 1")[:3] == ["0.0%", "2.7%", "+2.7"]


def test_report_says_what_to_give_for_a_runs_results_folder(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from benchtop.commands.report import main as report_main

    write_capture(tmp_path / "cap", _sysbench_capture())
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text("{}")
    assert report_main([str(tmp_path / "cap"), str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "benchtop capture --out DIR" in err and "Traceback" not in err


def test_from_capture_of_no_statements_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # sysbench with prepared statements on MariaDB: no execution is digested
    note = "40937 executions of prepared statements (binary protocol) on this server are in no digest and not captured"
    write_capture(tmp_path / "cap", Capture("mysql", "m", "10.11", 0.0, 20.0, 0, 0, True, "none", (), (note,)))
    assert workload_main(["from-capture", str(tmp_path / "cap")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "no statements to run" in captured.err and "binary protocol" in captured.err
