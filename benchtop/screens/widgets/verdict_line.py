"""The verdict line under the charts: what limits the run in the newest
interval, its evidence in numbers and the next limit when it is close
(benchtop.verdict; docs/verdict.md).  It fits its width: the evidence is
cut after its last whole figure that fits, the limit's name never."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from benchtop.verdict import Verdict

_STYLE = {"unclear": "dim", "rate": "green", "network": "cyan"}


def verdict_text(v: Verdict | None, width: int = 1000, about: str = "") -> Text:
    """`about`: the server the verdict is about, when the screen watches more than one.

    >>> print(verdict_text(Verdict("locks", 0.9, "6 of 16 waiting"), about="mysql-2 10.0.0.2:3306").plain)
    limit mysql-2 10.0.0.2:3306: lock waits (0.90): 6 of 16 waiting

    >>> v = Verdict("server_cpu", 0.64, "postgres 1.62 of 2 cores, run queue 9", "locks", "2.0 of 16 sessions waiting")
    >>> print(verdict_text(v).plain)
    limit: server CPU (0.64): postgres 1.62 of 2 cores, run queue 9; next: lock waits (2.0 of 16 sessions waiting)
    >>> print(verdict_text(v, 53).plain)
    limit: server CPU (0.64): postgres 1.62 of 2 cores…
    >>> print(verdict_text(v, 30).plain)
    limit: server CPU (0.64): pos…
    >>> print(verdict_text(None).plain)
    limit: -
    """
    head = f"limit {about}: " if about else "limit: "
    if v is None:
        return Text(f"{head}-", no_wrap=True)
    t = Text(head, no_wrap=True, overflow="ellipsis")
    t.append(v.name, f"bold {_STYLE.get(v.limit, 'yellow')}")
    t.append(f" ({v.confidence:.2f})")
    rest = f": {v.evidence}" if v.evidence else ""
    if v.next:
        rest += f"; next: {Verdict(v.next, 0.0, '').name} ({v.next_evidence})"
    t.append(rest)
    if len(t.plain) > width:
        # whole figures only: cut after the last `, ` or `; ` that leaves room for the mark
        plain = t.plain[: max(width - 1, 0)]
        cut = max(plain.rfind(", "), plain.rfind("; "))
        keep = cut if cut > len(head) + len(v.name) else max(width - 1, len(v.name) + len(head))
        t.truncate(keep, overflow="crop")
        t.append("…")
    return t


class VerdictLine(Widget):
    DEFAULT_CSS = """
    VerdictLine { height: auto; max-height: 2; padding: 0 1; }
    """

    def __init__(self, verdict: Verdict | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._verdict = verdict
        self._about = ""

    def show(self, verdict: Verdict | None, about: str = "") -> None:
        self._verdict, self._about = verdict, about
        width = self.content_size.width
        if width:  # the rows it needs now, not at the next layout pass: one or two
            self.styles.height = self.get_content_height(self.size, self.size, width)
        self.refresh(layout=True)

    def _text(self, width: int) -> Text:
        # two rows when one cannot hold it: an 80-column terminal cut every verdict after its name
        text = verdict_text(self._verdict, 2 * max(width, 1) - 2, self._about)
        text.no_wrap = False
        return text

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return min(len(self._text(width).wrap(self.app.console, width)), 2)

    def render(self) -> Text:
        return self._text(self.content_size.width)


def show_verdict(container: Widget, verdict: Verdict | None) -> None:
    """The line at the end of `container`, mounted with the first verdict: a
    run without verdicts (a cluster, a test's fake controller) keeps its
    layout exactly as it was."""
    if verdict is None:
        return
    lines = container.query(VerdictLine)
    if lines:
        lines.first().show(verdict)
    else:
        container.mount(VerdictLine(verdict, id="verdict"))
