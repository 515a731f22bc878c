"""Server-side series on the benchmark's time axis: a few numbers picked
from each source's snapshot, held per engine interval, drawn as one-row
sparklines under the client's charts, with their per-transaction values.

Picks name panels and keys the sources document; a pick whose panel is
missing (privilege, version) simply has no value, so it draws nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.text import Text
from textual.widget import Widget

from benchtop.sources.base import Missing, SourceSnapshot
from benchtop.sources.fields import (
    CACHE_HIT_RATIO,
    CHECKPOINTS,
    CLIENT_STATES,
    CPU,
    DISK,
    INNODB,
    POOL_WAIT,
    STATS,
    WAL_BYTES_PER_S,
)
from benchtop.screens.widgets.chart import LABEL_W
from benchtop.screens.widgets.fmt import crop
from benchtop.panels.units import ms, num, size

_BLOCKS = "▁▂▃▄▅▆▇█"
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Pick:
    label: str
    path: tuple[str, ...]  # panel, then keys; "*" sums over a mapping's values
    unit: str = ""  # "B" bytes/s, "us" microseconds/s, "%", "ratio", or a suffix such as "/s"
    per_txn: bool = False  # a rate worth dividing by the client's tps
    scale: float = 1.0  # what one unit of the source's value is in `unit` (kB -> B: 1024)


PICKS: Mapping[str, tuple[Pick, ...]] = {
    "postgresql": (
        Pick("WAL", (WAL_BYTES_PER_S,), "B", True),
        Pick("ckpt buffers", (CHECKPOINTS, "buffers_written_per_s"), "/s", True),
        Pick("cache hit", (CACHE_HIT_RATIO, "interval"), "ratio"),
    ),
    "mysql": (
        Pick("redo", (INNODB, "redo_bytes_per_s"), "B", True),
        Pick("ckpt age", (INNODB, "checkpoint_age_pct"), "%"),
        Pick("dirty pages", (INNODB, "dirty_pages_pct"), "%"),
        Pick("row lock waits", (INNODB, "row_lock_waits_per_s"), "/s", True),
    ),
    "pgbouncer": (
        Pick("pool wait", (STATS, "*", "wait_time_us_per_s"), "us", True),
        Pick("clients waiting", (CLIENT_STATES, "waiting")),
    ),
    "proxysql": (
        Pick("proxy time", (POOL_WAIT, "proxy_time_pct"), "%"),
        Pick("conn waits", (POOL_WAIT, "get_conn_success_per_s"), "/s", True),
    ),
    "os": (
        Pick("iowait", (CPU, "iowait_pct"), "%"),
        Pick("disk write", (DISK, "write_kb_per_s"), "B", True, scale=1024.0),
        Pick("cpu user", (CPU, "user_pct"), "%"),
    ),
}


def dig(panels: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    """A number from a snapshot's panels, or None when it is not there.

    >>> dig({"stats": {"a": {"w": 2}, "b": {"w": 3}}}, ("stats", "*", "w"))
    5.0
    >>> dig({"stats": [{"w": 2}, {"w": 3}]}, ("stats", "*", "w"))
    5.0
    >>> dig({"innodb": Missing("no")}, (INNODB, "lsn")) is None
    True
    """
    value: Any = panels
    for i, key in enumerate(path):
        if key == "*" and isinstance(value, list):
            value = dict(enumerate(value))
        if isinstance(value, Missing) or not isinstance(value, Mapping):
            return None
        if key == "*":
            parts = [dig({"v": v}, ("v", *path[i + 1 :])) for v in value.values()]
            found = [p for p in parts if p is not None]
            return float(sum(found)) if found else None
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def picks_for(snap: SourceSnapshot) -> dict[str, float]:
    """`"<source> <label>"` -> value for every pick the snapshot has."""
    out = {}
    for pick in PICKS.get(snap.kind, ()):
        v = dig(snap.panels, pick.path)
        if v is not None:
            out[f"{snap.name} {pick.label}"] = v * pick.scale
    return out


def pick_named(key: str, kinds: Mapping[str, str]) -> Pick | None:
    """The Pick behind a `"<source> <label>"` key."""
    source, _, label = key.partition(" ")
    return next((p for p in PICKS.get(kinds.get(source, ""), ()) if p.label == label), None)


def fmt_value(v: float, unit: str) -> str:
    """Every unit printed once, with its own scale.

    >>> fmt_value(2_500_000, "B"), fmt_value(12.345, "%"), fmt_value(1500, "/s")
    ('2.4 MiB/s', '12.3%', '1.50k/s')
    >>> fmt_value(21.7 * 1024, "B"), fmt_value(12_300, "us")
    ('21.7 KiB/s', '12.3ms/s')
    """
    if math.isnan(v):
        return "-"
    if unit == "B":
        return size(v) + "/s"
    if unit == "us":  # time spent waiting per second
        return ms(v / 1000) + "/s"
    if unit == "%":
        return f"{v:.1f}%"
    if unit == "ratio":
        return f"{v:.4f}"
    return num(v) + unit


@dataclass(frozen=True, slots=True)
class StripRow:
    label: str
    values: tuple[float, ...]  # one per engine interval, NaN = no data
    fmt: Callable[[float], str]
    per_txn: Callable[[float], str] | None = None  # formats the latest value / tps
    latest_per_txn: float = NAN


class ServerSeries:
    """The latest picks of every source, held once per engine interval so
    they line up with the screen's intervals index for index."""

    def __init__(self, order: Sequence[str]) -> None:
        self.order = {name: i for i, name in enumerate(order)}
        self.latest: dict[str, dict[str, float]] = {}  # source -> its picks (absent while down)
        self.kinds: dict[str, str] = {}
        self.values: dict[str, list[float]] = {}  # "<source> <label>" -> one value per interval
        self.length = 0

    def polled(self, snap: SourceSnapshot) -> bool:
        """Record a poll; True when the source was down and is back."""
        back = snap.name in self.kinds and snap.name not in self.latest
        self.kinds[snap.name] = snap.kind
        self.latest[snap.name] = picks_for(snap)
        return back

    def lost(self, source: str) -> bool:
        """Record an outage (gaps from now on); True if it was up."""
        return self.latest.pop(source, None) is not None

    def hold(self, new: int) -> None:
        """`new` more intervals, each with the values known now."""
        current = {k: v for picks in self.latest.values() for k, v in picks.items()}
        for key in current.keys() - self.values.keys():
            self.values[key] = [NAN] * self.length
        for key, values in self.values.items():
            values.extend([current.get(key, NAN)] * new)
        self.length += new

    def rows(self, history: Sequence[Any]) -> list[StripRow]:
        """Rows over the newest `len(history)` intervals (history holds
        IntervalStats, for the per-transaction values), each source's first
        pick first."""
        offset = self.length - len(history)

        def rank(key: str) -> tuple[int, int]:
            source = key.partition(" ")[0]
            picks = PICKS.get(self.kinds.get(source, ""), ())
            pick = pick_named(key, self.kinds)
            return (picks.index(pick) if pick in picks else len(picks), self.order.get(source, len(self.order)))

        rows = []
        for key in sorted(self.values, key=rank):
            pick = pick_named(key, self.kinds)
            if pick is None:
                continue
            values = tuple(self.values[key][offset:])
            per_txn, latest_per_txn = None, NAN
            if pick.per_txn:
                i = next((i for i in range(len(values) - 1, -1, -1) if not math.isnan(values[i])), None)
                if i is not None and i < len(history) and history[i].tps > 0:
                    latest_per_txn = values[i] / history[i].tps
                per_txn = _per_txn_fmt(pick.unit.removesuffix("/s"))
            rows.append(StripRow(key, values, partial(fmt_value, unit=pick.unit), per_txn, latest_per_txn))
        return rows


