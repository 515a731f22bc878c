"""`benchtop monitor` argument handling and output formats (no servers)."""

from __future__ import annotations

import json

import pytest

from benchtop.commands.monitor import main
from benchtop.panels.headless import format_text
from benchtop.record.monitor import MonitorRecord
from benchtop.sources.base import Missing, SourceSnapshot


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--headless"], "nothing to watch"),
        (["--mysql", "m://x", "--headless"], "unknown DSN scheme 'm'"),
        (["--mysql", "mysql://a@h/x", "--interval", "0", "--headless"], "--interval: takes seconds from 0.05 to 3600, not '0'"),
        (["--mysql", "mysql://a@h/x", "--interval", "nan", "--headless"], "not 'nan'"),
        (["--mysql", "mysql://a@h/x", "--timeout", "nan", "--headless"], "--timeout: takes seconds"),
        (["--mysql", "mysql://a@h/x", "--count", "0", "--headless"], "--count must be at least 1"),
        (["--mysql", "mysql://a@h/x", "--json"], "--json needs --headless"),
        (["--mysql", "mysql://a@h/x", "--bogus"], "unrecognized arguments: --bogus"),
        (["--pgbouncer", "mysql://a@h/x", "--headless"], "--pgbouncer needs a pgbouncer:// DSN"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_closed_port_is_one_line_and_exit_1(capsys):
    assert main(["--mysql", "mysql://u:p@127.0.0.1:1/x", "--headless", "--timeout", "1", "--no-os"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("benchtop monitor: mysql: cannot connect:") and "refused" in err
    assert "p@" not in err  # the password is not echoed


def test_without_headless_the_screens_take_over(monkeypatch):
    import benchtop.screens.launch

    seen = []
    monkeypatch.setattr(benchtop.screens.launch, "monitor_tui", lambda pollers, args: seen.append(len(pollers)) or 0)
    assert main(["--os"]) == 0
    assert seen == [1]


def test_run_tui_callback_gets_the_pollers():
    seen = []
    assert main(["--os"], run_tui=lambda pollers, args: seen.append([p.name for p in pollers]) or 0) == 0
    assert seen == [["os"]]


def test_headless_json_lines_with_the_os_source(capsys):
    assert main(["--os", "--headless", "--json", "--count", "2", "--interval", "0.2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    second = json.loads(lines[1])
    assert second["type"] == "snapshot" and isinstance(second["t"], float)
    os_snap = second["sources"]["os"]
    assert os_snap["kind"] == "os" and os_snap["ok"] is True
    assert set(os_snap["cpu"]) >= {"user_pct", "system_pct", "iowait_pct", "idle_pct"}


def test_snapshot_line_and_text_show_failures_and_missing_panels():
    ok = SourceSnapshot(
        "pgbouncer",
        "pgbouncer",
        1.0,
        True,
        2.5,
        panels={
            "client_states": {"active": 3, "waiting": 1},
            "server_states": {"active": 2, "idle": 0},
            "stats": [{"database": "sbtest", "xact_per_s": 120.0, "avg_wait_time_us": 80.0}],
        },
    )
    down = SourceSnapshot("mysql", "mysql", 1.0, False, error="connection lost: gone away")
    pg = SourceSnapshot("postgresql", "postgresql", 1.0, True, panels={"replication": Missing("no replicas")})
    line = MonitorRecord(1.0, (ok, down, pg)).to_dict()
    assert line["sources"]["mysql"] == {
        "kind": "mysql",
        "ok": False,
        "poll_ms": 0.0,
        "error": "connection lost: gone away",
    }
    assert line["sources"]["postgresql"]["replication"] == {"missing": "no replicas", "hint": ""}
    text = format_text([ok, down, pg])
    # the TUI's view's facts, in its units
    assert "clients active 3  waiting 1" in text and "transactions 120/s" in text and "80µs" in text
    assert "mysql" in text and "DOWN: connection lost: gone away" in text


def test_proxysql_through_the_monitor_reads_only(capsys):
    from tests.proxysql_standin import start_standin

    standin = start_standin()
    try:
        argv = ["--proxysql", standin.dsn(), "--headless", "--json", "--count", "2", "--interval", "0.2", "--no-os"]
        assert main(argv) == 0
    finally:
        standin.stop()
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    proxy = last["sources"]["proxysql"]
    assert proxy["kind"] == "proxysql" and proxy["ok"] is True
    assert "hostgroup" in proxy["stats_mysql_connection_pool"][0]
    for sql in standin.queries_seen:
        assert sql.lstrip().split()[0].upper() in ("SELECT", "SHOW", "SET"), sql
        assert "_reset" not in sql.lower()


def test_wrong_password_is_not_echoed(capsys):
    assert main(["--pgsql", "postgresql://u:s3cr3t-pw@127.0.0.1:1/x", "--headless", "--timeout", "1", "--no-os"]) == 1
    err = capsys.readouterr().err
    assert "cannot connect" in err and "s3cr3t-pw" not in err


def test_sigterm_ends_a_headless_run_cleanly():
    import os
    import signal
    import subprocess
    import sys
    import time

    code = "import sys; from benchtop.commands.monitor import main; sys.exit(main(['--os', '--headless', '--interval', '0.1']))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # it is running
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert "Traceback" not in err


def test_headless_text_is_the_tui_views_facts():
    from benchtop.panels.headless import summary_lines
    from benchtop.panels.views import views_for

    snap = SourceSnapshot("db", "mysql", 1.0, True, 1.0, panels={
        "threads": {"running": 4, "connected": 9}, "status_rates": {"questions_per_s": 1200.0},
        "processlist": [{"id": 7, "user": "app", "command": "Query", "time_s": 42.0, "state": "User sleep",
                         "query": "SELECT SLEEP(60)"}]})
    view = views_for("mysql")[0]
    assert view.summary is not None
    text = "\n".join(summary_lines(snap))
    for line in view.summary(snap, 400):
        assert line.plain in text
    assert "SELECT SLEEP(60)" in text and "42" in text  # the top row of the view's first table


def test_two_servers_each_get_their_own_limit_line_naming_them(capsys):
    """Two MySQL sources: one verdict per server, each naming its source and
    host:port, in the text and in the JSON line; one server's lock waiters
    never land in the other's verdict."""
    import io
    import threading

    from benchtop.panels.headless import run_headless
    from benchtop.sources.poller import SourcePoller
    from tests.tui.fakes import FakeSource

    class At(FakeSource):
        def __init__(self, name: str, panels: dict, where: str) -> None:
            super().__init__(name, [panels], kind="mysql")
            self._where = where

        @property
        def where(self) -> str:
            return self._where

    waiting = {"threads": {"running": 9, "connected": 9}, "innodb": {"row_lock_waiting": 7.0}}
    quiet = {"threads": {"running": 1, "connected": 9}, "innodb": {"row_lock_waiting": 0.0}}
    pollers = [SourcePoller(At("mysql", waiting, "10.0.0.1:3306")), SourcePoller(At("mysql-2", quiet, "10.0.0.2:3306"))]
    for as_json in (False, True):
        out = io.StringIO()
        assert run_headless(pollers, out, threading.Event(), 0.1, count=1, as_json=as_json) == 0
        if as_json:
            line = json.loads(out.getvalue())
            first, second = line["verdicts"]
            assert (first["source"], first["server"], first["limit"]) == ("mysql", "10.0.0.1:3306", "locks")
            assert (second["source"], second["server"]) == ("mysql-2", "10.0.0.2:3306")
            assert second["limit"] != "locks" and line["verdict"]["limit"] == "locks"
        else:
            text = out.getvalue()
            assert "\n  mysql-2 10.0.0.2:3306 " in text  # the source's row names its server
            assert "\n  mysql 10.0.0.1:3306: bound by lock waits: " in text
            assert "\n  mysql-2 10.0.0.2:3306: limit unclear" in text
    for p in pollers:
        p.close()


def test_a_servers_verdict_never_names_another_servers_process():
    """The OS source watches the first local server's processes (mariadbd
    here): a PostgreSQL verdict beside it read 'next: server CPU (mariadbd
    0.29 of 2 cores ...)'; MariaDB's own verdict keeps them."""
    from benchtop.verdict.snapshots import server_verdicts

    host = SourceSnapshot("os", "os", 1.0, True, panels={
        "cpu": {"idle_pct": 0.0, "iowait_pct": 0.0}, "run_queue": 9,
        "server_process": {"name": "mariadbd", "cpu_cores": 1.9}})
    my = SourceSnapshot("mysql", "mysql", 1.0, True, panels={"threads": {"running": 4, "connected": 9}})
    pg = SourceSnapshot("postgresql", "postgresql", 1.0, True, panels={"sessions": []})
    verdicts = dict(server_verdicts([my, pg, host], 2))
    assert "mariadbd" in verdicts["mysql"].text()
    assert "mariadbd" not in verdicts["postgresql"].text() and "server_cores" not in dict(verdicts["postgresql"].figures)
