"""Short human formats for narrow terminal columns."""

from __future__ import annotations

import math

from rich.text import Text


def num(v: float) -> str:
    """
    >>> [num(x) for x in (0, 7, 12.345, 999.4, 1234, 56789, 1.5e6, 2.25e9)]
    ['0', '7', '12.3', '999', '1.23k', '56.8k', '1.50M', '2.25G']
    """
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.2f}G"
    if a >= 1e6:
        return f"{v / 1e6:.2f}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}k"
    if a >= 1e3:
        return f"{v / 1e3:.2f}k"
    if a >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.1f}"


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
    """
    if v <= 0:
        return "0"
    if v >= 1000:
        return f"{v / 1000:.3g}s"
    if v >= 1:
        return f"{v:.3g}ms"
    return f"{v * 1000:.3g}µs"


def ms(v: float) -> str:
    """A latency given in milliseconds.

    >>> [ms(x) for x in (0, 0.0123, 0.5, 1.234, 45.6, 1234, 65000)]
    ['0', '12.3µs', '500µs', '1.23ms', '45.6ms', '1.23s', '65.0s']
    """
    if v <= 0:
        return "0"
    if v < 1:
        return f"{v * 1000:.3g}µs"
    if v < 1000:
        return f"{v:.3g}ms"
    return f"{v / 1000:.3g}s" if v < 10000 else f"{v / 1000:.1f}s"


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


def size(v: float) -> str:
    """Bytes, in binary units (each printed once: 21.7kB, never 21.7kkB).

    >>> [size(x) for x in (0, 512, 2048, 1536000, 3.2e9, 22220.8)]
    ['0B', '512B', '2.0kB', '1.5MB', '3.0GB', '21.7kB']
    """
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:.1f}{unit}"
    return f"{v:.0f}B"
