"""The PostgreSQL checkpoints view's lines at 80 columns."""

from benchtop.panels.views.postgres import checkpointer_summary
from benchtop.sources.base import SourceSnapshot


def test_checkpoints_per_hour_reads_with_its_window_and_a_space_before_the_value():
    # 13m25s since the stats reset ran into the value: 'per hour since the stats reset 13m25s ago8.9 timed'
    snap = SourceSnapshot("pg", "postgresql", 1.0, True, panels={
        "checkpoints": {"timed": 2, "requested": 1, "timed_per_h": 8.9, "requested_per_h": 4.5,
                        "per_h_over_s": 13 * 60 + 25.0}})
    lines = [t.plain for t in checkpointer_summary(snap, 80)]
    per_hour = next(line for line in lines if "per hour" in line)
    assert "13m25s ago " in per_hour and per_hour.endswith("8.9 timed / 4.5 requested")
    assert all(len(line) <= 80 for line in lines)
