"""The stop path against a hung server: whatever ends the run (its time, a
SIGTERM, a second SIGTERM), the process exits within 5 s with a summary of
the measured period only, and resuming the server later changes nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.realdb.test_faults import prepared_mysql, start_run, wait_intervals  # noqa: F401 (fixture)

pytestmark = pytest.mark.realdb
ENDS_WITHIN_S = 5.0
# a time limit the server is frozen through: frozen after the first interval,
# it is hung for the last three seconds at least
LIMIT_S = 4


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str, float]:
    t0 = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"benchtop still running {timeout:g} s after its end: {stderr[-2000:]}")
    return stdout, stderr, time.monotonic() - t0


def freeze(server, sig: int) -> None:
    """SIGSTOP/SIGCONT the whole server: PostgreSQL's backends are children
    of the postmaster, and stopping only the postmaster freezes nothing."""
    import os

    from tests.fixtures.local import child_pids

    pids = [server.pid] + (child_pids(server.pid) if server.kind != "mysql" else [])
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def test_time_limit_ends_on_time_against_a_hung_postgresql(pg_server, tmp_path: Path) -> None:
    from tests.realdb.test_faults import SIZE
    from tests.realdb.test_run_servers import bt

    assert bt(pg_server, "prepare", *SIZE).returncode in (0, 1)
    out = tmp_path / "res"
    proc = start_run(pg_server, out, LIMIT_S)
    try:
        wait_intervals(out, 1)
        freeze(pg_server, signal.SIGSTOP)
        stdout, stderr, _ = finish(proc, LIMIT_S + ENDS_WITHIN_S + 2)
    finally:
        freeze(pg_server, signal.SIGCONT)
    assert proc.returncode == 0, stderr
    assert_true_summary(summary_of(stdout), LIMIT_S)


def summary_of(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def frozen_run(server, out: Path, seconds: int, *extra: str):
    """A run whose server hangs after its first interval (the workers are
    mid-transaction from then on); returns the process and when the server
    stopped answering."""
    proc = start_run(server, out, seconds, *extra)
    wait_intervals(out, 1)
    server.kill(signal.SIGSTOP)
    return proc, time.monotonic()


def assert_true_summary(s: dict, measured_s: float) -> None:
    # time and tps are those of the measured period, not of the wait for the workers
    assert abs(s["time_s"] - measured_s) < 1.5, s
    assert s["tps"] == pytest.approx(s["transactions"] / s["time_s"], rel=0.01)
    assert s["unfinished"] >= 1  # the transactions blocked on the hung server


# the same bound with event-loop workers: 16 connections on the 2 threads
LOOPS = pytest.mark.parametrize("extra", [(), ("--connections", "16")], ids=["threads", "event-loops"])


@LOOPS
def test_time_limit_ends_on_time_against_a_hung_server(prepared_mysql, tmp_path: Path, extra) -> None:
    out = tmp_path / "res"
    try:
        proc, _ = frozen_run(prepared_mysql, out, LIMIT_S, *extra)
        stdout, stderr, waited = finish(proc, LIMIT_S + ENDS_WITHIN_S + 2)
    finally:
        prepared_mysql.kill(signal.SIGCONT)
    assert proc.returncode == 0, stderr
    s = summary_of(stdout)
    assert_true_summary(s, LIMIT_S)
    assert s["stopped_by"].startswith("time")
    assert json.loads((out / "summary.json").read_text())["time_s"] == s["time_s"]


@LOOPS
@pytest.mark.parametrize("signals", [1, 2], ids=["sigterm", "sigterm-twice"])
def test_sigterm_ends_within_5s_against_a_hung_server(prepared_mysql, tmp_path: Path, signals: int, extra) -> None:
    out = tmp_path / "res"
    try:
        proc, _ = frozen_run(prepared_mysql, out, 60, *extra)
        time.sleep(1.0)
        asked = time.monotonic()
        for _ in range(signals):
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
        stdout, stderr, _ = finish(proc, ENDS_WITHIN_S + 2)
        ended_after = time.monotonic() - asked
    finally:
        prepared_mysql.kill(signal.SIGCONT)
    assert ended_after < ENDS_WITHIN_S, stderr
    s = summary_of(stdout)
    assert s["stopped_by"].startswith("signal SIGTERM")
    assert s["unfinished"] >= 1 and s["time_s"] < 60
    assert (out / "summary.json").exists()
    # resuming the server afterwards changes nothing: the process is gone
    assert proc.poll() is not None


def _pty_run(server, out: Path, *extra: str):
    """benchtop's TUI on a pseudo-terminal (80x24), as a user starts it."""
    import fcntl
    import os
    import pty
    import struct
    import sys
    import termios

    from tests.e2e.conftest import ROOT

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    dsn = f"mysql://{server.user}@{server.host}:{server.port}/{server.database}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MYSQL_PWD=server.password, TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchtop", "--engine", "mysql", "--dsn", dsn, "--workload", "oltp_point_select",
         "--threads", "2", "--time", "60", "--out", str(out), "--tables", "1", "--table-size", "1000", *extra],
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(ROOT), start_new_session=True)
    os.close(slave)
    return proc, master


def _drain(master: int, until: float) -> bytes:
    import os
    import select

    got = b""
    while time.monotonic() < until:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            got += chunk
    return got


@LOOPS
@pytest.mark.parametrize("keys", ["q", "qq", "SIGTERM"])
def test_tui_q_or_sigterm_ends_within_5s_against_a_hung_server(prepared_mysql, tmp_path: Path, keys: str,
                                                                extra) -> None:
    import os

    out = tmp_path / "res"
    proc, master = _pty_run(prepared_mysql, out, *extra)
    try:
        wait_intervals(out, 1)
        prepared_mysql.kill(signal.SIGSTOP)
        _drain(master, time.monotonic() + 1.0)
        asked = time.monotonic()
        if keys == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        for key in keys if keys != "SIGTERM" else "":
            os.write(master, key.encode())
            time.sleep(0.2)
        text = b""
        while proc.poll() is None and time.monotonic() - asked < ENDS_WITHIN_S + 3:
            text += _drain(master, time.monotonic() + 0.2)
        ended_after = time.monotonic() - asked
        text += _drain(master, time.monotonic() + 0.5)
    finally:
        prepared_mysql.kill(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert ended_after < ENDS_WITHIN_S, text[-2000:]
    assert proc.wait(5) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["stopped_by"] == "quit" and s["unfinished"] >= 1 and s["time_s"] < 30
    assert b"total time:" in text  # the summary is printed once the terminal is back
