"""A pooler found on the target's port without --pgbouncer: the run's
verdict reads its pools through the same address with the run's user, or
names `pool` among the signals not read, with the option that reads it."""

from __future__ import annotations

from typing import Any

import pytest

from benchtop.engine.histogram import Histogram
from benchtop.record.samples import IntervalStats
from benchtop.run import verdicts
from benchtop.sources.base import SourceError
from benchtop.target import Target
from benchtop.verdict import decide

TARGET = Target(kind="postgresql", host="127.0.0.1", port=16432, user="sbtest", database="sbtest")
# SHOW POOLS and SHOW STATS of a pool of 2 server connections for 32 clients (issue 42's pool staging)
POOLS = [{"database": "sbtest", "user": "sbtest", "cl_active": 2, "cl_waiting": 30, "maxwait": 0, "maxwait_us": 41000},
         {"database": "pgbouncer", "user": "pgbouncer", "cl_active": 1, "cl_waiting": 0}]
STATS = [{"database": "sbtest", "wait_time_us_per_s": 29_400_000.0}]


class Snap:
    kind, ok, t = "pgbouncer", True, 0.0
    panels: dict[str, Any] = {"pools": POOLS, "stats": STATS}


class FakeSource:
    refuse = False
    made: list["FakeSource"] = []

    def __init__(self, name: str, target: Target, timeout_s: float, *, pools_only: bool = False) -> None:
        self.target, self.polls, self.pools_only, self.connects = target, 0, pools_only, 0
        FakeSource.made.append(self)

    def connect(self) -> None:
        self.connects += 1
        if FakeSource.refuse:
            raise SourceError("FATAL: not allowed")

    def poll(self) -> Snap:
        self.polls += 1
        return Snap()

    def close(self) -> None:
        pass


def interval() -> IntervalStats:
    h = Histogram.empty()
    return IntervalStats(1.0, 1.0, 32, 0.0, False, 2400, 2400.0, 2400.0, 2400.0, 0.0, 0.0, 0.0, 0.0, {},
                         {"avg": 13.3, "p99": 40.0}, {}, 0.0, 32.0, h, h)


@pytest.fixture
def meter(monkeypatch):
    FakeSource.refuse, FakeSource.made = False, []
    monkeypatch.setattr(verdicts, "PgBouncerSource", FakeSource)
    monkeypatch.setattr(verdicts, "process_name", lambda pid: "pgbouncer")
    m = verdicts.VerdictMeter(TARGET, server_pid=lambda: 4242)
    m._local = True
    return m


def test_a_pgbouncer_on_the_targets_port_is_read_through_the_same_address(meter):
    v = decide(meter.signals(interval()))
    assert v.limit == "pool" and "PgBouncer: 29.4 of 32 clients waiting for a server connection" in v.evidence
    (src,) = FakeSource.made
    assert src.target.kind == "pgbouncer" and src.target.database == "pgbouncer" and src.target.user == "sbtest"
    assert (src.target.host, src.target.port) == (TARGET.host, TARGET.port)
    meter.signals(interval())
    assert len(FakeSource.made) == 1 and src.polls == 2  # one connection for the run


def test_a_pooler_that_cannot_be_read_is_named_with_the_option_that_reads_it(meter):
    FakeSource.refuse = True
    s = meter.signals(interval())
    assert "pool (PgBouncer's console refused sbtest: add --pgbouncer DSN)" in s.missing
    v = decide(s)
    assert v.limit != "pool" and "add --pgbouncer DSN" in v.evidence + "".join(s.missing)
    meter.signals(interval())
    assert len(FakeSource.made) == 1  # refused once: not asked again every interval


def test_a_watched_pgbouncer_is_not_read_twice(meter):
    meter._latest = lambda: {"pgbouncer": Snap()}
    meter._poll_s = 1e12  # the snapshot is fresh
    s = meter.signals(interval())
    assert s.pool_waiting == 29.4 and FakeSource.made == []


def test_the_console_is_logged_in_to_before_the_run_and_read_for_the_pools_alone(meter):
    # a login inside the first interval held that reading (and the run's stop) on a busy host
    meter.prepare()
    (src,) = FakeSource.made
    assert src.connects == 1 and src.polls == 0 and src.pools_only
    meter.signals(interval())
    assert src.connects == 1 and src.polls == 1
