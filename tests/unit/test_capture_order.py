"""The order of statements within a transaction and the values they share,
derived from fixed samples as the servers show them (whole transactions from
MariaDB's long history, parts of them from pg_stat_activity), and the twin
written in that order with the shared values."""

from __future__ import annotations

import random
import re
from pathlib import Path

from benchtop.capture.model import Capture, Column, Order, Placeholder, Same, Statement, read_capture, write_capture
from benchtop.capture.normalize import placeholder_sites
from benchtop.capture.order import Seen, derive
from benchtop.capture.twin import twin_toml
from benchtop.capture.window import Totals, capture, order_notes
from benchtop.workload import load_program

ACC = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
SEL = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
TEL = "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"
BRA = "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2"
HIS = "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
PGBENCH = (ACC, SEL, TEL, BRA, HIS)
_COLS = {"aid": Column("pgbench_accounts", "aid", True, 1, 200000), "tid": Column("pgbench_tellers", "tid", True, 1, 20),
         "bid": Column("pgbench_branches", "bid", True, 1, 2)}


def _statement(text: str, calls: int = 1000) -> Statement:
    phs = tuple(Placeholder(i, site.role, _COLS.get(site.column)) for i, site in enumerate(placeholder_sites(text)))
    return Statement(text, "read" if text.startswith("SELECT") else "write", calls, calls * 0.05, 0, calls,
                     placeholders=phs)


def _pgbench_transaction(rng: random.Random) -> list[tuple[str, tuple[str, ...]]]:
    aid, tid, bid, delta = rng.randint(1, 200000), rng.randint(1, 20), rng.randint(1, 2), rng.randint(-5000, 5000)
    v = [str(x) for x in (aid, tid, bid, delta)]
    return [(ACC, (v[3], v[0])), (SEL, (v[0],)), (TEL, (v[3], v[1])), (BRA, (v[3], v[2])),
            (HIS, (v[1], v[2], v[0], v[3]))]


def _pg_samples(n: int, literals: bool = True, seed: int = 7) -> list[Seen]:
    """pg_stat_activity's view of pgbench: each transaction caught for two or
    three of its statements in a row, or all five (ms since xact_start, the later ones
    slower on a busy host), a few caught once, at random."""
    rng = random.Random(seed)
    out = []
    for t in range(n):
        stmts = _pgbench_transaction(rng)
        first = rng.randrange(len(stmts))
        took = stmts[first:first + rng.choice((1, 2, 3, 5))]
        slow = rng.uniform(1.0, 8.0)
        for i, (text, values) in enumerate(took, start=first):
            out.append(Seen(f"{t % 4}/{t}", 0.05 + i * 0.1 * slow, text, values if literals else ()))
    rng.shuffle(out)
    return out


def test_pgbench_order_and_shared_values_from_parts_of_transactions() -> None:
    stmts = {t: _statement(t) for t in PGBENCH}
    order = derive(_pg_samples(200), stmts, "pg_stat_activity")
    assert order is not None and order.statements == PGBENCH and order.transactions == 200
    shared = {(x.statement, x.index): (x.source, x.source_index) for x in order.shared}
    assert shared == {
        (SEL, 0): (ACC, 1),  # the SELECT reads the account the UPDATE wrote
        (TEL, 0): (ACC, 0), (BRA, 0): (ACC, 0),  # one delta for all
        (HIS, 0): (TEL, 1), (HIS, 1): (BRA, 1), (HIS, 2): (ACC, 1), (HIS, 3): (ACC, 0)}
    assert all(x.equal == x.of >= 5 for x in order.shared)


def test_two_transactions_seen_holding_both_statements_are_enough_when_chance_cannot_explain_them() -> None:
    """pg_stat_activity, sampled, caught pgbench's account UPDATE and its read-back in the same transaction only
    twice in a 20 s window; each was seen alone in many others.  Two equal accounts of 200,000 are no chance; two
    equal branches of two are."""
    rng = random.Random(5)
    seen = []
    for t in range(2):
        aid, bid, delta = str(rng.randint(1, 200000)), str(rng.randint(1, 2)), str(rng.randint(-5000, 5000))
        seen += [Seen(f"both/{t}", 0.1, ACC, (delta, aid)), Seen(f"both/{t}", 0.2, SEL, (aid,)),
                 Seen(f"both/{t}", 0.4, BRA, (str(rng.randint(-5000, 5000)), bid)),
                 Seen(f"both/{t}", 0.5, HIS, ("1", bid, str(rng.randint(1, 200000)), "7"))]
    for t in range(18):
        bid = str(rng.randint(1, 2))
        seen += [Seen(f"acc/{t}", 0.1, ACC, (str(rng.randint(-5000, 5000)), str(rng.randint(1, 200000)))),
                 Seen(f"sel/{t}", 0.2, SEL, (str(rng.randint(1, 200000)),)),
                 Seen(f"bra/{t}", 0.4, BRA, (str(rng.randint(-5000, 5000)), bid))]
    order = derive(seen, {t: _statement(t) for t in (ACC, SEL, BRA, HIS)}, "pg_stat_activity")
    assert order is not None
    assert [(x.statement, x.index, x.source, x.source_index, x.equal, x.of) for x in order.shared] == [
        (SEL, 0, ACC, 1, 2, 2)]


