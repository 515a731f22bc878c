"""Per-second rates from cumulative counters read at successive polls.

A counter that went backwards means the server restarted or its statistics
were reset: that interval has no rate (None) rather than a huge negative one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True, slots=True)
class Interval:
    """Two readings of the same counters and the seconds between them."""

    prev: Mapping[str, float] | None
    cur: Mapping[str, float]
    seconds: float | None

    def delta(self, key: str) -> float | None:
        """
        >>> Interval({"a": 5}, {"a": 8}, 2.0).delta("a")
        3
        >>> Interval({"a": 5}, {"a": 1}, 2.0).delta("a") is None  # reset
        True
        """
        if self.prev is None or key not in self.prev or key not in self.cur:
            return None
        d = self.cur[key] - self.prev[key]
        return d if d >= 0 else None

    def rate(self, key: str, scale: float = 1.0, digits: int = 3) -> float | None:
        """Change of `key` per second (times `scale`).

        >>> Interval({"a": 5}, {"a": 8}, 2.0).rate("a")
        1.5
        """
        d = self.delta(key)
        if d is None or not self.seconds:
            return None
        return round(d * scale / self.seconds, digits)

    def ratio(self, num: str, den: str, digits: int = 3) -> float | None:
        """delta(num) / delta(den), None when the denominator did not move.

        >>> Interval({"t": 10, "n": 2}, {"t": 40, "n": 5}, 1.0).ratio("t", "n")
        10.0
        """
        dn, dd = self.delta(num), self.delta(den)
        if dn is None or not dd:
            return None
        return round(dn / dd, digits)


class CounterTracker:
    """Keeps the previous reading; `advance()` returns the interval since it."""

    def __init__(self) -> None:
        self._prev: dict[str, float] | None = None
        self._prev_t: float | None = None

    def reset(self) -> None:
        """Forget the previous reading (after a reconnect: counters may have restarted)."""
        self._prev = None
        self._prev_t = None

    def advance(self, values: Mapping[str, float], now: float | None = None) -> Interval:
        now = time.monotonic() if now is None else now
        cur = dict(values)
        seconds = None if self._prev_t is None else max(now - self._prev_t, 1e-9)
        interval = Interval(self._prev, cur, seconds)
        self._prev, self._prev_t = cur, now
        return interval


def to_number(value: object) -> float | int | None:
    """A server's textual counter as a number, None if it is not one.

    >>> to_number("42"), to_number(b"1.5"), to_number("ON"), to_number(None)
    (42, 1.5, None, None)
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (bytes, bytearray)):
        value = value.decode(errors="replace")
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None
