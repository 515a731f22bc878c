"""What limits a run, every interval: the per-interval signals (signals.py),
the rules as data with their thresholds (rules.py), the ranked verdict with
its evidence and confidence (decide.py), the signals the monitor's
snapshots carry (snapshots.py) and a verdict per steady stretch (stretch.py).

Pure functions on plain values: no /proc, no servers, no UI; docs/verdict.md
lists each rule, its signals and its thresholds."""

from benchtop.verdict.decide import Verdict, decide
from benchtop.verdict.signals import LIMITS, Signals

__all__ = ["LIMITS", "Signals", "Verdict", "decide"]
