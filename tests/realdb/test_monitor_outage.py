"""The monitor survives its target dying (kill -9, restart) and hanging
(SIGSTOP): it keeps printing snapshots, marks the outage ok=false, and
recovers by itself."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from benchtop.commands.monitor import main
from tests.fixtures.servers import Server, retry

pytestmark = pytest.mark.realdb


class Lines:
    """A thread-safe stdout stand-in that keeps each JSON line and when it came."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buf = ""
        self.items: list[tuple[float, dict]] = []

    def write(self, text: str) -> int:
        with self._lock:
            self._buf += text
            while "\n" in self._buf:
                line, self._buf = self._buf.split("\n", 1)
                self.items.append((time.monotonic(), json.loads(line)))
        return len(text)

    def flush(self) -> None:
        pass

    def ok(self, name: str = "mysql") -> list[bool]:
        with self._lock:
            return [item["sources"][name]["ok"] for _, item in self.items]

    def times(self) -> list[float]:
        with self._lock:
            return [t for t, _ in self.items]


def _run_monitor(server: Server, out: Lines, stop: threading.Event) -> tuple[threading.Thread, list[int]]:
    rc: list[int] = []
    flag = {"mysql": "--mysql", "postgresql": "--pgsql", "pgbouncer": "--pgbouncer"}[server.kind]
    argv = [flag, server.dsn(), "--headless", "--json", "--interval", "0.3", "--timeout", "1", "--no-os"]
    thread = threading.Thread(target=lambda: rc.append(main(argv, out=out, stop=stop)), daemon=True)
    thread.start()
    return thread, rc


def test_kill_9_and_restart(mysql_server: Server) -> None:
    out, stop = Lines(), threading.Event()
    thread, rc = _run_monitor(mysql_server, out, stop)
    try:
        retry(lambda: out.ok().count(True) >= 2, timeout=10)
        mysql_server.kill(signal.SIGKILL)
        retry(lambda: out.ok()[-1] is False, timeout=10)
        down_at = len(out.ok())
        retry(lambda: len(out.ok()) > down_at, timeout=10)  # still printing during the outage
        mysql_server.restart()
        retry(lambda: out.ok()[-1] is True, timeout=30)
    finally:
        stop.set()
        thread.join(15)
    assert rc == [0]
    states = out.ok()
    assert states[0] is True and False in states and states[-1] is True
    failed = next(item for _, item in out.items if not item["sources"]["mysql"]["ok"])
    assert failed["sources"]["mysql"]["error"]


def test_sigstop_keeps_the_monitor_responsive(mysql_server: Server) -> None:
    out, stop = Lines(), threading.Event()
    thread, rc = _run_monitor(mysql_server, out, stop)
    try:
        retry(lambda: out.ok().count(True) >= 2, timeout=10)
        mysql_server.kill(signal.SIGSTOP)
        try:
            retry(lambda: out.ok()[-1] is False, timeout=10)
            time.sleep(2.0)
        finally:
            mysql_server.kill(signal.SIGCONT)
        retry(lambda: out.ok()[-1] is True, timeout=30)
    finally:
        stop.set()
        thread.join(15)
    assert rc == [0]
    times = out.times()
    gaps = [b - a for a, b in zip(times, times[1:])]
    # one poll is cut at --timeout 1 (+0.5 s slack, +1 s for the interrupt to land)
    assert max(gaps) < 3.0, gaps


def test_pgbouncer_restart(pgbouncer_server: Server) -> None:
    out, stop = Lines(), threading.Event()
    thread, rc = _run_monitor(pgbouncer_server, out, stop)
    try:
        retry(lambda: out.ok("pgbouncer").count(True) >= 2, timeout=10)
        pgbouncer_server.restart()
        # the restart may fall between two polls; either way polls go on and end healthy
        retry(lambda: len(out.ok("pgbouncer")) >= 4 and out.ok("pgbouncer")[-1] is True, timeout=30)
    finally:
        stop.set()
        thread.join(15)
    assert rc == [0]
