"""Thread groups in the engine (null driver): each group keeps its own rate,
threads and transaction mix, and its own latency."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchtop.engine import ConnSettings, Engine, EngineError, EngineSettings, GroupSettings
from benchtop.workload import load_program

SLOW_FAST = """
name = "slow_fast"
[[transaction]]
name = "slow"
script = '''
sleep 3000
exec read: SELECT 1
'''
[[transaction]]
name = "fast"
script = '''
exec read: SELECT 1
'''
[[group]]
name = "slow"
transactions = ["slow"]
threads = 1
[[group]]
name = "fast"
transactions = ["fast"]
threads = 1
"""


@pytest.fixture
def program(tmp_path: Path):
    p = tmp_path / "slow_fast.toml"
    p.write_text(SLOW_FAST)
    return load_program(str(p), "null")


def _engine(program, groups: tuple[GroupSettings, ...]) -> Engine:
    return Engine(ConnSettings(driver="null"), EngineSettings(groups=groups), program)


def _groups(program) -> tuple[GroupSettings, ...]:
    return tuple(GroupSettings(g.name, g.threads, g.rate, g.arrival, g.weights) for g in program.groups)


def test_each_group_runs_only_its_transactions_with_its_own_latency(program) -> None:
    eng = _engine(program, _groups(program))
    try:
        eng.start()
        time.sleep(0.5)
        eng.stop()
        eng.join(5)
        s = eng.snapshot()  # stopped: the engine's and the groups' counters are read alike
    finally:
        eng.close()
    slow, fast = s.groups
    assert (slow.name, fast.name) == ("slow", "fast")
    assert s.txn_by_type[0] == slow.transactions and s.txn_by_type[1] == fast.transactions
    assert slow.latency.total == slow.transactions and fast.latency.total == fast.transactions
    # the injected 3 ms sleep shows in the slow group only
    assert slow.latency.percentiles_ms([50.0])[50.0] >= 2.9
    assert fast.latency.percentiles_ms([99.0])[99.0] < 1.0
    assert fast.transactions > 100 * slow.transactions
    assert s.transactions == slow.transactions + fast.transactions


def test_open_loop_group_holds_its_rate_beside_a_closed_loop_group(program) -> None:
    slow, fast = _groups(program)
    # the "fast" transactions at 2,000/s on one thread, beside a closed-loop group
    groups = (GroupSettings("paced", 1, 2000.0, "uniform", fast.weights), GroupSettings("free", 2, 0.0, "uniform", fast.weights))
    eng = _engine(program, groups)
    try:
        eng.start()
        t0 = eng.snapshot()
        time.sleep(1.0)
        t1 = eng.snapshot()
    finally:
        eng.stop()
        eng.join(5)
        eng.close()
    paced0, paced1 = t0.groups[0], t1.groups[0]
    rate = (paced1.transactions - paced0.transactions) / (t1.t - t0.t)
    assert rate == pytest.approx(2000, rel=0.05)
    assert paced1.rate == 2000.0 and t1.groups[1].rate == 0.0
    assert t1.groups[1].transactions > 10 * paced1.transactions
    assert t1.rate == 0.0  # one closed-loop group makes the run closed loop


def test_group_threads_and_rate_change_live(program) -> None:
    eng = _engine(program, _groups(program))
    try:
        eng.start()
        eng.set_group_threads(1, 3)
        eng.set_group_rate(0, 50.0)
        time.sleep(0.3)
        s = eng.snapshot()
        assert s.groups[1].threads_target == 3 and s.groups[1].threads_running == 3
        assert s.groups[0].rate == 50.0
        assert s.threads_target == 4
        eng.set_group_threads(1, 0)
        time.sleep(0.2)
        assert eng.snapshot().groups[1].threads_running == 0
    finally:
        eng.stop()
        eng.join(5)
        eng.close()


def test_bad_groups_are_refused(program) -> None:
    slow, fast = _groups(program)
    with pytest.raises(EngineError):
        _engine(program, (GroupSettings("x", 1, 0.0, "uniform", (0, 0)),))  # runs nothing
    with pytest.raises(EngineError):
        _engine(program, tuple(GroupSettings(f"g{i}", 1, 0.0, "uniform", fast.weights) for i in range(9)))
    eng = _engine(program, (slow, fast))
    try:
        with pytest.raises(EngineError):
            eng.set_group_threads(2, 1)
    finally:
        eng.close()
