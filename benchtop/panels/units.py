"""Human units for narrow columns: durations, rates, sizes, percentages, bars."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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


def ms(v: float) -> str:
    """A latency given in milliseconds, never with an exponent: a value
    that rounds up to the next unit is said in that unit.

    >>> [ms(x) for x in (0, 0.0123, 0.5, 1.234, 45.6, 1234, 65000)]
    ['0', '12.3µs', '500µs', '1.23ms', '45.6ms', '1.23s', '65.0s']
    >>> [ms(x) for x in (0.9996, 999.7, 0.0001, 0.00000001)]
    ['1ms', '1s', '0.1µs', '0.00001µs']
    """
    if v <= 0:
        return "0"
    if float(f"{v * 1000:.3g}") < 1000:
        return f"{_sig3(v * 1000)}µs"
    if float(f"{v:.3g}") < 1000:
        return f"{_sig3(v)}ms"
    return f"{_sig3(v / 1000)}s" if v < 9999.5 else f"{v / 1000:.1f}s"


def _sig3(v: float) -> str:
    """Three significant digits, trailing zeros dropped, in plain decimals
    (Python's `g` writes 0.00001 as 1e-05).

    >>> [_sig3(x) for x in (999.4, 12.34, 1.0, 0.5, 0.0000123)]
    ['999', '12.3', '1', '0.5', '0.0000123']
    """
    shown = f"{v:.3g}"
    if "e" not in shown:
        return shown
    return f"{float(shown):.{max(2 - math.floor(math.log10(abs(v))), 0)}f}".rstrip("0").rstrip(".")


def size(v: float) -> str:
    """Bytes, in binary units, named so (KiB, MiB, GiB: one system across
    benchtop, the report's too).

    >>> [size(x) for x in (0, 512, 2048, 1536000, 3.2e9, 22220.8)]
    ['0 B', '512 B', '2.0 KiB', '1.5 MiB', '3.0 GiB', '21.7 KiB']
    """
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


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

    >>> mib(536870912), mib(1536), mib(0), mib(None)
    ('512.0 MiB', '1.5 KiB', '0 B', '-')
    """
    return size(v) if isinstance(v, (int, float)) else "-"


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
