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


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str, float]:
    t0 = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"benchtop still running {timeout:g} s after its end: {stderr[-2000:]}")
    return stdout, stderr, time.monotonic() - t0


def summary_of(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def frozen_run(server, out: Path, seconds: int):
    """A run whose server hangs after two intervals; returns the process and
    when the server stopped answering."""
    proc = start_run(server, out, seconds)
    wait_intervals(out, 2)
    server.kill(signal.SIGSTOP)
    return proc, time.monotonic()


def assert_true_summary(s: dict, measured_s: float) -> None:
    # time and tps are those of the measured period, not of the wait for the workers
    assert abs(s["time_s"] - measured_s) < 1.5, s
    assert s["tps"] == pytest.approx(s["transactions"] / s["time_s"], rel=0.01)
    assert s["unfinished"] >= 1  # the transactions blocked on the hung server


def test_time_limit_ends_on_time_against_a_hung_server(prepared_mysql, tmp_path: Path) -> None:
    out = tmp_path / "res"
    try:
        proc, _ = frozen_run(prepared_mysql, out, 6)
        stdout, stderr, waited = finish(proc, 6 + ENDS_WITHIN_S + 2)
    finally:
        prepared_mysql.kill(signal.SIGCONT)
    assert proc.returncode == 0, stderr
    s = summary_of(stdout)
    assert_true_summary(s, 6.0)
    assert s["stopped_by"].startswith("time")
    assert json.loads((out / "summary.json").read_text())["time_s"] == s["time_s"]


@pytest.mark.parametrize("signals", [1, 2], ids=["sigterm", "sigterm-twice"])
def test_sigterm_ends_within_5s_against_a_hung_server(prepared_mysql, tmp_path: Path, signals: int) -> None:
    out = tmp_path / "res"
    try:
        proc, _ = frozen_run(prepared_mysql, out, 60)
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
    time.sleep(0.5)
    assert proc.poll() is not None
