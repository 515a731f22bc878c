#!/usr/bin/env python3
"""TPS with the TUI open vs headless (issue 4: >= 0.97), on the null driver
(pure CPU, so UI cost shows at its worst).

    python tui_overhead.py            # alternates headless / TUI-in-tmux runs
    python tui_overhead.py --one tui  # (internal) one run, prints tps
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository, from bench/
sys.path.insert(0, str(ROOT))

from benchtop.options.run_options import RunOptions  # noqa: E402
from benchtop.run.controller import RunController  # noqa: E402
from benchtop.target import Target  # noqa: E402
from benchtop.workload import builtin_program  # noqa: E402


def controller(seconds: float, threads: int) -> RunController:
    opts = RunOptions(engine="null", target=Target(kind="null"), workload="oltp_point_select", threads=threads, time_s=seconds)
    return RunController(opts, builtin_program("oltp_point_select", "null"), opts.conn_settings())


def one(mode: str, seconds: float, threads: int, out: Path) -> None:
    c = controller(seconds, threads)
    c.start()
    if mode == "tui":
        from benchtop.screens.launch import run_tui

        s = run_tui(c)
    else:
        while not c.finished:
            time.sleep(c.report_interval)
            c.sample()
        s = c.stop("time")
    c.close()
    out.write_text(f"{s.tps:.1f}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.one:
        one(a.one, a.seconds, a.threads, Path(a.out))
        return
    sys.path.insert(0, str(ROOT))
    from tests.tui import tmux_helpers

    res: dict[str, list[float]] = {"headless": [], "tui": []}
    for r in range(a.rounds):
        for mode in ("headless", "tui"):
            out = Path(tempfile.gettempdir()) / f"benchtop-tui-overhead-{mode}{r}.txt"
            out.unlink(missing_ok=True)
            cmd = [sys.executable, __file__, "--one", mode, "--seconds", str(a.seconds), "--threads", str(a.threads), "--out", str(out)]
            s = tmux_helpers.start(cmd, 100, 30)
            try:
                assert s.wait_exit(a.seconds + 30), s.capture()
            finally:
                s.kill()
            res[mode].append(float(out.read_text()))
            print(mode, res[mode][-1], flush=True)
    h = sum(res["headless"]) / len(res["headless"])
    t = sum(res["tui"]) / len(res["tui"])
    print(f"headless {h:.0f} tps, tui {t:.0f} tps, ratio {t / h:.3f}")


if __name__ == "__main__":
    main()
