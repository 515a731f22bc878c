"""The report's analysis tables, as plain rows of strings (the terminal and
the HTML report render the same `Table`s): per-operation costs (one row per
run, one column per ratio, as in Callaghan's insert-benchmark reports),
sizes, totals, the settings that differ between runs, and validity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from benchtop.record.costs import APPORTIONED, PerOp, RunCosts
from benchtop.record.workers import workers_of
from benchtop.report.data import RunData, run_verdict
from benchtop.verdict.stretch import stretch_text


@dataclass(frozen=True, slots=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""  # printed under the table (how a figure was come by)


def _num(v: Any, fmt: str, scale: float = 1.0) -> str:
    return "-" if not isinstance(v, (int, float)) else format(v * scale, fmt)


def _size(v: Any) -> str:
    """
    >>> _size(3 * 1024 ** 2), _size(None), _size(512)
    ('3.0 MiB', '-', '512B')
    """
    if not isinstance(v, (int, float)):
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f}B"


# host: vmstat/iostat over all the host's disks and CPUs (the client's too);
# srv: the server's own counters (WAL for PostgreSQL, redo for InnoDB) and process tree
PER_OP_COLUMNS = ("name", "host r/op", "host rKiB/op", "host wKiB/op", "host cs/op", "host CPU ms/op",
                  "srv WAL|redo KiB/op", "srv CPU ms/op", "client µs/op")


def _per_op_cells(name: str, po: PerOp, client_us: float | None = None) -> tuple[str, ...]:
    return (name, _num(po.reads, ".3f"), _num(po.kb_read, ".2f"), _num(po.kb_written, ".2f"),
            _num(po.context_switches, ".1f"), _num(po.cpu_s, ".3f", 1000),
            _num(po.wal_bytes, ".2f", 1 / 1024), _num(po.server_cpu_s, ".3f", 1000),
            _num(client_us, ".1f"))


def _client_us(costs: RunCosts) -> float | None:
    return costs.client_cpu.per_op_us if costs.client_cpu is not None else None


def per_op_table(runs: list[RunData]) -> Table | None:
    rows = []
    for r in runs:
        costs = r.costs
        if costs.per_op is None:
            continue
        rows.append(_per_op_cells(r.label, costs.per_op, _client_us(costs)))
        for name, t in costs.by_type.items():  # shared out: the note under the table says how
            rows.append(_per_op_cells(f"  {name} *", t.per_op))
        for step in r.steps:  # a scenario's steps (a thread sweep: the cost per transaction at each step)
            step_costs = RunCosts.from_dict(step)
            if step_costs.per_op is not None:
                rows.append(_per_op_cells(f"  #{step['index'] + 1} {workers_of(step).connections}t", step_costs.per_op,
                                          _client_us(step_costs)))
    if not rows:
        return None
    shared = any(r.costs.by_type for r in runs)
    return Table("Per transaction", PER_OP_COLUMNS, tuple(rows), f"* per type, {APPORTIONED}" if shared else "")


def sizes_table(runs: list[RunData]) -> Table | None:
    rows = []
    for r in runs:
        sizes = r.costs.sizes
        if sizes is None:
            continue
        db, rss = sizes.database_bytes, sizes.server_rss_bytes
        rows.append((r.label, _size(db.start), _size(db.end), _size(db.growth_per_hour),
                     _size(rss.start), _size(rss.end), _size(rss.growth_per_hour)))
    return Table("Sizes", ("name", "db start", "db end", "db /hour", "rss start", "rss end", "rss /hour"),
                 tuple(rows)) if rows else None


TOTAL_LABELS = ("WAL", "ckpt timed", "ckpt req", "rows ins", "rows upd", "rows del")


def totals_table(runs: list[RunData]) -> Table | None:
    rows = []
    for r in runs:
        t = r.costs.totals
        if t is None:
            continue
        rows.append((r.label, _size(t.wal_bytes), *(_num(v, ".0f") for v in (
            t.checkpoints_timed, t.checkpoints_requested, t.rows_inserted, t.rows_updated, t.rows_deleted))))
    return Table("Totals", ("name", *TOTAL_LABELS), tuple(rows)) if rows else None


def settings_diff(settings: list[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """Settings whose values differ between runs; a run without the setting
    recorded shows "(default)" (only non-default values are recorded).

    >>> settings_diff([{"a": "1", "b": "x"}, {"a": "2", "b": "x", "c": "on"}])
    [('a', ['1', '2']), ('c', ['(default)', 'on'])]
    """
    names = sorted({k for s in settings for k in s})
    out = []
    for name in names:
        values = [str(s[name]) if name in s else "(default)" for s in settings]
        if len(set(values)) > 1:
            out.append((name, values))
    return out


# Settings that differ on every run and say nothing about performance.
_VOLATILE = {"pid_file", "port", "report_port", "socket", "log_error", "datadir", "data_directory",
             "gtid_binlog_pos", "gtid_current_pos", "gtid_binlog_state", "server_uuid", "hostname",
             "host.data_path"}


def _engine(r: RunData) -> str:
    return str(r.settings.get("engine") or r.config.get("engine") or "")


def _recorded(r: RunData, with_server: bool) -> dict[str, Any]:
    """A run's recorded settings: the server's non-default values (settings.json)
    plus the durability settings its validity was judged on, and the host's."""
    out: dict[str, Any] = {}
    server = r.settings.get("server")
    if with_server and isinstance(server, Mapping):
        out.update(server)
    if with_server:
        for key, value in r.validity.settings.items():
            out.setdefault(key, value)
    host = r.settings.get("host") or (r.summary.get("host") or {}).get("settings")
    if isinstance(host, Mapping):
        out.update({f"host.{k}": v for k, v in host.items() if v is not None})
    return {k: v for k, v in out.items() if k.lower() not in _VOLATILE}


