"""Workloads as data: find a workload file (built in or a path) and compile it
for an engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchtop.workload.compiler import (
    ARRIVALS,
    RunDefaults,
    WorkloadError,
    compile_definition,
    read_definition,
    run_defaults,
)
from benchtop.workload.program import Program

# Installed: the top-level workloads/ folder is packaged as benchtop.builtin_workloads;
# in a source checkout it is read where it is.
_INSTALLED = Path(__file__).resolve().parent.parent / "builtin_workloads"
BUILTIN_DIR = _INSTALLED if _INSTALLED.is_dir() else Path(__file__).resolve().parents[2] / "workloads"

__all__ = [
    "Program",
    "ARRIVALS",
    "RunDefaults",
    "WorkloadError",
    "builtin_names",
    "builtin_program",
    "load_program",
    "file_run_defaults",
    "option_defaults",
    "workload_extra_lines",
]


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
    # pgbench spells its scripts with dashes (tpcb-select-only): files use _
    stem = name_or_path.replace("-", "_")
    cand = BUILTIN_DIR / f"{stem}.toml"
    if cand.is_file() and not stem.startswith("_"):
        return cand
    raise WorkloadError(
        f"unknown workload {name_or_path!r}: use one of {', '.join(builtin_names())} or a path to a .toml file"
    )


def option_defaults(name_or_path: str) -> dict[str, Any]:
    data, _ = read_definition(resolve(name_or_path), _search_dirs())
    return dict(data.get("options", {}))


def file_run_defaults(name_or_path: str) -> RunDefaults:
    """The run settings a workload file sets by default (`rate`, `arrival`, `prepare`).

    >>> file_run_defaults("oltp_read_write")
    RunDefaults(rate=0.0, prepare=True, arrival='uniform')
    """
    data, src = read_definition(resolve(name_or_path), _search_dirs())
    return run_defaults(data, src)


def load_program(name_or_path: str, engine: str, overrides: dict[str, Any] | None = None) -> Program:
    path = resolve(name_or_path)
    data, src = read_definition(path, _search_dirs())
    return compile_definition(data, src, engine, overrides)


def builtin_program(name: str, engine: str, **overrides: Any) -> Program:
    return load_program(name, engine, overrides)


def workload_extra_lines(program: Program, summary: Any) -> list[str]:
    """Lines a workload adds to the text summary, from its [report] table:
    `per_minute = {new_order = "tpmC"}` gives "tpmC: N (new_order per
    minute)"; `per_operation = true` a count and rate per transaction type.

    >>> from types import SimpleNamespace as NS
    >>> p = builtin_program("tpcc", "null")
    >>> workload_extra_lines(p, NS(time_s=30.0, transactions=100, txn_types={"new_order": 45}))
    ['    tpmC:                                90.00  (new_order transactions per minute)']
    """
    if "fileio" in program.extra:
        from benchtop.workload.fileio import summary_lines

        return summary_lines(program, summary)
    report = program.extra.get("report")
    if not isinstance(report, dict):
        return []
    t = max(float(summary.time_s), 1e-9)
    counts: dict[str, int] = dict(summary.txn_types or {})
    lines = []
    for txn, label in dict(report.get("per_minute", {})).items():
        n = counts.get(txn, 0)
        lines.append(f"    {label + ':':<37}{n / t * 60:.2f}  ({txn} transactions per minute)")
    for name, label, rates in _group_rates(program, summary):
        lines.append(f"    {label + '/s:':<37}avg {rates['avg']:.2f}, p95 {rates['p95']:.2f} over intervals ({name})")
    if report.get("per_operation") and counts:
        total = max(sum(counts.values()), 1)
        lines.append("    operations:")
        for name in program.txn_names:
            n = counts.get(name, 0)
            lines.append(f"        {name + ':':<33}{n:<8d} ({n / t:.2f} per sec., {100.0 * n / total:.1f}%)")
    return lines


def workload_extra_fields(program: Program, summary: Any) -> dict[str, float]:
    """The same figures as `workload_extra_lines`, for the JSON summary:
    per-minute rates by label (`tpmC`), and for fileio `read_mib_s` and
    `written_mib_s`.

    >>> from types import SimpleNamespace as NS
    >>> workload_extra_fields(builtin_program("tpcc", "null"), NS(time_s=30.0, txn_types={"new_order": 45}))
    {'tpmC': 90.0}
    """
    t = max(float(summary.time_s), 1e-9)
    info = program.extra.get("fileio")
    if isinstance(info, dict):
        mib = float(info["block_size"]) / 1024**2
        return {"read_mib_s": round(summary.reads * mib / t, 3), "written_mib_s": round(summary.writes * mib / t, 3)}
    report = program.extra.get("report")
    if not isinstance(report, dict):
        return {}
    counts: dict[str, int] = dict(summary.txn_types or {})
    out = {str(label): round(counts.get(txn, 0) / t * 60, 3)
           for txn, label in dict(report.get("per_minute", {})).items()}
    for _, label, rates in _group_rates(program, summary):
        out[f"{label}_per_s"] = round(rates["avg"], 2)
        out[f"{label}_per_s_p95"] = round(rates["p95"], 2)
    return out


def _group_rates(program: Program, summary: Any) -> list[tuple[str, str, dict[str, float]]]:
    """[report] per_group = {group = "label"}: (group, label, its rate per
    second over the report intervals: avg, p95), in rows when
    rows_per_transaction names an option (the insert benchmark's --batch)."""
    report = program.extra.get("report")
    if not isinstance(report, dict):
        return []
    per_group = dict(report.get("per_group", {}))
    rows = dict(report.get("rows_per_transaction", {}))
    out = []
    for g in getattr(summary, "groups", ()) or ():
        if g.name in per_group and g.tps_intervals:
            per_txn = program.options.get(str(rows.get(g.name, "")), 1)
            k = float(per_txn) if isinstance(per_txn, (int, float)) and per_txn > 0 else 1.0
            out.append((g.name, str(per_group[g.name]), {key: v * k for key, v in g.tps_intervals.items()}))
    return out
