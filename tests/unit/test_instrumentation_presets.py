"""Instrumentation presets as statements, and the monitor-mode refusal."""

from __future__ import annotations

import pytest

from benchtop.target.instrumentation import (
    MYSQL_PRESET_NAMES,
    PG_PRESETS,
    InstrumentationControl,
    InstrumentationError,
    PerfSchemaState,
    mysql_preset_statements,
    mysql_restore_statements,
)
from benchtop.target import Target


def test_the_nine_presets_of_the_overhead_study():
    assert sorted(MYSQL_PRESET_NAMES) == [
        "all_disabled",
        "all_enabled",
        "default",
        "mdl_only",
        "memory_only",
        "stages_and_statements",
        "stages_only",
        "statements_only",
        "waits_only",
    ]


@pytest.mark.parametrize("preset", [p for p in MYSQL_PRESET_NAMES if p != "default"])
def test_every_preset_only_updates_setup_tables(preset):
    for stmt, args in mysql_preset_statements(preset):
        assert stmt.startswith(
            ("UPDATE performance_schema.setup_instruments", "UPDATE performance_schema.setup_consumers")
        )
        assert stmt.count("%s") == len(args)


def test_restore_groups_by_value_in_chunks():
    names = {f"wait/x/{i}": ("YES", "YES") for i in range(450)}
    stmts = mysql_restore_statements(PerfSchemaState(names, {}))
    assert [len(args) for _, args in stmts] == [200, 200, 50]
    assert sorted(n for _, args in stmts for n in args) == sorted(names)


def test_pg_presets_cover_the_three_settings():
    for values in PG_PRESETS.values():
        assert set(values) == {"track_io_timing", "track_wal_io_timing", "pg_stat_statements.track"}


def test_refused_in_monitor_mode_without_allow_changes():
    ctl = InstrumentationControl(Target(kind="mysql", host="127.0.0.1", port=1), monitor_mode=True)
    with pytest.raises(InstrumentationError, match="--allow-changes"):
        ctl.apply("all_enabled")
    assert ctl.events == []


def test_unknown_preset_names_the_choices():
    ctl = InstrumentationControl(Target(kind="postgresql", host="127.0.0.1", port=1))
    with pytest.raises(InstrumentationError, match="use one of all_disabled, all_enabled, default, io_timing"):
        ctl.apply("mdl_only")