def test_a_statement_seen_only_in_slow_transactions_keeps_its_place() -> None:
    """pg_stat_activity caught UPDATE pgbench_branches mostly in transactions whose UPDATE of a teller waited on a
    lock, and the INSERT after it only in fast ones: the median would put the INSERT first, not the earliest place."""
    stmts = {t: _statement(t) for t in (BRA, HIS)}
    seen = [Seen(f"b{i}", at, BRA) for i, at in enumerate((0.4, 3.0, 3.2, 2.9))]
    seen += [Seen(f"h{i}", at, HIS) for i, at in enumerate((0.5, 0.6, 0.55))]
    order = derive(seen, stmts, "pg_stat_activity")
    assert order is not None and order.statements == (BRA, HIS)


def test_under_prepared_statements_the_order_is_seen_and_no_value() -> None:
    stmts = {t: _statement(t) for t in PGBENCH}
    order = derive(_pg_samples(200, literals=False), stmts, "pg_stat_activity")
    # no value seen: only the SELECT by the key the UPDATE of its table wrote is assumed to read that row back
    assert order is not None and order.statements == PGBENCH and order.shared == (Same(SEL, 0, ACC, 1, 0, 0),)
    notes = order_notes(order, 5, literals=False)
    assert notes[0] == "statements in the order seen in 200 transactions (pg_stat_activity)"
    assert "not seen (prepared statements)" in notes[1]
    assert notes[2].startswith("1 SELECT key assumed to read back the row an earlier UPDATE of the same table wrote")
    text = twin_toml(_pgbench_capture(order))
    assert ("# $1 takes the value of $2 of UPDATE pgbench_accounts SET abalance = abalan... "
            "(assumed: the row the transaction wrote, read back by its key; no values seen to tell)") in text
    assert "SELECT abalance FROM pgbench_accounts WHERE aid = :x1" in text


def test_a_read_back_is_not_assumed_once_seen_reading_another_row() -> None:
    """One transaction seen holding the UPDATE and the SELECT with different keys: the SELECT draws its own."""
    stmts = {t: _statement(t) for t in (ACC, SEL)}
    seen = [Seen(f"t{i}", 0.1 * (k == SEL), k, ()) for i in range(4) for k in (ACC, SEL)]
    assert derive(seen, stmts, "pg_stat_activity").shared == (Same(SEL, 0, ACC, 1, 0, 0),)
    seen += [Seen("apart", 0.0, ACC, ("5", "17")), Seen("apart", 0.1, SEL, ("18",))]
    assert derive(seen, stmts, "pg_stat_activity").shared == ()


def test_sysbench_whole_transactions_give_the_order_and_no_chance_equality() -> None:
    """MariaDB's long history: ten point selects on either table, a range, an
    UPDATE adding the constant 1, a DELETE and the INSERT that puts its key back."""
    point = {t: f"SELECT `c` FROM `sbtest{t}` WHERE ID = ?" for t in (1, 2)}
    rng_sel = "SELECT `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ?"
    upd = "UPDATE `sbtest1` SET `k` = `k` + ? WHERE ID = ?"
    dele = "DELETE FROM `sbtest1` WHERE ID = ?"
    ins = "INSERT INTO `sbtest1` ( ID , `k` , `c` , `pad` ) VALUES (...)"
    stmts = {t: _statement(t) for t in (*point.values(), rng_sel, upd, dele, ins)}
    rng = random.Random(3)
    seen = []
    for t in range(40):
        steps = [(point[rng.choice((1, 2))], (str(rng.randint(1, 10000)),)) for _ in range(10)]
        lo = rng.randint(1, 9900)
        key = str(rng.randint(1, 10000))
        steps += [(rng_sel, (str(lo), str(lo + 99))), (upd, ("1", str(rng.randint(1, 10000)))), (dele, (key,)),
                  (ins, (key, str(rng.randint(1, 10000)), "x" * 20, "y" * 10))]
        seen += [Seen(f"12/{t}", float(i + 1), text, values) for i, (text, values) in enumerate(steps)]
    order = derive(seen, stmts, "performance_schema.events_statements_history_long")
    assert order is not None
    assert set(order.statements[:2]) == set(point.values()) and order.statements[2:] == (rng_sel, upd, dele, ins)
    # the key, and nothing else: not the constant 1, not the point selects' ids
    assert [(x.statement, x.index, x.source, x.source_index) for x in order.shared] == [(ins, 0, dele, 0)]


