"""Duet comparisons (`benchtop ab --duet`, after Bulej et al.'s duet
benchmarking): A and B on two targets run at the same time, each with its
own engine and half the stated threads, so that whatever else the host
does falls on both alike.  Each round is then one simultaneous pair; the
statistics are the interleaved comparison's, paired by round."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from benchtop.ab.sides import Side
from benchtop.errors import UsageError
from benchtop.options.run_options import RunOptions
from benchtop.target import Target


def _server(target: Target) -> tuple[str, tuple[str, ...]]:
    """What a target's server is known by: its kind and where it listens
    (an embedded or file target has no address: its file names it)."""
    return target.kind, tuple(target.endpoints()) if target.kind in ("mysql", "postgresql") else ()


def duet_refusal(options: Mapping[str, RunOptions], sides: Mapping[str, Side]) -> str | None:
    """Why A and B cannot run as a duet (one line), None when they can:
    they must be two targets, and two targets on one server must not change
    its settings (each side would run under the other's).

    >>> a = RunOptions(engine="mysql", target=Target("mysql", port=3306, database="sbtest"))
    >>> none = {"a": Side("a", "", (), ()), "b": Side("b", "", (), ())}
    >>> duet_refusal({"a": a, "b": a}, none)
    '--duet runs A and B at the same time on two targets, and both are mysql://127.0.0.1:3306/sbtest: give --b its own --dsn (another server or database), or leave out --duet to alternate them'
    >>> other_db = replace(a, target=replace(a.target, database="sbtest2"))
    >>> duet_refusal({"a": a, "b": other_db}, none) is None
    True
    """
    a, b = options["a"], options["b"]
    if (a.engine, a.target.describe(), a.target.database) == (b.engine, b.target.describe(), b.target.database):
        return (f"--duet runs A and B at the same time on two targets, and both are {a.target.describe()}: give --b "
                "its own --dsn (another server or database), or leave out --duet to alternate them")
    if _server(a.target) == _server(b.target) and a.engine in ("mysql", "postgresql"):
        setting = next((side for side in sides.values() if side.settings), None)
        if setting is not None:
            return (f"--duet: A and B are on one server ({', '.join(a.target.endpoints())}) and --{setting.name} "
                    "sets its settings, which would hold for both sides at once: leave out --duet to alternate them")
    for name, opts in options.items():
        if opts.groups:
            return (f"--duet halves each side's threads, and --{name}'s thread groups (--group) set their own: "
                    "leave out --duet, or run one pool")
        if opts.metrics_listen:
            return "--duet runs two loads at once, and --metrics-listen serves one: leave out one of them"
    return None


def halved(opts: RunOptions) -> RunOptions:
    """A side's options in a duet: half its threads (or with --connections
    half its connections and event-loop threads), at least one.

    >>> halved(RunOptions(threads=8)).threads, halved(RunOptions(threads=5)).threads, halved(RunOptions()).threads
    (4, 2, 1)
    """
    return replace(opts, threads=max(1, opts.threads // 2),
                   loop_threads=max(1, opts.loop_threads // 2) if opts.loop_threads else 0)


def split_text(before: Mapping[str, RunOptions], after: Mapping[str, RunOptions]) -> str:
    """What the duet did to the threads, for the banner.

    >>> split_text({"a": RunOptions(threads=8), "b": RunOptions(threads=1)},
    ...            {"a": RunOptions(threads=4), "b": RunOptions(threads=1)})
    'duet: A and B run at once, each with half the stated threads: A 8 -> 4, B 1 -> 1 (one is not halved)'
    """
    word = next(iter(before.values())).workers.word if before else "threads"
    parts = []
    for name, opts in before.items():
        now = after[name].threads
        parts.append(f"{name.upper()} {opts.threads} -> {now}" + (" (one is not halved)" if opts.threads == 1 else ""))
    return f"duet: A and B run at once, each with half the stated {word}: {', '.join(parts)}"
