"""Each backend's CPU and IO for a PostgreSQL on this host, as pg_activity
shows them: a backend busy in a loop of writes shows CPU% and its IO in the
source's rows and in the activity view's columns; a server named by an
address of another host gets no such columns, and a note."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from benchtop.screens.app import BenchtopApp
from benchtop.screens.widgets.source_pane import SourcePane
from benchtop.screens.widgets.top_table import TopTable
from benchtop.sources.base import Missing
from benchtop.sources.fields import BACKEND_CPU_PCT, BACKEND_READ_BPS, BACKEND_USAGE, BACKEND_WRITE_BPS
from benchtop.sources.poller import SourcePoller
from benchtop.sources.postgres import PostgresSource
from tests.fixtures.servers import Server, pg_connect, retry

pytestmark = pytest.mark.realdb


@contextmanager
def busy_backend(server: Server) -> Iterator[int]:
    """A backend computing and writing until the block ends; yields its pid."""
    stop = threading.Event()
    errors: list[BaseException] = []
    conn = pg_connect(server)
    conn.execute("CREATE TABLE IF NOT EXISTS usage_load (id bigserial PRIMARY KEY, pad text)")
    conn.execute("SET application_name = 'usage_load'")
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]

    def run() -> None:
        try:
            while not stop.is_set():
                conn.execute("INSERT INTO usage_load (pad) SELECT md5(g::text) FROM generate_series(1, 20000) g")
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield pid
    finally:
        stop.set()
        thread.join(30)
        conn.close()
    assert not errors, errors


def _row(src: PostgresSource, pid: int) -> dict[str, Any]:
    rows = src.poll().panels["activity"]
    assert isinstance(rows, list)
    return next(r for r in rows if r.get("pid") == pid)


def test_a_local_backend_has_cpu_and_io(pg_server: Server) -> None:
    src = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0)
    src.connect()
    try:
        with busy_backend(pg_server) as pid:
            def measured() -> bool:
                time.sleep(0.3)
                row = _row(src, pid)
                return (row.get(BACKEND_CPU_PCT) or 0) > 5 and (row.get(BACKEND_WRITE_BPS) or 0) > 0

            retry(measured, timeout=20)
            row = _row(src, pid)
            assert BACKEND_READ_BPS in row  # the test runs as root: /proc/PID/io is readable
            assert BACKEND_USAGE not in src.poll().panels  # nothing to note
    finally:
        src.close()


def test_a_remote_server_gets_a_note_not_columns(pg_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    # the same server, as if its address were another host's (no /proc of its to read)
    monkeypatch.setattr("benchtop.sources.backend_usage.server_on_this_host", lambda target: False)
    src = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0)
    src.connect()
    try:
        panels = src.poll().panels
        note = panels[BACKEND_USAGE]
        assert isinstance(note, Missing) and "not on this host" in note.what
        assert not any(BACKEND_CPU_PCT in r for r in panels["activity"])
    finally:
        src.close()


def test_without_a_screen_the_sessions_are_not_read_one_by_one(pg_server: Server) -> None:
    """A headless run's source (per_process=False): no session rows (so no backend's CPU and I/O either), and
    a note why; the sessions by state and their waits are still read."""
    src = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0, per_process=False)
    src.connect()
    try:
        with busy_backend(pg_server):
            src.poll()
            time.sleep(0.3)
            panels = src.poll().panels
        assert isinstance(panels["activity"], Missing) and "when a screen shows them" in panels["activity"].what
        assert BACKEND_USAGE not in panels
        assert panels["sessions"]["total"] >= 1 and isinstance(panels["wait_events"], list)
    finally:
        src.close()


async def test_activity_view_shows_the_columns(pg_server: Server) -> None:
    src = PostgresSource("postgresql", pg_server.target(), timeout_s=2.0)
    app = BenchtopApp(None, [SourcePoller(src, interval=0.5)])
    with busy_backend(pg_server) as pid:
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 20

            def shown() -> list[str] | None:
                panes = list(app.screen.query(SourcePane))
                tables = [t for t in panes[0].query(TopTable) if t.display and t.spec.panel == "activity"]
                if not tables or not tables[0].row_count:
                    return None
                table = tables[0]
                labels = [str(c.label).rstrip("▼▲") for c in table.columns.values()]
                if not {"CPU%", "Read/s", "Write/s"} <= set(labels):
                    return None
                for r in range(table.row_count):
                    cells = [str(c) for c in table.get_row_at(r)]
                    if cells[labels.index("PID")] == str(pid) and cells[labels.index("CPU%")].endswith("%"):
                        return cells
                return None

            while shown() is None:
                assert time.monotonic() < deadline, "no CPU% for the busy backend in the activity view"
                await pilot.pause(0.2)
    src.close()


def test_through_pgbouncer_the_backends_are_the_server_s_not_a_container_s(pgbouncer_server: Server) -> None:
    # PgBouncer answers the protocol's backend key with one of its own invention: no process here has it
    target = replace(pgbouncer_server.target(), kind="postgresql", database=pgbouncer_server.database)
    src = PostgresSource("postgresql", target, timeout_s=2.0)
    src.connect()
    try:
        note = src.poll().panels.get(BACKEND_USAGE)
        assert note is None, note
    finally:
        src.close()