def test_too_few_transactions_give_no_order() -> None:
    stmts = {t: _statement(t) for t in PGBENCH}
    assert derive(_pg_samples(2), stmts, "pg_stat_activity") is None
    assert derive([], stmts, "pg_stat_activity") is None
    note = order_notes(None, 5, literals=False)[0]
    assert note.startswith("no statement was seen inside a transaction") and "reads first" in note


def _pgbench_capture(order: Order | None) -> Capture:
    stmts = (Statement("BEGIN", "begin", 1000, 1.0), *(_statement(t) for t in reversed(PGBENCH)),
             Statement("END", "commit", 1000, 1.0))
    return Capture("postgresql", "postgresql://u@h/db", "16", 0.0, 10.0, 1000, 1000, True, "pg_stat_activity",
                   stmts, (), order)


def test_the_twin_runs_the_order_seen_with_the_shared_values(tmp_path: Path) -> None:
    order = derive(_pg_samples(200), {t: _statement(t) for t in PGBENCH}, "pg_stat_activity")
    text = twin_toml(_pgbench_capture(order))
    execs = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("exec ")]
    assert execs == ["BEGIN",
                     "UPDATE pgbench_accounts SET abalance = abalance + :x1 WHERE aid = :x2",
                     "SELECT abalance FROM pgbench_accounts WHERE aid = :x2",
                     "UPDATE pgbench_tellers SET tbalance = tbalance + :x1 WHERE tid = :x3",
                     "UPDATE pgbench_branches SET bbalance = bbalance + :x1 WHERE bid = :x4",
                     "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:x3, :x4, :x2, :x1, "
                     "CURRENT_TIMESTAMP)",
                     "END"]
    assert re.search(r"# \$1 takes the value of \$2 of UPDATE pgbench_accounts .* \(the same in (\d+) of \1 "
                     r"transactions seen\)\nexec read: SELECT", text)
    assert "# order: as seen in 200 transactions (pg_stat_activity); 7 values taken from an earlier statement" in text
    path = tmp_path / "twin.toml"
    path.write_text(text)
    program = load_program(str(path), "postgresql")
    assert len(program.stmts) == 7


def test_without_an_order_the_twin_puts_reads_first(tmp_path: Path) -> None:
    text = twin_toml(_pgbench_capture(None))
    execs = [line.split(": ", 1)[1].split()[0:2] for line in text.splitlines() if line.startswith("exec ")]
    assert execs[1] == ["SELECT", "abalance"] and ":x" not in text and "# order:" not in text


def test_an_order_that_places_some_statements_moves_no_other(tmp_path: Path) -> None:
    """Two of five statements sampled often enough: they take the places the others leave them, in their order."""
    def execs(cap: Capture) -> list[str]:
        return [line.split(": ", 1)[1] for line in twin_toml(cap).splitlines() if line.startswith("exec ")]

    without = execs(_pgbench_capture(None))
    first, second = sorted(next(i for i, e in enumerate(without) if e.startswith(t[:20])) for t in (ACC, BRA))
    late, early = (ACC, BRA) if without[first].startswith(ACC[:20]) else (BRA, ACC)
    order = Order("pg_stat_activity", 9, (early, late), (Same(late, 0, early, 0, 9, 9),))
    got = execs(_pgbench_capture(order))
    assert got[first].startswith(early[:early.index("$1")] + ":x1")
    assert got[second].startswith(late[:late.index("$1")] + ":x1")
    assert [e for i, e in enumerate(got) if i not in (first, second)] == [
        e for i, e in enumerate(without) if i not in (first, second)]
    path = tmp_path / "twin.toml"
    path.write_text(twin_toml(_pgbench_capture(order)))
    load_program(str(path), "postgresql")


def test_the_capture_records_the_order_it_saw(tmp_path: Path) -> None:
    """The window hands the reader's statements seen inside transactions to the derivation, and capture.json keeps
    the order and the shared values."""
    from tests.unit.test_capture import FakeReader

    texts = {f"k{i}": t for i, t in enumerate(("BEGIN", *PGBENCH, "END"))}
    before = {k: Totals(t, 0, 0.0) for k, t in texts.items()}
    after = {k: Totals(t, 1000, 50.0, 0, 0 if t in ("BEGIN", "END") else 1000) for k, t in texts.items()}
    keys = {t: k for k, t in texts.items()}
    seen = [Seen(x.txn, x.at, keys[x.key], x.values) for x in _pg_samples(200)]
    clock = iter([0.0, 0.0, 10.0, 10.0])
    cap = capture(FakeReader(before, after, in_txns=seen), 10.0, clock=lambda: next(clock), wait=lambda s: None)
    assert cap.order is not None and cap.order.statements == PGBENCH
    assert cap.order.source == "performance_schema.events_statements_history_long"
    assert (SEL, 0, ACC, 1) in [(x.statement, x.index, x.source, x.source_index) for x in cap.order.shared]
    assert "statements in the order seen in 200 transactions (performance_schema.events_statements_history_long)" \
        in cap.notes
    write_capture(tmp_path, cap)
    assert read_capture(tmp_path).order == cap.order
