"""Load hosts of a cluster run: one row per host beside the totals (tps,
p99, errors, connections, the node's CPU).  Hidden until a sample carries
hosts; with many hosts it shows the ones that need a look (lost, late, the
highest p99) and counts the rest."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from benchtop.panels.units import ms, num
from benchtop.record.samples import HostInterval, IntervalStats

MAX_ROWS = 6
STATE_STYLE = {"ok": "", "late": "yellow", "lost": "bold red"}


def _worst_first(rows: Sequence[HostInterval]) -> list[HostInterval]:
    rank = {"lost": 0, "late": 1, "ok": 2}
    return sorted(rows, key=lambda r: (rank.get(r.state, 2), -r.latency_ms.get("p99", 0.0)))


def hosts_text(rows: Sequence[HostInterval], total: IntervalStats | None, max_rows: int = MAX_ROWS) -> Text:
    """The table as text: a header, the totals, then the hosts (in host
    order when they all fit, worst first when they do not)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{'host':<5}{'node':<16}{'thds':>5}{'tps':>9}{'p99':>9}{'err/s':>7}{'conns':>6}{'cpu':>5}", "bold")
    reporting = sum(1 for r in rows if r.state == "ok")
    if total is not None:
        t.append(f"\n{'all':<5}{f'{reporting}/{len(rows)} reporting':<16}{total.threads:>5}{num(total.tps):>9}"
                 f"{ms(total.latency_ms.get('p99', 0.0)):>9}{num(total.errors_per_s):>7}"
                 f"{sum(r.connections for r in rows):>6}{'':>5}", "bold")
    shown = list(rows) if len(rows) <= max_rows else _worst_first(rows)[: max_rows - 1]
    for r in shown:
        state = "" if r.state == "ok" else f" {r.state}"
        idle = r.threads == 0 and r.transactions == 0 and r.state == "ok"  # no threads given: not a 0 ms p99
        state = " idle (0 threads)" if idle else state
        p99 = "-" if idle else ms(r.latency_ms.get('p99', 0.0))
        t.append(f"\n{r.host:<5}{r.node[:15]:<16}{r.threads:>5}{num(r.tps):>9}{p99:>9}"
                 f"{num(r.errors_per_s):>7}{r.connections:>6}{r.cpu_pct:>4.0f}%{state}", STATE_STYLE.get(r.state, ""))
    if len(shown) < len(rows):
        t.append(f"\n… {len(rows) - len(shown)} more host(s), all reporting normally" if all(
            r.state == "ok" for r in rows if r not in shown) else f"\n… {len(rows) - len(shown)} more host(s)", "dim")
    return t


class HostRows(Widget):
    """The per-host rows of a cluster run (renders what it is given)."""

    DEFAULT_CSS = """
    HostRows { height: auto; max-height: 9; display: none; }
    HostRows.shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._text = Text()

    def show(self, rows: Sequence[HostInterval], total: IntervalStats | None) -> None:
        self._text = hosts_text(rows, total)
        self.set_class(bool(rows), "shown")
        self.refresh(layout=True)

    def render(self) -> Text:
        return self._text

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._text.plain.count("\n") + 1
