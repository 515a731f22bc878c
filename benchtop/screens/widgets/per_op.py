"""The compact "per transaction" line under the charts: what the newest
interval cost the host and the server per transaction (vmstat/iostat
normalised, the server's own log and CPU), and the client's own CPU, with
its warning when the client may be the bottleneck.  It fits its width: a
figure that does not fit is left out whole (the least telling first),
never cut in the middle."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from benchtop.record.costs import per_op_parts
from benchtop.record.samples import IntervalStats

# what goes first at a narrow width, as (group, first word): the host's read
# side says least in an OLTP run whose data is cached, the client's CPU
# has its own warning, the host's CPU includes the client's (the server's
# is its own process tree)
_DROP_ORDER = (("host", "reads"), ("host", "read"), ("host", "cs"), ("client", "CPU"), ("host", "CPU"),
               ("server", "CPU"))


def per_op_text(iv: IntervalStats | None, width: int = 1000) -> Text:
    """
    >>> from benchtop.engine.histogram import Histogram
    >>> from benchtop.record.costs import ClientCpu, IntervalCosts, PerOp, Work
    >>> h = Histogram.empty()
    >>> iv = IntervalStats(1.0, 1.0, 2, 0.0, False, 100, 100.0, 0, 0, 0, 0, 0, 0, {}, {}, {}, 0, 0, h, h,
    ...                    costs=IntervalCosts(PerOp(reads=0.5, kb_read=0.03, kb_written=24.55, context_switches=2.1,
    ...                                              cpu_s=0.00043, wal_bytes=1559.0, server_cpu_s=0.0002),
    ...                                        ClientCpu(per_op_us=245.0), Work(1.0), log_name="WAL"))
    >>> print(per_op_text(iv).plain)
    per transaction: host reads 0.50  read 31 B  written 24.6 KiB  cs 2.1  CPU 0.430 ms  server WAL 1.52 KiB  CPU 0.200 ms  client CPU 0.245 ms
    >>> print(per_op_text(iv, 78).plain)
    per txn: host written 24.6 KiB  server WAL 1.52 KiB  CPU 0.200 ms
    >>> print(per_op_text(None).plain)
    per transaction: -
    """
    costs = iv.costs if iv is not None else None
    if costs is None:
        parts, warning = [], None
    else:
        parts = per_op_parts(costs.per_op, costs.log_name)
        if costs.client_cpu.per_op_us is not None:
            # in ms as the host's and the server's CPU beside it ('client CPU 1600 us' read oddly there)
            parts.append(("client", f"CPU {costs.client_cpu.per_op_us / 1000:.3f} ms"))
        warning = costs.client_cpu.warning
    line = _line("per transaction: ", parts)
    if len(line) > width:
        kept = list(parts)
        for key in _DROP_ORDER:
            line = _line("per txn: ", kept)
            if len(line) <= width:
                break
            kept = [p for p in kept if (p[0], p[1].split(" ")[0]) != key]
        while len(line := _line("per txn: ", kept)) > width and kept:
            kept.pop()
    t = Text(line, no_wrap=True, overflow="ellipsis")
    if warning:
        full, short = f"  ⚠ {warning}", "  ⚠ " + warning.split(":", 1)[0]
        room = width - len(line)
        if len(full) <= room:
            t.append(full, "bold yellow")
        elif len(short) <= room:
            t.append(short, "bold yellow")
        elif width >= 3:  # never silent: the mark, the text in the summary
            t = Text(line[: max(width - 3, 0)].rstrip() + " ⚠", no_wrap=True)
            t.stylize("bold yellow", len(t.plain) - 1)
    return t


def _line(prefix: str, parts: list[tuple[str, str]]) -> str:
    out, group = [], ""
    for g, text in parts:
        out.append(f"{g} {text}" if g != group else text)
        group = g
    return prefix + ("  ".join(out) if out else "-")


class PerOpLine(Widget):
    DEFAULT_CSS = """
    PerOpLine { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, iv: IntervalStats | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._iv = iv

    def show(self, iv: IntervalStats | None) -> None:
        self._iv = iv
        self.refresh()

    def render(self) -> Text:
        return per_op_text(self._iv, max(self.content_size.width, 1))


def show_per_op(container: Widget, iv: IntervalStats | None) -> None:
    """The line at the end of `container`, mounted with the first interval
    that has cost readings: a run without them (a remote engine, a test's
    fake controller) keeps its layout exactly as it was."""
    if iv is None or iv.costs is None:
        return
    lines = container.query(PerOpLine)
    if lines:
        lines.first().show(iv)
    else:
        container.mount(PerOpLine(iv, id="per-op"))
