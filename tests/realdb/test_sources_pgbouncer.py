"""The PgBouncer source against the harness's PgBouncer (1.18 on Debian 12),
with transactions going through it from a background thread."""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pytest

from benchtop.sources.pgbouncer import PgBouncerSource
from benchtop.sources.poller import SourcePoller
from tests.fixtures.servers import Server, pg_admin_exec, pg_connect, retry

pytestmark = pytest.mark.realdb


@contextmanager
def pooled_load(server: Server, clients: int = 3) -> Iterator[None]:
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with pg_connect(server) as conn:
                while not stop.is_set():
                    with conn.transaction():
                        conn.execute("SELECT 1")
                        conn.execute("SELECT pg_sleep(0.001)")
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not errors, errors


def test_pools_stats_and_lists_under_load(pgbouncer_server: Server) -> None:
    src = PgBouncerSource("pgbouncer", pgbouncer_server.target(), timeout_s=2.0)
    src.connect()
    try:
        assert src.version.startswith("PgBouncer 1.")
        with pooled_load(pgbouncer_server):
            src.poll()
            time.sleep(1.0)
            snap = src.poll()
        assert snap.ok
        pool = next(p for p in snap.panels["pools"] if p["database"] == "sbtest")
        for column in ("user", "cl_active", "cl_waiting", "sv_active", "sv_idle", "sv_used", "maxwait", "pool_mode"):
            assert column in pool
        assert pool["pool_mode"] == "transaction" and isinstance(pool["cl_active"], int)
        assert snap.panels["client_states"]["total"] >= 3
        assert snap.panels["server_states"]["total"] >= 1
        clients = [c for c in snap.panels["clients"] if c["database"] == "sbtest"]
        assert len(clients) >= 3 and {"user", "state", "addr", "port", "wait_s"} <= set(clients[0])
        assert not [c for c in snap.panels["clients"] if c.get("application_name") == "benchtop-monitor"]
        assert any(s["database"] == "sbtest" for s in snap.panels["servers"])
        stats = next(s for s in snap.panels["stats"] if s["database"] == "sbtest")
        assert stats["xact_per_s"] > 10 and stats["query_per_s"] >= 2 * stats["xact_per_s"] * 0.9
        assert stats["avg_xact_time_us"] > 0 and stats["avg_query_time_us"] > 0
        assert stats["avg_wait_time_us"] is not None
        assert snap.panels["lists"]["pools"] >= 2
        assert snap.panels["version"] == src.version
        assert snap.poll_ms < 500
    finally:
        src.close()


def test_hung_pgbouncer_costs_one_deadline_then_recovers(pgbouncer_server: Server) -> None:
    poller = SourcePoller(
        PgBouncerSource("pgbouncer", pgbouncer_server.target(), timeout_s=1.0), deadline_s=1.0, backoff_initial_s=0.2
    )
    poller.connect()
    try:
        assert poller.poll().ok
        pgbouncer_server.kill(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            snap = poller.poll()
            assert not snap.ok and time.monotonic() - t0 < 3.0
        finally:
            pgbouncer_server.kill(signal.SIGCONT)
        assert retry(lambda: poller.poll().ok, timeout=20, interval=0.3)
    finally:
        poller.close()


def test_pause_shows_waiting_clients_and_kill_keeps_the_console(pgbouncer_server: Server) -> None:
    src = PgBouncerSource("pgbouncer", pgbouncer_server.target(), timeout_s=2.0)
    src.connect()
    done = threading.Event()

    def client() -> None:
        with pg_connect(pgbouncer_server) as conn:
            conn.execute("SELECT 1")
        done.set()

    pg_admin_exec(pgbouncer_server, "PAUSE sbtest")
    thread = threading.Thread(target=client, daemon=True)
    try:
        thread.start()

        def waiting() -> bool:
            pools = src.poll().panels["pools"]
            return any(p["database"] == "sbtest" and p["cl_waiting"] >= 1 for p in pools)

        retry(waiting, timeout=10, interval=0.1)
        assert not done.is_set()
    finally:
        pg_admin_exec(pgbouncer_server, "RESUME sbtest")
    assert done.wait(10)
    thread.join(5)
    pg_admin_exec(pgbouncer_server, "KILL sbtest")  # drops the database's clients and server connections
    try:
        snap = src.poll()
        assert snap.ok  # the admin console itself is untouched
        sbtest = [p for p in snap.panels["pools"] if p["database"] == "sbtest"]
        assert all(p["cl_active"] == 0 and p["sv_active"] + p["sv_idle"] + p["sv_used"] == 0 for p in sbtest)
    finally:
        pg_admin_exec(pgbouncer_server, "RESUME sbtest")
        src.close()
