"""Latency histograms in the HdrHistogram log format (v1.3), so results can
be merged and plotted with HdrHistogram's own tools (HistogramLogProcessor,
HdrHistogram plotters) beside those of wrk2, YCSB or Gatling.

The engine's buckets are HdrHistogram's layout for (lowest 1 ns, 2
significant digits): 256 linear sub-buckets, then 128 per power of two, so a
counts array is written as it is, in HdrHistogram's V2 encoding (ZigZag
LEB128 counts, zero runs as negative numbers), DEFLATE-compressed, base64.
"""

from __future__ import annotations

import base64
import itertools
import struct
import time
import zlib

from benchtop.engine.histogram import Histogram, bucket_bounds

_V2_COOKIE = 0x1C849313  # V2 base cookie | 0x10, as the Java and C writers set it
_V2_COMPRESSED_COOKIE = 0x1C849314
SIGNIFICANT_DIGITS = 2
NS_PER_MS = 1_000_000.0


def _zigzag_leb128(value: int, out: bytearray) -> None:
    z = (value << 1) ^ (value >> 63)
    z &= (1 << 64) - 1
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def encode(h: Histogram) -> str:
    """One histogram as HdrHistogram's compressed, base64 V2 encoding."""
    payload = bytearray()
    counts = h.counts
    prev = -1
    # the non-empty buckets found in C (itertools.compress); the empty ones between as runs
    for i in itertools.compress(range(h.last_index() + 1), counts):
        if i - prev > 1:
            _zigzag_leb128(prev + 1 - i, payload)
        _zigzag_leb128(counts[i], payload)
        prev = i
    _, highs = bucket_bounds()
    header = struct.pack(">iiiiqqd", _V2_COOKIE, len(payload), 0, SIGNIFICANT_DIGITS, 1, highs[-1], 1.0)
    compressed = zlib.compress(header + bytes(payload))
    blob = struct.pack(">ii", _V2_COMPRESSED_COOKIE, len(compressed)) + compressed
    return base64.b64encode(blob).decode("ascii")


def header_lines(start_epoch: float) -> list[str]:
    when = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(start_epoch))
    return [
        "#[Histogram log format version 1.3]",
        f"#[StartTime: {start_epoch:.3f} (seconds since epoch), {when}]",
        "#[values are latencies in nanoseconds; Interval_Max in milliseconds]",
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]


def interval_line(start_s: float, length_s: float, h: Histogram, tag: str = "") -> str:
    """One log line: interval start (seconds since StartTime), length, max (ms), histogram;
    a tagged line (`Tag=inserters,...`, format 1.3) holds one thread group's."""
    prefix = f"Tag={tag}," if tag else ""
    return f"{prefix}{start_s:.3f},{length_s:.3f},{h.max_ns() / NS_PER_MS:.3f},{encode(h)}"
