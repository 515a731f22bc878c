"""Workloads as data: find a workload file (built in or a path) and compile it
for an engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchtop.workload.compiler import WorkloadError, compile_definition, read_definition
from benchtop.workload.program import Program

# Installed: the top-level workloads/ folder is packaged as benchtop.builtin_workloads;
# in a source checkout it is read where it is.
_INSTALLED = Path(__file__).resolve().parent.parent / "builtin_workloads"
BUILTIN_DIR = _INSTALLED if _INSTALLED.is_dir() else Path(__file__).resolve().parents[2] / "workloads"

__all__ = ["Program", "WorkloadError", "builtin_names", "load_program", "builtin_program", "option_defaults"]


def _search_dirs() -> list[Path]:
    return [BUILTIN_DIR]


def builtin_names() -> list[str]:
    """Runnable built-in workloads (files that define transactions)."""
    names = []
    for p in sorted(BUILTIN_DIR.glob("*.toml")):
        if not p.stem.startswith("_"):
            names.append(p.stem)
    return names


def resolve(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or "/" in name_or_path:
        if not p.is_file():
            raise WorkloadError(f"workload file {name_or_path} not found")
        return p
    cand = BUILTIN_DIR / f"{name_or_path}.toml"
    if cand.is_file() and not name_or_path.startswith("_"):
        return cand
    raise WorkloadError(
        f"unknown workload {name_or_path!r}: use one of {', '.join(builtin_names())} or a path to a .toml file"
    )


def option_defaults(name_or_path: str) -> dict[str, Any]:
    data, _ = read_definition(resolve(name_or_path), _search_dirs())
    return dict(data.get("options", {}))


def load_program(name_or_path: str, engine: str, overrides: dict[str, Any] | None = None) -> Program:
    path = resolve(name_or_path)
    data, src = read_definition(path, _search_dirs())
    return compile_definition(data, src, engine, overrides)


def builtin_program(name: str, engine: str, **overrides: Any) -> Program:
    return load_program(name, engine, overrides)
