"""`benchtop monitor` in a real terminal against the harness's real servers:
what runs now is on the first screen at 200x60 and still at 80x24, keys
move between views and sources, and no internal key reaches the screen."""

from __future__ import annotations

import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Callable

import pytest

from tests.fixtures.dbhelpers import mysql_admin_exec, pg_admin_exec
from tests.fixtures.servers import Server, mysql_connect, pg_connect
from tests.tui import tmux_helpers

ROOT = Path(__file__).resolve().parents[2]
INTERNAL_KEYS = ("status_rates.", "stats.sbtest.", "innodb.redo_bytes_per_s", "unsafe_because", "_per_s")

pytestmark = [
    pytest.mark.realdb,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux_helpers.tmux_available(), reason="tmux is not installed"),
]


def _dsn(server: Server) -> str:
    scheme = "mysql" if server.kind == "mysql" else "postgresql"
    return f"{scheme}://{server.user}@{server.host}:{server.port}/{server.database}"


def test_monitor_top_in_tmux(mysql_server: Server, pg_server: Server) -> None:
    my, pg = mysql_connect(mysql_server), pg_connect(pg_server)

    def sleeping(run: Callable[[], object]) -> Callable[[], None]:
        def body() -> None:
            try:
                run()
            except Exception:  # noqa: BLE001 - cancelled once the screens have been read
                pass
        return body

    threads = [
        threading.Thread(target=sleeping(lambda: my.cursor().execute("SELECT SLEEP(20) AS tmux_marker_my")),
                         daemon=True),
        threading.Thread(target=sleeping(lambda: pg.execute("SELECT pg_sleep(20) /* tmux_marker_pg */")),
                         daemon=True),
    ]
    for t in threads:
        t.start()
    env = {
        "PYTHONPATH": str(ROOT),
        "TERM": os.environ.get("TERM", "xterm-256color"),
        "MYSQL_PWD": mysql_server.password or "",
        "PGPASSWORD": pg_server.password or "",
    }
    command = [sys.executable, "-m", "benchtop", "monitor", "--mysql", _dsn(mysql_server),
               "--pgsql", _dsn(pg_server), "--interval", "1", "--no-os"]  # fmt: skip
    # started once tmux has sized the pane (a detached session begins at 80x24), and sized by
    # the terminal, not by a COLUMNS/LINES the test runner may have exported
    session = tmux_helpers.start(
        "unset COLUMNS LINES; sleep 1; exec " + shlex.join(command), 200, 60, env=env, cwd=str(ROOT)
    )
    try:
        screen = session.wait_for("tmux_marker_my", timeout=30)
        size = tmux_helpers._tmux("display", "-p", "-t", session.name, "#{window_width}x#{window_height}").stdout
        assert size.strip() == "200x60" and max(len(line) for line in screen.splitlines()) > 150, (size, screen)
        assert "sessions now" in screen and "top statements in the interval" in screen
        assert "checkpoint age" in screen and "MiB" in screen
        session.send_keys("Tab")
        session.wait_gone("sessions now", timeout=10)  # the statements view
        session.wait_for("top statements in the interval", timeout=10)
        session.send_keys(">", literal=True)  # the next source
        screen = session.wait_for("tmux_marker_pg", timeout=15)
        assert "cache hit" in screen and "WAL" in screen
        assert not [k for k in INTERNAL_KEYS if k in screen]
        tmux_helpers._tmux("resize-window", "-t", session.name, "-x", "80", "-y", "24")
        session.send_keys("<", literal=True)  # the previous source
        screen = session.wait_for("1 top", timeout=10)
        session.send_keys("1", literal=True)  # the digit the view bar gives the top view
        screen = session.wait_for("tmux_marker_my", timeout=15)
        assert max(len(line) for line in screen.splitlines()) <= 80
        assert not [k for k in INTERNAL_KEYS if k in screen]
        session.send_keys("q", literal=True)
        assert session.wait_exit(10)
    finally:
        session.kill()
        # the sleeps only had to be seen: cancelled, the test does not wait out their 20 s
        mysql_admin_exec(mysql_server, f"KILL QUERY {int(my.thread_id())}")
        pg_admin_exec(pg_server, f"SELECT pg_cancel_backend({int(pg.info.backend_pid)})")
        for t in threads:
            t.join(30)
        my.close()
        pg.close()
