"""The verdict's JSON carries the numbers its evidence quotes (`figures`)
and, below full confidence, what lowered it (`lowered_by`); a lock
verdict's confidence follows the share of sessions actually in lock waits."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from benchtop.verdict import Signals, decide
from benchtop.verdict.decide import FULL
from benchtop.verdict.stretch import interval_verdict, stretch_verdict

DATA = Path(__file__).parent / "data" / "verdict_signals.jsonl"
HERE = Path(__file__).parent


def recorded() -> list[Signals]:
    return [Signals.from_dict(json.loads(line)["signals"]) for line in DATA.read_text().splitlines() if line.strip()]


def test_figures_are_the_numbers_of_the_evidence():
    from tests.unit.test_verdict_network import PROXY
    from tests.unit.test_verdict_disk import ASYNC
    from tests.unit.test_verdict_cpu import PINNED

    durable = decide(replace(ASYNC, syncs_per_commit=0.95)).to_dict()
    assert durable["figures"]["syncs_per_txn"] == 0.95
    assert durable["figures"]["device_flushes_per_txn"] == round(5014.0 / 420.0, 4)
    net = decide(PROXY).to_dict()["figures"]
    assert net["outside_ms_per_query"] == round(5.75 * (1 - 0.03 / 8) - 0.06, 4)
    pinned = decide(PINNED).to_dict()["figures"]
    assert (pinned["server_cores"], pinned["server_cpus"], pinned["neighbour_cores"]) == (0.93, 1.0, 0.05)
    json.dumps(durable)


def test_every_verdict_below_full_confidence_says_what_lowered_it():
    for s in recorded():
        for variant in (s, s.with_missing("server CPU (remote server)")):
            v = decide(variant)
            if v.confidence < FULL:
                assert v.lowered_by, (v.limit, v.confidence, v.evidence)
            else:
                assert not v.lowered_by
    remote = decide(recorded()[0].with_missing("server CPU (remote server)"))
    assert "not read: server CPU (remote server)" in remote.lowered_by


def test_a_close_second_and_a_thin_margin_are_named():
    from tests.unit.test_verdict_network import PROXY

    thin = decide(replace(PROXY, server_ms_per_query=2.2))  # 0.61 of each query outside: 1.2x the threshold
    assert thin.limit == "network" and thin.confidence < FULL
    assert any("x its threshold (sure from 1.5x)" in w for w in thin.lowered_by)


def test_lock_confidence_follows_the_sessions_in_lock_waits():
    from tests.unit.test_verdict_neighbours import HOT_ROWS

    # row lock waits per write and the workers off the CPUs, but only 5% of the sessions in lock waits
    few = replace(HOT_ROWS, worker_cpu_wait=0.0, server_cpu_wait=0.0, neighbour_cores=0.0, neighbour_top=None)
    v = decide(few)
    assert v.limit == "locks" and v.confidence < 0.45
    assert "5% of sessions in lock waits" in v.lowered_by
    many = decide(replace(few, lock_waiting=12.0))  # 40% of the sessions
    assert many.limit == "locks" and many.confidence > v.confidence + 0.3


def test_figures_and_reasons_survive_the_json_round_trip_and_the_stretch():
    from tests.unit.test_verdict_disk import ASYNC

    d = decide(ASYNC.with_missing("server waits")).to_dict()
    back = interval_verdict({"verdict": d})
    assert back is not None and dict(back.figures) == d["figures"] and list(back.lowered_by) == d["lowered_by"]
    st = stretch_verdict([{"verdict": d}] * 3)
    assert st is not None and st["figures"] == d["figures"] and st["lowered_by"] == d["lowered_by"]