def _per_txn_fmt(unit: str) -> Callable[[float], str]:
    """
    >>> _per_txn_fmt("B")(1536.0), _per_txn_fmt("us")(12.345), _per_txn_fmt("")(0.0719)
    ('1.5 KiB', '12.3µs', '0.0719')
    """
    if unit == "B":
        return size
    if unit == "us":
        return lambda v: ms(v / 1000)
    return lambda v: f"{v:.3g}{unit}"


def spark(values: Sequence[float], width: int, whole: bool, per_cell: int = 2) -> str:
    """A one-row sparkline aligned with the charts: two intervals per cell
    (their max), from the left edge until the width fills, then the newest;
    gaps (NaN) stay blank.

    >>> spark([0, 1, 2, 3, float("nan"), float("nan")], 4, False)
    '▃█  '
    >>> spark([1, 2, 4, 8], 6, False, per_cell=1)
    '▁▂▄█  '
    """
    n = len(values)
    factor = per_cell if not whole or n <= width * per_cell else per_cell * -(-n // (width * per_cell))
    cells = []
    for i in range(0, n, factor):
        group = [v for v in values[i : i + factor] if not math.isnan(v)]
        cells.append(max(group) if group else NAN)
    cells = cells[-width:]
    top = max((c for c in cells if not math.isnan(c)), default=0.0)
    out = []
    for c in cells:
        if math.isnan(c):
            out.append(" ")
        else:
            out.append(_BLOCKS[min(int(c / top * 7.999), 7)] if top > 0 else _BLOCKS[0])
    return "".join(out) + " " * (width - len(out))


def render_strip(rows: Sequence[StripRow], width: int, height: int, whole: bool) -> Text:
    text = Text(no_wrap=True)
    plot_w = max(width - LABEL_W - 1, 4)
    shown = rows[: max(height // 2, 0)]
    for k, row in enumerate(shown):
        latest = next((v for v in reversed(row.values) if not math.isnan(v)), NAN)
        if k:
            text.append("\n")
        text.append(row.label, "bold")
        text.append(f" {row.fmt(latest)}")
        if row.per_txn is not None and not math.isnan(row.latest_per_txn):
            text.append(f" · {row.per_txn(row.latest_per_txn)}/txn")
        text.append("\n" + " " * LABEL_W + "│", "dim")
        text.append(spark(row.values, plot_w, whole), "cyan")
    return text


class ServerStrip(Widget):
    """Server-side sparklines sharing the charts' time axis."""

    DEFAULT_CSS = """
    ServerStrip { height: 4; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: tuple[StripRow, ...] = ()
        self._whole = False

    def update_data(self, rows: Sequence[StripRow], whole: bool) -> None:
        self._rows = tuple(rows)
        self._whole = whole
        self.refresh()

    def render(self) -> Text:
        if not self._rows:
            return Text("server: waiting for the sources' first values…", style="dim")
        return crop(render_strip(self._rows, self.size.width, self.size.height, self._whole), self.size.width)
