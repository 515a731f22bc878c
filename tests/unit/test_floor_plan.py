"""The package keeps the shape its README describes: the import contracts in
pyproject.toml hold (layers, no TUI below the screens, no cycle), the type
checker is clean, and headless runs and the headless monitor never load
textual (a machine without a terminal never pays for the TUI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(args: list[str], cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_import_contracts_hold():
    done = _run([str(BIN / "lint-imports")])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


@pytest.mark.slow
def test_type_checker_is_clean(type_checker):
    # mypy, started in the background when the session began (tests/unit/conftest.py)
    code, stdout, stderr = type_checker.result(timeout=600)
    assert code == 0, stdout[-4000:] + stderr[-2000:]


def _imported_modules(args: list[str], tmp_path: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchtop", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]


def test_headless_run_never_imports_textual(tmp_path):
    mods = _imported_modules(["--headless", "--engine", "null", "--workload", "oltp_point_select",
                              "--time", "1", "--json"], tmp_path)
    assert "benchtop.run.headless" in mods
    assert not [m for m in mods if m.split(".")[0] == "textual" or m.startswith("benchtop.screens")]


def test_headless_monitor_never_imports_textual(tmp_path):
    mods = _imported_modules(["monitor", "--os", "--headless", "--json", "--count", "1", "--interval", "0.2"], tmp_path)
    assert "benchtop.sources.os" in mods
    assert not [m for m in mods if m.split(".")[0] == "textual" or m.startswith("benchtop.screens")]


def test_few_modules_at_the_package_root():
    root = [p.name for p in (ROOT / "benchtop").glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(root) <= 5, root

