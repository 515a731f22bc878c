"""Short human formats for narrow terminal columns (the plain numbers
`num`, `ms` and `size` are in benchtop.panels.units, shared with the headless
monitor)."""

from __future__ import annotations

import math
import re

from rich.text import Text


def tick(v: float) -> str:
    """An axis tick: a round value with no padding zeros.

    >>> [tick(x) for x in (0, 5, 250, 1000, 1500, 2000, 25000, 2.5e6, 0.5)]
    ['0', '5', '250', '1k', '1.5k', '2k', '25k', '2.5M', '0.5']
    """
    a = abs(v)
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")):
        if a >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"


def ms_tick(v: float) -> str:
    """A round latency (in ms) on an axis, without padding zeros.

    >>> [ms_tick(x) for x in (0.001, 0.1, 1, 10, 100, 1000, 10000, 2.5)]
    ['1µs', '100µs', '1ms', '10ms', '100ms', '1s', '10s', '2.5ms']

    A value that rounds up to the next unit takes it (never `1e+03µs`):

    >>> ms_tick(0.9996), ms_tick(999.7)
    ('1ms', '1s')
    """
    if v <= 0:
        return "0"
    if float(f"{v:.3g}") >= 1000:
        return f"{v / 1000:.3g}s"
    if float(f"{v * 1000:.3g}") >= 1000:
        return f"{v:.3g}ms"
    return f"{v * 1000:.3g}µs"


def ns_decade(exp: int) -> str:
    """Axis label for 10**exp nanoseconds.

    >>> [ns_decade(e) for e in (3, 4, 5, 6, 7, 9, 10)]
    ['1µs', '10µs', '100µs', '1ms', '10ms', '1s', '10s']
    """
    units = ((9, "s"), (6, "ms"), (3, "µs"), (0, "ns"))
    for base, unit in units:
        if exp >= base:
            return f"{10 ** (exp - base)}{unit}"
    return f"{10.0**exp:g}ns"


def clock(seconds: float) -> str:
    """
    >>> [clock(s) for s in (0, 59.9, 61, 3599, 3725)]
    ['0:00', '0:59', '1:01', '59:59', '1:02:05']
    """
    s = int(max(seconds, 0.0))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def nice_rate(v: float) -> float:
    """A round starting rate near `v` (two significant digits, at least 1).

    >>> [nice_rate(x) for x in (0, 0.3, 7.7, 1234.5, 98765)]
    [1.0, 1.0, 7.7, 1200.0, 99000.0]
    """
    if v < 1:
        return 1.0
    digits = 1 - math.floor(math.log10(v))
    return float(round(v, digits))


def middle(text: str, width: int) -> str:
    """`text` in at most `width` cells, shortened in the middle: both ends of
    a path say the most (the server, the file name).

    >>> middle("sqlite:///tmp/benchtop-abc123/benchtop.db", 24)
    'sqlite:///tm…benchtop.db'
    >>> middle("short", 24), middle("abcdef", 1)
    ('short', '…')
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail:]


def fit(items: list[tuple[str, str]], width: int, sep: str = "  ") -> list[tuple[str, str]]:
    """The first (text, style) items that fit whole in `width` cells, the
    most important first: the rest is left out, never cut.

    >>> [t for t, _ in fit([("tps 1.2k", ""), ("p99 43.9ms", ""), ("n=400", "")], 20)]
    ['tps 1.2k', 'p99 43.9ms']
    """
    out: list[tuple[str, str]] = []
    used = 0
    for text, style in items:
        need = len(text) + (len(sep) if out else 0)
        if used + need > width:
            break
        out.append((text, style))
        used += need
    return out


def crop(text: Text, width: int) -> Text:
    """Every line cut to `width` cells: charts must never wrap.

    >>> crop(Text("abcdef\\nxy"), 4).plain
    'abc…\\nxy'
    """
    lines = text.split("\n", allow_blank=True)
    for line in lines:
        line.truncate(max(width, 1), overflow="ellipsis")
    return Text("\n", no_wrap=True).join(lines)


def pane_id(name: str) -> str:
    """A widget id for a source name.

    >>> pane_id("mysql-2"), pane_id("db 1.example")
    ('mysql-2', 'db_1_example')
    """
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)
