"""The poll loop helper with fake sources: bounded, never overlapping, never
raising, reconnecting with backoff."""

from __future__ import annotations

import threading
import time

from benchtop.sources.base import Source, SourceError, SourceSnapshot
from benchtop.sources.poller import SourcePoller, poll_all
from benchtop.target import Target


class FakeSource(Source):
    kind = "mysql"

    def __init__(self, timeout_s: float = 0.3) -> None:
        super().__init__("fake", Target(kind="mysql"), timeout_s)
        self.down = False
        self.hang = threading.Event()
        self.release = threading.Event()
        self.connects = 0
        self.active = 0
        self.max_active = 0

    def connect(self) -> None:
        if self.down:
            raise SourceError("connection refused")
        self.connects += 1

    def poll(self) -> SourceSnapshot:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.hang.is_set():
                if not self.release.wait(5):
                    raise AssertionError("never released")
                raise SourceError("connection lost: interrupted")
            if self.down:
                raise SourceError("connection lost")
            return SourceSnapshot(self.name, self.kind, time.time(), ok=True, panels={"x": 1})
        finally:
            self.active -= 1

    def interrupt(self) -> None:
        self.release.set()

    def close(self) -> None:
        pass


def test_ok_poll_passes_the_snapshot_through():
    src = FakeSource()
    p = SourcePoller(src, interval=0.1)
    p.connect()
    snap = p.poll()
    assert snap.ok and snap.panels == {"x": 1}
    p.close()


def test_hung_poll_is_cut_at_the_deadline_and_interrupted():
    src = FakeSource(timeout_s=0.2)
    p = SourcePoller(src, interval=0.1, deadline_s=0.3)
    p.connect()
    src.hang.set()
    t0 = time.monotonic()
    snap = p.poll()
    took = time.monotonic() - t0
    assert not snap.ok and "no answer within 0.3s" in snap.error
    assert took < 1.0
    assert src.release.is_set()  # the source was asked to unblock its socket
    p.close()


def test_lost_connection_backs_off_then_reconnects():
    src = FakeSource()
    now = [100.0]
    p = SourcePoller(src, interval=0.1, backoff_initial_s=1.0, backoff_max_s=4.0, clock=lambda: now[0])
    p.connect()
    src.down = True
    assert p.poll().error == "connection lost"
    # within the backoff nothing is sent to the server
    snap = p.poll()
    assert not snap.ok and "retrying in 1.0s" in snap.error
    now[0] += 1.1
    assert "connection refused" in p.poll().error  # reconnect failed: backoff doubles
    now[0] += 1.1
    assert "retrying in" in p.poll().error
    now[0] += 1.0
    src.down = False
    snap = p.poll()
    assert snap.ok
    assert p.stats.reconnects == 1 and p.stats.failures == 2
    p.close()


def test_polls_never_overlap_even_when_one_is_stuck():
    src = FakeSource()
    p = SourcePoller(src, interval=0.1, deadline_s=0.1, grace_s=0.05)
    p.connect()
    src.hang.set()
    src.interrupt = lambda: None  # an uninterruptible hang
    snaps = [p.poll() for _ in range(3)]
    assert all(not s.ok for s in snaps)
    assert src.max_active == 1
    src.release.set()
    p.close()


def test_source_bug_becomes_a_failed_snapshot():
    src = FakeSource()
    src.poll = lambda: 1 / 0  # type: ignore[method-assign]
    p = SourcePoller(src, interval=0.1)
    p.connect()
    snap = p.poll()
    assert not snap.ok and snap.error.startswith("ZeroDivisionError")
    p.close()


def test_poll_all_shares_one_deadline():
    fast, slow = FakeSource(), FakeSource()
    slow.hang.set()
    slow.interrupt = lambda: None
    pollers = [SourcePoller(slow, deadline_s=0.3, grace_s=0.05), SourcePoller(fast, deadline_s=0.3)]
    for p in pollers:
        p.connect()
    t0 = time.monotonic()
    snaps = poll_all(pollers)
    assert time.monotonic() - t0 < 2.0
    assert [s.ok for s in snaps] == [False, True]
    slow.release.set()
    for p in pollers:
        p.close()


def test_run_loop_paces_polls_and_stops_when_asked():
    src = FakeSource()
    p = SourcePoller(src, interval=0.05)
    p.connect()
    snaps: list[SourceSnapshot] = []
    t0 = time.monotonic()
    p.run(snaps.append, lambda: len(snaps) >= 4)
    took = time.monotonic() - t0
    assert len(snaps) == 4 and all(s.ok for s in snaps)
    assert 0.15 <= took < 1.0  # three intervals between four polls
    p.close()
