"""Packaging facts that a fresh clone depends on."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_benchtop_package_is_listed_in_setup_cfg() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "benchtop").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found <= listed, f"add to setup.cfg [options] packages: {sorted(found - listed)}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    commands = [ln.strip() for ln in readme[:12] if ln.startswith("    ")]
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == commands[1]


def test_setup_py_only_declares_cffi_modules() -> None:
    text = (ROOT / "setup.py").read_text()
    assert "cffi_modules" in text and "name=" not in text


def test_every_c_file_is_in_one_source_list() -> None:
    from benchtop.engine._sources import CORE, MYSQL, PGSQL

    listed = [*CORE, *MYSQL, *PGSQL]
    on_disk = sorted(p.name for p in (ROOT / "native").glob("*.c"))
    assert sorted(listed) == on_disk, "native/*.c and benchtop/engine/_sources.py disagree"


def test_the_sdist_carries_the_c_sources_and_headers() -> None:
    lines = (ROOT / "MANIFEST.in").read_text().splitlines()
    assert "include native/*.c native/*.h" in lines
