"""MariaDB's prepared executions shared among their texts (benchtop.capture.prepared_shares),
on executions made up to match what sysbench's oltp_read_write leaves in the server's history."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from benchtop.capture.prepared_shares import Execution, Shape, fit, placed, transactions

POINT = Shape(1, 0, 1, False, False, False, False)
RANGE = Shape(7, 0, 7, True, False, False, False)
NONE = Shape(0, 0, 0, False, False, False, False)
TEXTS = {"p1": "SELECT c FROM t1 WHERE id=?", "p2": "SELECT c FROM t2 WHERE id=?",
         "r1": "SELECT c FROM t1 WHERE id BETWEEN ? AND ?", "r2": "SELECT c FROM t2 WHERE id BETWEEN ? AND ?"}


def _made_up(txns: int, seed: int = 7) -> tuple[list[Execution], dict[tuple[int, int], str], dict[str, int]]:
    """Transactions of BEGIN, 4 point selects of one table, a range of one
    table, COMMIT on 4 threads; t1 chosen 70% of the time for the points and
    30% for the range.  Labels as a processlist's samples would leave them
    (on an execution in proportion to its time); the truth per text."""
    rnd = random.Random(seed)
    out: list[Execution] = []
    truth = {k: 0 for k in TEXTS} | {"BEGIN": 0, "COMMIT": 0}
    labels: dict[tuple[int, int], str] = {}
    event = {t: 0 for t in range(4)}
    for n in range(txns):
        thread = n % 4
        points = "p1" if rnd.random() < 0.7 else "p2"
        ranged = "r1" if rnd.random() < 0.3 else "r2"
        for key, shape, ms in [("BEGIN", NONE, 0.01)] + [(points, POINT, 0.05)] * 4 + [(ranged, RANGE, 0.1),
                                                                                          ("COMMIT", NONE, 0.3)]:
            event[thread] += 1
            rows = {POINT: 1, RANGE: 100}.get(shape, 0)
            e = Execution(thread, event[thread], event[thread] * 1000, shape, ms, rows, 0, rows)
            out.append(e)
            truth[key] += 1
            if rnd.random() < 0.3 * (ms + 0.01):  # caught running in proportion to its time
                labels[(thread, e.event)] = TEXTS.get(key, key)
    out.sort(key=lambda e: (e.thread, e.event))
    return out, labels, truth


def test_each_shape_is_shared_by_the_labels_and_pinned_by_the_tables_counts() -> None:
    executions, labels, truth = _made_up(2000)
    texts = sorted(set(TEXTS.values()) | {"BEGIN", "COMMIT"})
    reads = {"t1": truth["p1"] + truth["r1"], "t2": truth["p2"] + truth["r2"]}
    counters = {"Com_begin": 2000, "Com_commit": 2000, "Com_select": sum(reads.values())}
    tables = {t: {"r": n, "w": 0, "ins": 0, "upd": 0, "del": 0} for t, n in reads.items()}
    got = {a.text: a for a in fit(executions, labels, texts, 1.0, counters, Counter(), tables, Counter()).statements}
    total = len(executions)
    for key, text in TEXTS.items():
        assert got[text].calls / total == pytest.approx(truth[key] / total, abs=0.02), text
    assert got["BEGIN"].calls == pytest.approx(2000, rel=0.01)
    assert got["SELECT c FROM t1 WHERE id BETWEEN ? AND ?"].rows_sent / got[TEXTS["r1"]].calls == pytest.approx(100)
    # BEGIN is fast and COMMIT slow: each keeps its own mean, not their shape's
    assert got["BEGIN"].total_ms / got["BEGIN"].calls < 0.05 < got["COMMIT"].total_ms / got["COMMIT"].calls


def test_named_executions_take_their_places_in_their_transactions() -> None:
    executions, labels, _ = _made_up(400)
    named: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {k: (t, ()) for k, t in labels.items()}
    seen = transactions(executions, named)
    assert seen and {x.at for x in seen if "BETWEEN" in x.key} == {5.0}
    assert {x.at for x in seen if "BETWEEN" not in x.key} <= {1.0, 2.0, 3.0, 4.0}


def test_a_label_goes_to_the_execution_that_started_when_it_says_or_to_none() -> None:
    e = [Execution(9, n, start, POINT, 0.05, 1, 0, 1) for n, start in enumerate((0, 100_000_000, 110_000_000))]
    threads = {42: 9}
    assert placed([(42, 5_000_000.0, "a", ())], threads, e) == {(9, 0): ("a", ())}
    # 10 microseconds from one, 0 from the other: too close to tell
    assert placed([(42, 105_000_000.0, "b", ())], threads, e) == {}
    assert placed([(42, 60_000_000.0, "c", ())], threads, e) == {}  # 40 microseconds from any


def test_a_shape_no_label_names_goes_to_the_statement_it_is_likest_and_alike_ones_are_unsure() -> None:
    """sysbench's four range selects on one table, each its own shape, and its two one-row updates, alike: with
    one label in all (a busy host's processlist), the selects are still told apart by what their words lead one
    to expect (ORDER BY sorts, DISTINCT makes a temporary table, SUM sends one of the rows it reads), and the
    updates' shares are said to be unsure."""
    shapes = {"SELECT c FROM t WHERE id BETWEEN ? AND ?": Shape(7, 0, 7, True, False, False, False),
              "SELECT SUM(k) FROM t WHERE id BETWEEN ? AND ?": Shape(1, 0, 7, True, False, False, False),
              "SELECT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c": Shape(7, 0, 7, True, False, True, False),
              "SELECT DISTINCT c FROM t WHERE id BETWEEN ? AND ? ORDER BY c": Shape(7, 0, 7, True, False, True, True),
              "UPDATE t SET k=k+1 WHERE id=?": Shape(0, 1, 1, False, False, False, False),
              "UPDATE t SET c=? WHERE id=?": Shape(0, 1, 1, False, False, False, False)}
    rows = {1: 1, 7: 100}  # each bucket's rows
    executions = [Execution(0, i * 6 + j, (i * 6 + j) * 1000, shape, 0.1, rows.get(shape.sent, 0), shape.affected,
                            rows[shape.examined]) for i in range(200) for j, shape in enumerate(shapes.values())]
    labels = {(0, 4): "UPDATE t SET k=k+1 WHERE id=?"}
    counters = {"Com_select": 800, "Com_update": 400}
    got = fit(executions, labels, list(shapes), 1.0, counters, Counter(), {}, Counter())
    calls = {a.text: round(a.calls) for a in got.statements}
    assert all(calls[t] == 200 for t in list(shapes)[:4]), calls
    assert got.sole == {s: t for t, s in list(shapes.items())[:4]}
    assert got.unsure == [(("UPDATE t SET c=? WHERE id=?", "UPDATE t SET k=k+1 WHERE id=?"), 1)]
