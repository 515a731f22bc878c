"""Helpers to run the benchtop command as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_benchtop(*args: str, timeout: float = 120, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "benchtop", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=str(cwd or ROOT), stdin=subprocess.DEVNULL)


@pytest.fixture
def benchtop_cmd():
    return run_benchtop