def settings_table(runs: list[RunData]) -> Table | None:
    if len(runs) < 2:
        return None
    # two different servers differ in everything: only their hosts compare
    same_server = len({_engine(r) for r in runs}) == 1
    diff = settings_diff([_recorded(r, same_server) for r in runs])
    if not diff:
        return None
    return Table("Settings that differ", ("setting", *(r.label for r in runs)),
                 tuple((name, *values) for name, values in diff))


def validity_lines(runs: list[RunData]) -> list[str]:
    """Each run's verdict, the rules its settings break, and its host's flags."""
    out = []
    for r in runs:
        if r.validity.status != "no database":
            out.append(f"{r.name}: {r.validity.text()}")
        out += [f"{r.name}: {line}" for line in r.validity.flag_lines()]
        costs = r.costs
        out += [f"{r.name}: host: {flag}" for flag in (costs.host.flags if costs.host is not None else ())]
        warning = costs.client_cpu.warning if costs.client_cpu is not None else None
        if warning:
            out.append(f"{r.name}: warning: {warning}")
    return out


def verdict_lines(runs: list[RunData]) -> list[str]:
    """What limits each run: its steady stretch's verdict, or one per stretch
    between knob changes (docs/verdict.md)."""
    lines = []
    for r in runs:
        segs = [seg for seg in r.summary.get("segments") or [] if isinstance(seg.get("verdict"), dict)]
        if len(segs) > 1:
            lines.append(f"{r.name}:")
            for seg in segs:
                rate = f", rate {seg['rate']:g}/s" if seg.get("rate") else ""
                lines.append(f"  {seg.get('t_start', 0):.0f}-{seg.get('t_end', 0):.0f} s ({workers_of(seg).setting}{rate}): "
                             f"{stretch_text(seg['verdict'])}")
            continue
        v = run_verdict(r)
        if v:
            lines.append(f"{r.name}: {stretch_text(v)}")
    return lines


def analysis_tables(runs: list[RunData]) -> list[Table]:
    return [t for t in (per_op_table(runs), sizes_table(runs), totals_table(runs), settings_table(runs)) if t]


def table_lines(table: Table) -> list[str]:
    """A table as aligned text (first column left, the rest right)."""
    rows = [table.columns, *table.rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.columns))]
    lines = [table.title]
    for n, r in enumerate(rows):
        cells = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if table.note:
        lines.append(table.note)
    return lines
