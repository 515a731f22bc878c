"""Passwords never reach the process list, output or results."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchtop.target.secrets import secret_spans
from tests.e2e.conftest import ROOT


def test_password_flags_are_scrubbed_from_the_process_list(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "res"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchtop", "--headless", "--engine", "null", "--time", "60",
         "--mysql-password=hunter2", "--pgsql-password", "s3cret", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        deadline = time.monotonic() + 20
        cmdline = b""
        while time.monotonic() < deadline:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            if (out / "config.json").exists():
                break
            time.sleep(0.1)
        assert b"hunter2" not in cmdline and b"s3cret" not in cmdline, cmdline
        assert b"--mysql-password=xxxxxxx" in cmdline
    finally:
        # seen: the run ends now (a SIGTERM ends it cleanly, results written) rather than by its --time
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    everything = stdout + stderr + "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert "hunter2" not in everything and "s3cret" not in everything


def test_secret_spans_cover_dsn_passwords() -> None:
    spans = secret_spans(["benchtop", "--dsn", "postgresql://app:pw@db:5432/x", "--password", "z"])
    assert (2, len("postgresql://app:")) in spans and (4, 0) in spans


def test_help_recommends_option_files() -> None:
    res = subprocess.run([sys.executable, "-m", "benchtop", "--help"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(ROOT))
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "~/.my.cnf" in text and "~/.pgpass" in text


def test_the_scrub_is_not_behind_the_workload_compiler() -> None:
    # main() scrubs argv once benchtop.commands is imported: what that import loads is how long a password
    # flag stays in the process list (the workload compiler alone was 0.2-0.3 s of it on a busy host)
    res = subprocess.run([sys.executable, "-c", "import sys, benchtop.commands; "
                          "print(sorted(m for m in sys.modules if m.startswith(('benchtop.workload', 'textual'))))"],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(ROOT))
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


def test_a_dsn_without_a_scheme_never_prints_its_password(benchtop_cmd, tmp_path: Path) -> None:
    errors = {}
    for engine in ("mysql", "postgres", "sqlite"):
        res = benchtop_cmd("--headless", "--engine", engine, "--dsn", "sbtest:Zq9-secret-77@127.0.0.1", "--time", "1",
                           env={"BENCHTOP_RESULTS": str(tmp_path)})
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "Zq9-secret-77" not in res.stdout + res.stderr
        errors[engine] = res.stderr
    assert "cannot read DSN 'sbtest:***@127.0.0.1'" in errors["mysql"] and "sbtest:***@" in errors["postgres"]
    assert not list(tmp_path.iterdir())
