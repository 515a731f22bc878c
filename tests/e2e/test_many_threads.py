"""Thousands of workers that never wait (the null engine at its thread
limit): they start and stop in bounded time, the report keeps its pace and a
SIGTERM is obeyed within seconds although they use every core."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.e2e.conftest import ROOT

MAX_THREADS = "4096"


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", "--json", "--engine", "null",
                             "--threads", MAX_THREADS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(ROOT),
                            stdin=subprocess.DEVNULL)


def test_4096_null_workers_run_their_time_and_report_on_pace() -> None:
    t0 = time.monotonic()
    proc = start("--time", "3")
    stdout, stderr = proc.communicate(timeout=60)
    wall = time.monotonic() - t0
    assert proc.returncode == 0, stderr
    lines = [json.loads(x) for x in stdout.splitlines()]
    summary = lines[-1]
    assert summary["type"] == "summary" and abs(summary["time_s"] - 3) < 0.5, summary
    intervals = [x for x in lines if x.get("type") == "interval"]
    assert len(intervals) >= 2 and all(x["threads"] == 4096 for x in intervals)
    assert wall < 3 + 12, wall  # interpreter start, 4096 threads created and joined


def test_sigterm_is_obeyed_within_5s_with_4096_spinning_workers() -> None:
    proc = start("--time", "60")
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first interval: every worker has been started
    assert json.loads(first)["type"] == "interval"
    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - asked < 5, stderr
    summary = json.loads(stdout.splitlines()[-1])
    assert summary["stopped_by"] == "signal SIGTERM" and summary["time_s"] < 10
