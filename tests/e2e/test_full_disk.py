"""Results that cannot be saved: a full file system is refused before the
load; one that fills during the run ends it with a non-zero exit naming each
file that could not be written, the summary still printed whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, run_benchtop


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True, text=True)
    return res.returncode == 0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs (root only: CI runs as root; elsewhere skipped)."""
    where = tmp_path / "fs"
    if os.geteuid() != 0 or not _mount_tmpfs(where, "3m"):
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(fs: Path, leave: int = 0) -> None:
    st = os.statvfs(fs)
    size = st.f_bavail * st.f_frsize - leave
    # unbuffered: a write the run's own writes left no room for fails here, not
    # again in close() flushing what a buffer kept of it (ENOSPC out of `with`)
    with open(fs / "filler", "wb", buffering=0) as f:
        while size > 0:
            try:
                written = f.write(b"\0" * min(size, 1 << 20))
            except OSError:
                break
            if not written:
                break
            size -= written


def test_a_full_file_system_is_refused_before_the_load(small_fs: Path) -> None:
    fill(small_fs, leave=512 * 1024)
    out = small_fs / "res"
    res = run_benchtop("--headless", "--time", "30", "--out", str(out))
    assert res.returncode == 1, res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and "MiB free, the run needs about" in err[0] and str(out) in err[0], res.stderr
    assert "transactions:" not in res.stdout  # no load ran


def test_a_disk_that_fills_mid_run_exits_non_zero_naming_the_files(small_fs: Path) -> None:
    out = small_fs / "res"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "benchtop", "--headless", "--json", "--time", "3",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (out / "intervals.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    fill(small_fs)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["type"] == "summary" and summary["transactions"] > 0  # printed from memory
    err = [ln for ln in stderr.splitlines() if "could not write" in ln]
    assert len(err) == 1 and "summary.json" in err[0] and "disk full" in err[0], stderr
    assert not any(p.name.endswith(".tmp") for p in out.iterdir())  # no stray temporaries
