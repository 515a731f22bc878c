"""What each source's screens show: views (Proxytop's "screens"), each a few
summary lines and one or more sortable tables, with human units and labels.

Pure data and formatting (rich Text, no widgets), so every figure a DBA reads
is testable without a terminal; `monitor.py` turns a View into widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from benchtop.screens.widgets.fmt import ms, num, size
from benchtop.sources.base import Missing, SourceSnapshot

Cell = str | Text


# ------------------------------------------------------------------ units


def dur(seconds: Any) -> str:
    """A duration in seconds, top-style.

    >>> [dur(v) for v in (None, 0, 0.0042, 0.25, 7.5, 75, 3725, 90000)]
    ['-', '0', '4.2ms', '250ms', '7.5s', '1m15s', '1h02m', '1d01h']
    """
    if not isinstance(seconds, (int, float)):
        return "-"
    s = float(seconds)
    if s <= 0:
        return "0"
    if s < 1:
        return ms(s * 1000)
    if s < 60:
        return f"{s:.1f}s" if s < 10 else f"{s:.0f}s"
    m, sec = divmod(int(s), 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def per_s(v: Any) -> str:
    """
    >>> per_s(None), per_s(0), per_s(1234.5), per_s(0.25)
    ('-', '0/s', '1.23k/s', '0.2/s')
    """
    return "-" if not isinstance(v, (int, float)) else f"{num(v)}/s"


def count(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else num(v)


def ident(v: Any) -> str:
    """An id (pid, thread, session, rule) as it is, never abbreviated."""
    return "" if v is None else str(v)


def msec(v: Any) -> str:
    """A time in milliseconds.

    >>> msec(None), msec(0.5), msec(1500)
    ('-', '500µs', '1.5s')
    """
    return "-" if not isinstance(v, (int, float)) else ms(v)


def usec(v: Any) -> str:
    return msec(v / 1000.0 if isinstance(v, (int, float)) else None)


def ms_per_s(v: Any) -> str:
    """Time spent per second of wall clock (a busy-ness, like top's %CPU).

    >>> ms_per_s(812.5), ms_per_s(None)
    ('812ms/s', '-')
    """
    return "-" if not isinstance(v, (int, float)) else f"{ms(v)}/s"


def mib(v: Any) -> str:
    """Bytes in binary units.

    >>> mib(536870912), mib(1536), mib(None)
    ('512.0 MiB', '1.5 KiB', '-')
    """
    if not isinstance(v, (int, float)):
        return "-"
    return size(v).replace("kB", " KiB").replace("MB", " MiB").replace("GB", " GiB").replace("B", " B").replace(
        "i B", "iB"
    )


def mib_s(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{mib(v)}/s"


def pct(v: Any, digits: int = 1) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v:.{digits}f}%"


def ratio_pct(v: Any) -> str:
    """A 0..1 ratio as a percentage.

    >>> ratio_pct(0.99987), ratio_pct(None)
    ('99.99%', '-')
    """
    return "-" if not isinstance(v, (int, float)) else f"{100.0 * v:.2f}%"


def text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def gauge(pct_value: float | None, width: int, marks: Sequence[float] = ()) -> Text:
    """A bar filled to `pct_value`% with tick marks (e.g. flush points).

    >>> gauge(50, 10, (87.5,)).plain
    '█████░░░│░'
    """
    out = Text()
    if pct_value is None or width <= 0:
        return out
    filled = round(min(max(pct_value, 0.0), 100.0) / 100.0 * width)
    ticks = {min(int(m / 100.0 * width), width - 1) for m in marks}
    style = "red" if marks and pct_value >= min(marks) else "green"
    for i in range(width):
        if i in ticks and i >= filled:
            out.append("│", "bold yellow")
        else:
            out.append("█" if i < filled else "░", style if i < filled else "dim")
    return out


def bar(value: float, top: float, width: int) -> str:
    """
    >>> bar(5, 10, 8), bar(0, 10, 8), bar(1, 0, 4)
    ('████    ', '        ', '    ')
    """
    if top <= 0 or value <= 0:
        return " " * width
    n = max(1, round(value / top * width))
    return ("█" * n).ljust(width)


# ------------------------------------------------------------------ table specs


@dataclass(frozen=True, slots=True)
class Col:
    label: str
    key: str
    fmt: Callable[[Any], str] = text
    numeric: bool = False
    width: int | None = None  # None: as wide as the content (the last text column takes the rest)
    min_screen: int = 0  # shown only when the table is at least this wide


def fits(col: Col, width: int) -> bool:
    return width <= 0 or width >= col.min_screen


@dataclass(frozen=True, slots=True)
class TableSpec:
    panel: str
    title: str
    cols: tuple[Col, ...]
    sort: str  # the column key sorted on at first (descending when numeric)
    idle: Callable[[Mapping[str, Any]], bool] | None = None  # rows hidden unless idle ones are shown
    alert: Callable[[Mapping[str, Any]], str | None] | None = None  # a style for rows that need attention
    rows: Callable[[Any], list[dict[str, Any]]] | None = None  # the panel's value -> rows (default: the list)
    descending: bool = True  # the first sort's direction

    def rows_of(self, value: Any) -> list[dict[str, Any]]:
        if self.rows is not None:
            return self.rows(value)
        return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class View:
    key: str  # the tab's short name
    title: str
    summary: Callable[[SourceSnapshot, int], list[Text]] | None = None
    tables: tuple[TableSpec, ...] = field(default_factory=tuple)


def sort_value(v: Any) -> tuple[int, Any]:
    """Numbers before text before blanks, so a descending sort puts the biggest first."""
    if isinstance(v, bool) or v is None:
        return (0, 0)
    if isinstance(v, (int, float)):
        return (2, v)
    if isinstance(v, (list, tuple)):
        return (1, len(v))
    return (1, str(v).lower())


def filtered(rows: Sequence[Mapping[str, Any]], spec: TableSpec, needle: str, show_idle: bool) -> list[Mapping[str, Any]]:
    """Rows left after the idle toggle and a case-insensitive filter over every column.

    >>> spec = TableSpec("p", "t", (Col("q", "q"),), "q", idle=lambda r: r["q"] == "Sleep")
    >>> [r["q"] for r in filtered([{"q": "Sleep"}, {"q": "SELECT 1"}, {"q": "select 2"}], spec, "SELECT", False)]
    ['SELECT 1', 'select 2']
    """
    out = []
    low = needle.lower()
    for row in rows:
        if not show_idle and spec.idle is not None and spec.idle(row):
            continue
        if low and not any(low in text(v).lower() for v in row.values()):
            continue
        out.append(row)
    return out


def sorted_rows(rows: Sequence[Mapping[str, Any]], key: str, descending: bool) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: sort_value(r.get(key)), reverse=descending)


def humanize(key: str) -> str:
    """A panel key as a label (for the details of a row).

    >>> humanize("rows_examined_per_s"), humanize("time_s"), humanize("avg_us"), humanize("Queries_per_s")
    ('rows examined /s', 'time (s)', 'avg (µs)', 'Queries /s')
    """
    for suffix, unit in (("_per_s", " /s"), ("_ms", " (ms)"), ("_us", " (µs)"), ("_s", " (s)"),
                         ("_bytes", " (bytes)"), ("_pct", " (%)")):  # fmt: skip
        if key.endswith(suffix):
            return key[: -len(suffix)].replace("_", " ") + unit
    return key.replace("_", " ")


# ------------------------------------------------------------------ shared summary helpers


def _p(snap: SourceSnapshot, name: str) -> Any:
    return snap.panels.get(name)


def _missing_line(label: str, value: Any) -> Text | None:
    if isinstance(value, Missing):
        line = Text(f"{label}: ", "bold")
        line.append(f"✗ {value.what}", "yellow")
        if value.hint:
            line.append(f" — {value.hint}", "dim")
        return line
    return None


def _facts(pairs: Sequence[tuple[str, str]], width: int = 0, style: str = "bold") -> Text:
    r"""`label value  label value` with the values in bold, broken into lines
    between facts (never inside one) to fit `width`.

    >>> print(_facts([("running", "3"), ("connected", "40"), ("queries", "1.2k/s")], 24).plain)
    running 3  connected 40
    queries 1.2k/s
    """
    line = Text()
    used = 0
    for label, value in pairs:
        size = len(label) + 1 + len(value)
        if used:
            if width and used + 2 + size > width:
                line.append("\n")
                used = 0
            else:
                line.append("  ")
                used += 2
        line.append(f"{label} ", "dim")
        line.append(value, style)
        used += size
    return line


def _first(panel: Mapping[str, Any], *keys: str) -> Any:
    """The first of `keys` that has a value (an interval figure, else the cumulative one)."""
    return next((panel[k] for k in keys if panel.get(k) is not None), None)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# ------------------------------------------------------------------ MySQL / MariaDB


def _mysql_idle(row: Mapping[str, Any]) -> bool:
    return row.get("command") in ("Sleep", "Daemon", "Binlog Dump", "Binlog Dump GTID") or (
        row.get("command") == "Query" and not row.get("query")
    )


def _long(seconds_key: str, warn: float = 10.0) -> Callable[[Mapping[str, Any]], str | None]:
    def style(row: Mapping[str, Any]) -> str | None:
        v = row.get(seconds_key)
        return "yellow" if isinstance(v, (int, float)) and v >= warn else None

    return style


def _flush_marks() -> tuple[float, float]:
    # InnoDB starts asynchronous (adaptive) flushing at about 7/8 of the
    # redo capacity and blocks writers to flush synchronously at about 15/16.
    return (87.5, 93.75)


def mysql_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    threads = _mapping(_p(snap, "threads"))
    rates = _mapping(_p(snap, "status_rates"))
    settings = _mapping(_p(snap, "settings"))
    inn = _p(snap, "innodb")
    lines = [
        _facts(
            [
                ("server", str(settings.get("version") or "?")),
                ("running", count(threads.get("running"))),
                ("connected", count(threads.get("connected"))),
                ("queries", per_s(rates.get("questions_per_s"))),
                ("commits", per_s(rates.get("commits_per_s"))),
                ("selects", per_s(rates.get("com_select_per_s"))),
                ("slow", per_s(rates.get("slow_queries_per_s"))),
            ], width)
    ]
    missing = _missing_line("InnoDB", inn)
    if missing is not None:
        lines.append(missing)
    elif isinstance(inn, Mapping):
        line = Text("checkpoint age ", "dim")
        line.append(pct(inn.get("checkpoint_age_pct")), "bold")
        line.append(f" of {mib(inn.get('redo_capacity_bytes'))} ", "dim")
        line.append_text(gauge(inn.get("checkpoint_age_pct"), max(min(width // 6, 24), 8), _flush_marks()))
        lines.append(line)
        lines.append(
            _facts(
                [
                    ("dirty", pct(inn.get("dirty_pages_pct"))),
                    ("redo", mib_s(inn.get("redo_bytes_per_s"))),
                    ("hit", ratio_pct(_first(inn, "buffer_pool_hit_ratio", "buffer_pool_hit_ratio_total"))),
                    ("history", count(inn.get("history_list_length"))),
                    ("lock waits", per_s(inn.get("row_lock_waits_per_s"))),
                ], width)
        )
    waits = _p(snap, "waits")
    if isinstance(waits, list) and waits:
        top = waits[0]
        lines.append(_facts([("top wait", f"{top.get('event')} {ms_per_s(top.get('ms_per_s'))}")], width))
    locks = _p(snap, "locks")
    if isinstance(locks, list) and locks:
        lines.append(Text(f"⚠ {len(locks)} lock wait(s): see the locks view", "bold red"))
    return lines


def innodb_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    inn = _p(snap, "innodb")
    missing = _missing_line("InnoDB", inn)
    if missing is not None:
        return [missing]
    inn = _mapping(inn)
    settings = _mapping(_p(snap, "settings"))
    bar_w = min(max(width - 30, 10), 60)
    age = Text("checkpoint age   ", "bold")
    age.append_text(gauge(inn.get("checkpoint_age_pct"), bar_w, _flush_marks()))
    age.append(f" {pct(inn.get('checkpoint_age_pct'))}")
    lines = [
        age,
        Text(
            f"                 {mib(inn.get('checkpoint_age_bytes'))} of {mib(inn.get('redo_capacity_bytes'))} redo; "
            "│ marks: async flushing (~7/8), sync flushing (~15/16)",
            "dim",
        ),
    ]
    rows = [
        ("dirty pages", pct(inn.get("dirty_pages_pct"))),
        ("pages flushed", per_s(inn.get("pages_flushed_per_s"))),
        ("redo written", mib_s(inn.get("redo_bytes_per_s"))),
        ("history list length", count(inn.get("history_list_length"))),
        ("buffer pool hit (interval)", ratio_pct(inn.get("buffer_pool_hit_ratio"))),
        ("buffer pool hit (since start)", ratio_pct(inn.get("buffer_pool_hit_ratio_total"))),
        ("row lock waits", per_s(inn.get("row_lock_waits_per_s"))),
        ("buffer pool size", mib(settings.get("innodb_buffer_pool_size"))),
        ("flush log at commit", text(settings.get("innodb_flush_log_at_trx_commit"))),
    ]
    for label, value in rows:
        line = Text(f"{label:<31}", "dim")
        line.append(value, "bold")
        lines.append(line)
    binlog = _p(snap, "binlog")
    if isinstance(binlog, Mapping):
        lines.append(
            _facts(
                [
                    ("binlog", str(binlog.get("current_file"))),
                    ("written", mib_s(binlog.get("bytes_per_s"))),
                    ("total", mib(binlog.get("total_bytes"))),
                ], width)
        )
    if settings.get("crash_safe") is False:
        lines.append(Text("not crash-safe: " + ", ".join(settings.get("unsafe_because") or []), "yellow"))
    return lines


def _waits_rows(value: Any) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    top = max((r.get("ms_per_s") or 0 for r in rows), default=0)
    for r in rows:
        r["bar"] = bar(r.get("ms_per_s") or 0, top, 20)
    return rows


MYSQL_PROCESSLIST = TableSpec(
    "processlist",
    "sessions now (longest first; i shows idle)",
    (
        Col("Id", "id", ident, True),
        Col("User", "user", min_screen=100),
        Col("Host", "host", min_screen=140),
        Col("DB", "db", min_screen=100),
        Col("Command", "command", min_screen=100),
        Col("Time", "time_s", dur, True),
        Col("State", "state"),
        Col("Query", "query"),
    ),
    "time_s",
    idle=_mysql_idle,
    alert=_long("time_s"),
)
def _statement_rows(value: Any) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        if r.get("sampled"):
            r["how"] = f"~ {r.get('sessions_running')} running"  # estimated from the processlist
        elif r.get("aggregate"):
            r["how"] = "all prepared"
    return rows


MYSQL_STATEMENTS = TableSpec(
    "top_statements",
    "top statements in the interval (by total time)",
    (
        Col("Time/s", "total_ms_per_s", ms_per_s, True),
        Col("How", "how", min_screen=100),
        Col("Calls/s", "calls_per_s", per_s, True),
        Col("Avg", "avg_ms", msec, True),
        Col("p95", "p95_ms", msec, True, min_screen=140),
        Col("p99", "p99_ms", msec, True, min_screen=140),
        Col("Rows exam/s", "rows_examined_per_s", per_s, True, min_screen=100),
        Col("Rows sent/s", "rows_sent_per_s", per_s, True, min_screen=140),
        Col("Schema", "schema", min_screen=120),
        Col("Statement", "query"),
    ),
    "total_ms_per_s",
    rows=_statement_rows,
)
MYSQL_WAITS = TableSpec(
    "waits",
    "waits in the interval (performance_schema), ranked",
    (
        Col("Wait time/s", "ms_per_s", ms_per_s, True),
        Col("", "bar", width=20),
        Col("Waits/s", "count_per_s", per_s, True),
        Col("Avg", "avg_us", usec, True),
        Col("Event", "event"),
    ),
    "ms_per_s",
    rows=_waits_rows,
)
MYSQL_LOCKS = TableSpec(
    "locks",
    "lock waits: who blocks whom",
    (
        Col("Waiting", "waiting_id", ident, True),
        Col("For", "wait_s", dur, True),
        Col("Blocker", "blocking_id", ident, True),
        Col("Blocker trx age", "blocking_trx_age_s", dur, True),
        Col("Blocker does", "blocking_command"),
        Col("Table", "lock_table"),
        Col("Mode", "lock_mode"),
        Col("Blocker's query", "blocking_query"),
        Col("Waiting query", "waiting_query"),
    ),
    "wait_s",
    alert=lambda r: "red",
)

# ------------------------------------------------------------------ PostgreSQL


def _pg_state(state: Any) -> str:
    """
    >>> _pg_state("idle in transaction (aborted)")
    'idle in trx (aborted)'
    """
    return text(state).replace("idle in transaction", "idle in trx")


def _pg_idle(row: Mapping[str, Any]) -> bool:
    return row.get("state") == "idle"


def _pg_alert(row: Mapping[str, Any]) -> str | None:
    if row.get("blocked_by"):
        return "red"
    if row.get("state") == "idle in transaction" and (row.get("state_age_s") or 0) >= 10:
        return "magenta"
    return _long("query_age_s")(row) if row.get("state") == "active" else None


def _pg_rows(value: Any) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        wt, we = r.get("wait_event_type"), r.get("wait_event")
        r["wait"] = f"{wt}:{we}" if wt and we else ""
    return rows


def postgres_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    settings = _mapping(_p(snap, "settings"))
    sessions = _mapping(_p(snap, "sessions"))
    db = _mapping(_p(snap, "database"))
    hit = _mapping(_p(snap, "cache_hit_ratio"))
    ck = _mapping(_p(snap, "checkpoints"))
    lines = [
        _facts(
            [
                ("server", str(settings.get("server_version") or "?")),
                ("active", count(sessions.get("active", 0))),
                ("idle in trx", count(sessions.get("idle in transaction", 0))),
                ("sessions", count(sessions.get("total"))),
                ("commits", per_s(db.get("commits_per_s"))),
                ("rollbacks", per_s(db.get("rollbacks_per_s"))),
            ], width),
        _facts(
            [
                ("WAL", mib_s(_p(snap, "wal_bytes_per_s"))),
                ("cache hit", ratio_pct(hit.get("interval"))),
                ("db size", mib(db.get("size_bytes"))),
                ("growth", mib_s(db.get("growth_bytes_per_s"))),
                ("checkpoints timed/req", f"{count(ck.get('timed'))}/{count(ck.get('requested'))}"),
                ("autovacuum", count(_p(snap, "autovacuum_workers"))),
            ], width),
    ]
    waits = _p(snap, "wait_events")
    if isinstance(waits, list) and waits:
        top = ", ".join(f"{w['type']}:{w['event']} ×{w['count']}" for w in waits[:3])
        lines.append(_facts([("waiting on", top)], width))
    blocked = [r for r in _p(snap, "activity") or [] if isinstance(r, dict) and r.get("blocked_by")]
    if blocked:
        lines.append(Text(f"⚠ {len(blocked)} session(s) blocked by a lock (red rows)", "bold red"))
    return lines


def checkpointer_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    """Checkpointer, background writer and WAL laid out like pgcenter's screens."""
    out: list[Text] = []
    ck, wal = _p(snap, "checkpoints"), _p(snap, "wal")
    for label, value in (("checkpointer", ck), ("WAL", wal)):
        missing = _missing_line(label, value)
        if missing is not None:
            out.append(missing)
    ck, wal = _mapping(ck), _mapping(wal)
    settings = _mapping(_p(snap, "settings"))

    def section(title: str, rows: Sequence[tuple[str, str]]) -> None:
        out.append(Text(title, "bold underline"))
        for label, value in rows:
            line = Text(f"  {label:<34}", "dim")
            line.append(value, "bold")
            out.append(line)

    section(
        "checkpointer",
        [
            ("checkpoints timed / requested", f"{count(ck.get('timed'))} / {count(ck.get('requested'))}"),
            ("timed / requested per hour", f"{count(ck.get('timed_per_h'))} / {count(ck.get('requested_per_h'))}"),
            ("buffers written", per_s(ck.get("buffers_written_per_s"))),
            ("write time", ms_per_s(ck.get("write_time_ms_per_s"))),
            ("sync time", ms_per_s(ck.get("sync_time_ms_per_s"))),
            ("checkpoint_timeout / max_wal_size",
             f"{dur(settings.get('checkpoint_timeout'))} / {mib(settings.get('max_wal_size_bytes'))}"),
        ],
    )  # fmt: skip
    section(
        "background writer",
        [
            ("buffers cleaned", per_s(ck.get("buffers_clean_per_s"))),
            ("stopped at bgwriter_lru_maxpages", count(ck.get("maxwritten_clean"))),
            ("buffers allocated", per_s(ck.get("buffers_alloc_per_s"))),
            ("written by backends", per_s(ck.get("buffers_backend_per_s"))),
        ],
    )
    section(
        "WAL",
        [
            ("generated", mib_s(_p(snap, "wal_bytes_per_s"))),
            ("records", per_s(wal.get("wal_records_per_s"))),
            ("full-page images", per_s(wal.get("wal_fpi_per_s"))),
            ("buffers full", per_s(wal.get("wal_buffers_full_per_s"))),
            ("writes / syncs", f"{per_s(wal.get('wal_write_per_s'))} / {per_s(wal.get('wal_sync_per_s'))}"),
            ("synchronous_commit / fsync", f"{text(settings.get('synchronous_commit'))} / {text(settings.get('fsync'))}"),
        ],
    )
    return out


def database_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    db = _p(snap, "database")
    missing = _missing_line("database", db)
    if missing is not None:
        return [missing]
    db = _mapping(db)
    return [
        _facts(
            [
                ("database", str(db.get("name"))),
                ("size", mib(db.get("size_bytes"))),
                ("growth", mib_s(db.get("growth_bytes_per_s"))),
                ("rows inserted", per_s(db.get("tup_inserted_per_s"))),
                ("updated", per_s(db.get("tup_updated_per_s"))),
                ("deleted", per_s(db.get("tup_deleted_per_s"))),
                ("temp", mib_s(db.get("temp_bytes_per_s"))),
                ("deadlocks", per_s(db.get("deadlocks_per_s"))),
            ], width)
    ]


PG_ACTIVITY = TableSpec(
    "activity",
    "sessions now (active first; i shows idle; red = blocked)",
    (
        Col("PID", "pid", ident, True),
        Col("User", "user", min_screen=100),
        Col("DB", "db", min_screen=100),
        Col("State", "state", _pg_state),
        Col("Wait", "wait", min_screen=100),
        Col("Blocked by", "blocked_by"),
        Col("Trx age", "xact_age_s", dur, True, min_screen=120),
        Col("Query age", "query_age_s", dur, True),
        Col("Query", "query"),
    ),
    "query_age_s",
    idle=_pg_idle,
    alert=_pg_alert,
    rows=_pg_rows,
)
PG_STATEMENTS = TableSpec(
    "top_statements",
    "top statements in the interval (pg_stat_statements, by total time)",
    (
        Col("Time/s", "total_ms_per_s", ms_per_s, True),
        Col("Calls/s", "calls_per_s", per_s, True),
        Col("Mean", "mean_ms", msec, True),
        Col("Rows/s", "rows_per_s", per_s, True, min_screen=100),
        Col("Hit/s", "shared_blks_hit_per_s", per_s, True, min_screen=140),
        Col("Read/s", "shared_blks_read_per_s", per_s, True, min_screen=120),
        Col("User", "user", min_screen=100),
        Col("Statement", "query"),
    ),
    "total_ms_per_s",
)
PG_TABLES = TableSpec(
    "tables",
    "tables (top by blocks read)",
    (
        Col("Read/s", "blks_read_per_s", per_s, True),
        Col("Hit/s", "blks_hit_per_s", per_s, True, min_screen=100),
        Col("Hit", "hit_pct", pct, True),
        Col("Size", "size_bytes", mib, True),
        Col("Seq scans", "seq_scan", count, True, min_screen=100),
        Col("Idx scans", "idx_scan", count, True, min_screen=100),
        Col("Dead rows", "dead_rows", count, True),
        Col("Last vacuum", "last_vacuum", min_screen=140),
        Col("Table", "table_name"),
    ),
    "blks_read_per_s",
)
PG_INDEXES = TableSpec(
    "indexes",
    "indexes (top by blocks read)",
    (
        Col("Read/s", "blks_read_per_s", per_s, True),
        Col("Hit/s", "blks_hit_per_s", per_s, True, min_screen=100),
        Col("Hit", "hit_pct", pct, True),
        Col("Size", "size_bytes", mib, True),
        Col("Scans", "scans", count, True),
        Col("Table", "table_name"),
        Col("Index", "index_name"),
    ),
    "blks_read_per_s",
)
PG_VACUUM = TableSpec(
    "vacuum",
    "vacuums running now",
    (
        Col("PID", "pid", ident, True),
        Col("Auto", "auto", lambda v: "yes" if v else "no"),
        Col("Running", "running_s", dur, True),
        Col("Scanned", "scanned_pct", pct, True),
        Col("Phase", "phase"),
        Col("Index passes", "index_vacuum_count", count, True),
        Col("Table", "table_name"),
    ),
    "running_s",
)

# ------------------------------------------------------------------ PgBouncer


def _pool_alert(row: Mapping[str, Any]) -> str | None:
    waiting = row.get("cl_waiting") or 0
    return "bold red" if waiting or (row.get("maxwait") or 0) or (row.get("maxwait_us") or 0) else None


def _pool_rows(value: Any) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        r["maxwait_s"] = (r.get("maxwait") or 0) + (r.get("maxwait_us") or 0) / 1e6
    return rows


def pgbouncer_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    cl, sv = _mapping(_p(snap, "client_states")), _mapping(_p(snap, "server_states"))
    stats = [s for s in _p(snap, "stats") or [] if isinstance(s, dict)]
    xact = sum(s.get("xact_per_s") or 0 for s in stats)
    query = sum(s.get("query_per_s") or 0 for s in stats)
    waiting = cl.get("waiting") or 0
    lines = [
        _facts(
            [
                ("version", str(_p(snap, "version") or "?")),
                ("clients active", count(cl.get("active"))),
                ("waiting", count(waiting)),
                ("servers active", count(sv.get("active"))),
                ("idle", count(sv.get("idle"))),
                ("used", count(sv.get("used"))),
            ], width),
        _facts([("transactions", per_s(xact)), ("queries", per_s(query))], width),
    ]
    if waiting:
        lines.append(Text(f"⚠ {waiting} client(s) waiting for a server connection (red pools)", "bold red"))
    return lines


PGB_POOLS = TableSpec(
    "pools",
    "pools (red: clients waiting)",
    (
        Col("Database", "database"),
        Col("User", "user", min_screen=100),
        Col("Clients", "cl_active", count, True),
        Col("Waiting", "cl_waiting", count, True),
        Col("Servers", "sv_active", count, True),
        Col("Idle", "sv_idle", count, True),
        Col("Used", "sv_used", count, True),
        Col("Max wait", "maxwait_s", dur, True),
        Col("Mode", "pool_mode", min_screen=100),
    ),
    "cl_active",
    alert=_pool_alert,
    rows=_pool_rows,
)
PGB_STATS = TableSpec(
    "stats",
    "per database, in the interval",
    (
        Col("Database", "database"),
        Col("Trx/s", "xact_per_s", per_s, True),
        Col("Queries/s", "query_per_s", per_s, True),
        Col("Avg trx", "avg_xact_time_us", usec, True),
        Col("Avg query", "avg_query_time_us", usec, True, min_screen=100),
        Col("Wait per trx", "avg_wait_time_us", usec, True),
        Col("In", "received_bytes_per_s", mib_s, True, min_screen=140),
        Col("Out", "sent_bytes_per_s", mib_s, True, min_screen=140),
    ),
    "xact_per_s",
)


def _peer_spec(panel: str, title: str) -> TableSpec:
    return TableSpec(
        panel,
        title,
        (
            Col("State", "state"),
            Col("User", "user", min_screen=100),
            Col("Database", "database"),
            Col("Address", "addr", min_screen=100),
            Col("Port", "port", min_screen=140),
            Col("Waiting", "wait_s", dur, True),
            Col("Connected at", "connect_time", min_screen=140),
            Col("Last request", "request_time", min_screen=120),
            Col("Application", "application_name", min_screen=100),
        ),
        "wait_s",
        alert=lambda r: "bold red" if r.get("state") == "waiting" else None,
    )


# ------------------------------------------------------------------ ProxySQL


def proxysql_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    glob = _mapping(_p(snap, "global"))
    rates = _mapping(_p(snap, "global_rates"))
    wait = _mapping(_p(snap, "pool_wait"))
    return [
        _facts(
            [
                ("uptime", dur(glob.get("ProxySQL_Uptime"))),
                ("client conns", f"{count(glob.get('Client_Connections_connected'))}"),
                ("server conns", f"{count(glob.get('Server_Connections_connected'))}"),
                ("queries", per_s(rates.get("Questions"))),
                ("slow", per_s(rates.get("Slow_queries"))),
            ], width),
        _facts(
            [
                ("time in proxy", pct(wait.get("proxy_time_pct"))),
                ("in backends", ms_per_s(wait.get("backend_time_ms_per_s"))),
                ("conn from pool at once", pct(wait.get("immediate_pct"))),
                ("conn failures", per_s(wait.get("get_conn_failure_per_s"))),
            ], width),
    ]


# GloStat's sections, as Proxytop groups stats_mysql_global.
_GLOSTAT_SECTIONS = (
    ("connections", ("Client_Connections_", "Server_Connections_", "Active_Transactions", "Access_Denied")),
    ("queries", ("Questions", "Slow_queries", "Com_", "Backend_query_time", "Query_Processor_time", "Selects_for_update")),
    ("connection pool", ("ConnPool_", "MyHGM_", "mysql_backend_buffers", "mysql_frontend_buffers", "mysql_session")),
    ("query cache", ("Query_Cache_",)),
    ("traffic", ("Queries_backends_bytes", "Queries_frontends_bytes")),
)


def _glostat_rows(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, Mapping):
        return []
    rows = []
    for name, v in value.items():
        section = next((s for s, prefixes in _GLOSTAT_SECTIONS if name.startswith(prefixes)), "other")
        rows.append({"section": section, "variable": name, "value": v})
    order = [s for s, _ in _GLOSTAT_SECTIONS] + ["other"]
    rows.sort(key=lambda r: (order.index(r["section"]), r["variable"]))
    return rows


def rows_for(spec: TableSpec, snap: SourceSnapshot) -> list[dict[str, Any]] | Missing:
    """The rows a table shows from a snapshot, or the panel's Missing."""
    value = snap.panels.get(spec.panel)
    if isinstance(value, Missing):
        return value
    rows = spec.rows_of(value)
    if spec.panel == "global":
        rates = _mapping(snap.panels.get("global_rates"))
        for r in rows:
            r["per_s"] = rates.get(r["variable"])
    return rows


PSQL_POOL = TableSpec(
    "connection_pool",
    "ConnPool: backends per hostgroup",
    (
        Col("HG", "hostgroup", ident, True),
        Col("Server", "srv_host"),
        Col("Port", "srv_port", min_screen=120),
        Col("Status", "status"),
        Col("Used", "ConnUsed", count, True),
        Col("Free", "ConnFree", count, True),
        Col("Used %", "ConnUsed_pct", pct, True, min_screen=100),
        Col("OK/s", "ConnOK_per_s", per_s, True, min_screen=120),
        Col("Err/s", "ConnERR_per_s", per_s, True, min_screen=100),
        Col("Queries/s", "Queries_per_s", per_s, True),
        Col("Sent", "Bytes_data_sent_per_s", mib_s, True, min_screen=140),
        Col("Recv", "Bytes_data_recv_per_s", mib_s, True, min_screen=140),
        Col("Latency", "Latency_us", usec, True),
    ),
    "Queries_per_s",
    alert=lambda r: "bold red" if r.get("status") not in (None, "ONLINE") else None,
)
PSQL_RULES = TableSpec(
    "query_rules",
    "QueryRules: hits per rule",
    (
        Col("Rule", "rule_id", ident, True),
        Col("Hits/s", "hits_per_s", per_s, True),
        Col("Hits", "hits", count, True),
        Col("Dest HG", "destination_hostgroup", ident, True),
        Col("Active", "active"),
        Col("Apply", "apply", min_screen=100),
        Col("Match digest", "match_digest"),
        Col("Match pattern", "match_pattern", min_screen=120),
    ),
    "hits_per_s",
)
PSQL_GLOBAL = TableSpec(
    "global",
    "GloStat: stats_mysql_global by section",
    (
        Col("Section", "section"),
        Col("Variable", "variable"),
        Col("Value", "value", count, True),
        Col("Per second", "per_s", per_s, True),
    ),
    "section",
    rows=_glostat_rows,
    descending=False,
)
PSQL_PROCLIST = TableSpec(
    "processlist",
    "ProcList: client sessions (refreshed every few seconds; i shows idle)",
    (
        Col("Session", "SessionID", ident, True),
        Col("User", "user", min_screen=100),
        Col("DB", "db", min_screen=100),
        Col("Client", "cli_host", min_screen=120),
        Col("HG", "hostgroup", ident, True, min_screen=120),
        Col("Backend", "srv_host", min_screen=100),
        Col("Command", "command", min_screen=100),
        Col("Time", "time_ms", msec, True),
        Col("Info", "info"),
    ),
    "time_ms",
    idle=lambda r: r.get("command") == "Sleep",
)


def _command_rows(value: Any) -> list[dict[str, Any]]:
    rows = [dict(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    for r in rows:
        us = r.get("interval_time_us")
        r["time_ms_per_s"] = None if us is None else us / 1000.0  # refined to per second by the poll interval
    return rows


PSQL_COMMANDS = TableSpec(
    "commands",
    "ComCount: commands (Enter: latency buckets)",
    (
        Col("Command", "Command"),
        Col("Count/s", "cnt_per_s", per_s, True),
        Col("Avg (interval)", "avg_us", usec, True),
        Col("Avg (total)", "avg_us_total", usec, True, min_screen=100),
        Col("Total", "Total_cnt", count, True),
    ),
    "cnt_per_s",
    rows=_command_rows,
)
PSQL_DIGESTS = TableSpec(
    "digest_top",
    "digests by time in the interval",
    (
        Col("Time/s", "time_ms_per_s", ms_per_s, True),
        Col("Count/s", "count_per_s", per_s, True),
        Col("Avg", "avg_us", usec, True),
        Col("HG", "hostgroup", ident, True, min_screen=120),
        Col("Schema", "schemaname", min_screen=120),
        Col("User", "username", min_screen=120),
        Col("Digest", "digest_text"),
    ),
    "time_ms_per_s",
)

# ------------------------------------------------------------------ OS


def os_summary(snap: SourceSnapshot, width: int) -> list[Text]:
    cpu, disk = _mapping(_p(snap, "cpu")), _mapping(_p(snap, "disk"))
    return [
        _facts(
            [
                ("cpu user", pct(cpu.get("user_pct"))),
                ("system", pct(cpu.get("system_pct"))),
                ("iowait", pct(cpu.get("iowait_pct"))),
                ("steal", pct(cpu.get("steal_pct"))),
                ("context switches", per_s(_p(snap, "context_switches_per_s"))),
            ], width),
        _facts(
            [
                ("disk read", mib_s((disk.get("read_kb_per_s") or 0) * 1024 if "read_kb_per_s" in disk else None)),
                ("write", mib_s((disk.get("write_kb_per_s") or 0) * 1024 if "write_kb_per_s" in disk else None)),
                ("reads", per_s(disk.get("reads_per_s"))),
                ("writes", per_s(disk.get("writes_per_s"))),
            ], width),
    ]


# ------------------------------------------------------------------ the views of each source

VIEWS: Mapping[str, tuple[View, ...]] = {
    "mysql": (
        View("top", "what runs now and what costs most", mysql_summary, (MYSQL_PROCESSLIST, MYSQL_STATEMENTS)),
        View("statements", "top statements", mysql_summary, (MYSQL_STATEMENTS,)),
        View("waits", "waits", None, (MYSQL_WAITS,)),
        View("innodb", "InnoDB", innodb_summary, ()),
        View("locks", "lock waits", None, (MYSQL_LOCKS,)),
    ),
    "postgresql": (
        View("activity", "what runs now and what costs most", postgres_summary, (PG_ACTIVITY, PG_STATEMENTS)),
        View("statements", "top statements", postgres_summary, (PG_STATEMENTS,)),
        View("checkpoints", "checkpointer, background writer, WAL", checkpointer_summary, ()),
        View("tables", "tables and indexes", database_summary, (PG_TABLES, PG_INDEXES)),
        View("vacuum", "vacuum progress", database_summary, (PG_VACUUM,)),
    ),
    "pgbouncer": (
        View("pools", "pools and traffic", pgbouncer_summary, (PGB_POOLS, PGB_STATS)),
        View("clients", "clients (SHOW CLIENTS)", pgbouncer_summary, (_peer_spec("clients", "clients"),)),
        View("servers", "servers (SHOW SERVERS)", pgbouncer_summary, (_peer_spec("servers", "server connections"),)),
    ),
    "proxysql": (
        View("connpool", "ConnPool", proxysql_summary, (PSQL_POOL, PSQL_DIGESTS)),
        View("queryrules", "QueryRules", None, (PSQL_RULES,)),
        View("glostat", "GloStat", proxysql_summary, (PSQL_GLOBAL,)),
        View("proclist", "ProcList", None, (PSQL_PROCLIST,)),
        View("comcount", "ComCount", None, (PSQL_COMMANDS,)),
        View("digests", "query digests", None, (PSQL_DIGESTS,)),
    ),
    "os": (View("host", "this host", os_summary, ()),),
}


def views_for(kind: str) -> tuple[View, ...]:
    return VIEWS.get(kind, ())


def cell_of(col: Col, row: Mapping[str, Any]) -> Cell:
    value = row.get(col.key)
    shown = col.fmt(value)
    return Text(shown, justify="right") if col.numeric else shown
