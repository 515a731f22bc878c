"""`python -m tests.tui.fake_app [finish_after]`: the real app in a real
terminal on the deterministic fake controller (for the tmux tests), then
what a CLI would print: the summary line and the timeline."""

from __future__ import annotations

import sys

from benchtop.screens.launch import run_tui
from tests.tui.fakes import FakeRunController


def main(argv: list[str]) -> int:
    finish_after = int(argv[0]) if argv else None
    controller = FakeRunController(report_interval=0.5, finish_after=finish_after)
    summary = run_tui(controller)
    print(f"stopped by: {summary.stopped_by}; threads {controller.threads}; rate {controller.rate:g}")
    for ev in controller.timeline:
        print(f"event {ev.kind}: {ev.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
