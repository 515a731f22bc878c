"""Issue 14's pieces that need no server: workload groups and presets, the
--group/--preset options, scenario settings and hooks as parsed, hooks run
locally, monitor mode refusing changes, and per-group results."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchtop.engine import ConnSettings
from benchtop.errors import UsageError
from benchtop.options.run_options import options_from_argv
from benchtop.record.formats import interval_line, summary_text
from benchtop.scenario.file import ScenarioError, parse_scenario
from benchtop.scenario.hooks import Hook, HookError, HookRunner
from benchtop.target import Target
from benchtop.target.settings import SettingsControl, SettingsError
from benchtop.workload import WorkloadError, builtin_program, load_program
from benchtop.workload.groups import resolve_groups


def test_insert_benchmark_presets_select_the_groups() -> None:
    p = builtin_program("insert_benchmark", "sqlite")
    assert p.txn_names == ("insert", "market_query", "register_query", "pdc_query")
    shapes = {name: [(g.name, g.threads, g.rate) for g in resolve_groups(p, name, [])] for name in p.presets}
    assert shapes == {
        "i0.q10": [("inserters", 0, 1000.0), ("queriers", 10, 0.0)],
        "i1.q10": [("inserters", 1, 1000.0), ("queriers", 10, 0.0)],
        "i10.q0": [("inserters", 10, 0.0), ("queriers", 0, 0.0)],
        "i10.q1": [("inserters", 10, 0.0), ("queriers", 1, 0.0)],
    }
    inserters, queriers = p.groups
    assert inserters.weights == (1, 0, 0, 0) and queriers.weights == (0, 1, 1, 1)


@pytest.mark.parametrize("engine", ["mysql", "postgresql", "sqlite"])
def test_insert_benchmark_batches_inserts_in_one_transaction(engine: str) -> None:
    one = builtin_program("insert_benchmark", engine)
    ten = builtin_program("insert_benchmark", engine, batch=10)
    assert not [s for s in one.stmts if s.is_begin] and [s.is_begin for s in ten.stmts if s.is_begin] == [1, 2]
    assert any("FORCE INDEX" in s.sql for s in one.stmts) == (engine == "mysql")
    assert len(one.schema.indexes) == 3


def test_group_and_preset_errors_are_one_line() -> None:
    p = builtin_program("insert_benchmark", "null")
    with pytest.raises(UsageError, match="no such preset.*i1.q10"):
        resolve_groups(p, "i2.q2", [])
    with pytest.raises(UsageError, match="no thread group 'writers'.*inserters, queriers"):
        resolve_groups(p, None, ["writers.threads=2"])
    with pytest.raises(UsageError, match="declares no thread groups"):
        resolve_groups(builtin_program("oltp_point_select", "null"), None, ["a.threads=1"])
    for bad in ("queriers", "queriers.threads", "queriers.speed=3", "queriers.threads=1.5", "queriers.rate=-1"):
        with pytest.raises(UsageError):
            options_from_argv("run", ["--workload", "insert_benchmark", "--group", bad])
    opts = options_from_argv("run", ["--workload", "insert_benchmark", "--preset", "i1.q10", "--batch", "5",
                                     "--group", "queriers.threads=4"])
    assert opts.preset == "i1.q10" and opts.groups == ("queriers.threads=4",) and opts.workload_options["batch"] == "5"
    assert opts.to_dict()["groups"] == ["queriers.threads=4"]


def test_group_definitions_are_checked(tmp_path: Path) -> None:
    base = '[[transaction]]\nname = "a"\nscript = "exec read: SELECT 1"\n'
    cases = {
        '[[group]]\nname = "g"\ntransactions = ["b"]\n': "no transaction named 'b'",
        '[[group]]\nname = "g"\n': "needs a name and transactions",
        '[[group]]\nname = "g"\ntransactions = {a = 0}\n': "runs no transaction",
        '[[group]]\nname = "g"\ntransactions = ["a"]\nrate = -5\n': "rate must be",
        '[[group]]\nname = "g"\ntransactions = ["a"]\n[[group]]\nname = "g"\ntransactions = ["a"]\n': "unique",
    }
    for text, problem in cases.items():
        f = tmp_path / "w.toml"
        f.write_text(base + text)
        with pytest.raises(WorkloadError, match=problem):
            load_program(str(f), "null")
    f.write_text(base + '[[transaction]]\nname = "b"\nscript = "exec write: SELECT 2"\n'
                 '[[group]]\nname = "g"\ntransactions = "a+b"\nthreads = 3\narrival = "poisson"\nrate = 7\n')
    [g] = load_program(str(f), "null").groups
    assert (g.threads, g.rate, g.arrival, g.weights) == (3, 7.0, "poisson", (1, 1))


def test_scenario_settings_hooks_and_groups_parse() -> None:
    sc = parse_scenario('restart = { shell = "systemctl restart mariadb", timeout = "2m" }\n'
                        '[[step]]\nduration = 5\nthreads = [1, 2]\nsettings = { sync_binlog = [0, 1], pool = "1G" }\n'
                        'before = ["ALTER SYSTEM SET a = 1; SELECT pg_reload_conf()", { shell = "sync", timeout = 9 }]\n'
                        'group = ["queriers.threads=3"]\n')
    assert [(s.threads, dict(s.settings)) for s in sc.steps] == [
        (1, {"sync_binlog": 0, "pool": "1G"}), (1, {"sync_binlog": 1, "pool": "1G"}),
        (2, {"sync_binlog": 0, "pool": "1G"}), (2, {"sync_binlog": 1, "pool": "1G"})]
    assert sc.steps[0].before == (Hook("sql", "ALTER SYSTEM SET a = 1; SELECT pg_reload_conf()"), Hook("shell", "sync", 9.0))
    assert sc.restart == Hook("shell", "systemctl restart mariadb", 120.0)
    assert sc.steps[1].label() == "step 2, threads 1, sync_binlog=1, pool=1G, queriers.threads=3"
    assert sc.changes_settings


@pytest.mark.parametrize("step, problem", [
    ("settings = [1]", "settings is a table"),
    ("settings = { x = [] }", "sweeps nothing"),
    ('settings = { "bad name" = 1 }', "not a server setting name"),
    ("before = [3]", "a hook is SQL text"),
    ('before = { shell = "x", sql = "y" }', "a hook is SQL text"),
    ('after = { sql = "x", timeout = 3 }', "timeout is for shell hooks"),
    ('group = ["x"]', "NAME.threads=N"),
])
def test_scenario_settings_and_hooks_errors_name_the_line(step: str, problem: str) -> None:
    with pytest.raises(ScenarioError, match=problem) as exc:
        parse_scenario(f"[[step]]\nduration = 1\n{step}\n", "s.toml")
    assert str(exc.value).startswith("s.toml:3: ")


def test_shell_hooks_time_out_and_report_failures(tmp_path: Path) -> None:
    runner = HookRunner(ConnSettings(driver="sqlite", database=str(tmp_path / "x.db")))
    ok = runner.run(Hook("shell", f"touch {tmp_path}/ran", 5.0), "before", 0)
    assert ok.ok and (tmp_path / "ran").exists()
    bad = runner.run(Hook("shell", "echo nope >&2; exit 4", 5.0), "after", 1)
    assert not bad.ok and bad.detail == "exit status 4: nope" and bad.to_dict()["when"] == "after"
    slow = runner.run(Hook("shell", "sleep 5", 0.2), "before", 0)
    assert not slow.ok and "still running after 0.2s" in slow.detail
    sql = runner.run(Hook("sql", "CREATE TABLE t (a int); INSERT INTO t VALUES (1)"), "before", 0)
    assert sql.ok
    assert not runner.run(Hook("sql", "SELECT * FROM missing"), "before", 0).ok


def test_monitor_mode_refuses_hooks_and_settings() -> None:
    with pytest.raises(HookError, match="monitor mode"):
        HookRunner(ConnSettings(driver="null"), monitor_mode=True).run(Hook("sql", "CHECKPOINT"), "before", 0)
    with pytest.raises(SettingsError, match="monitor mode"):
        SettingsControl(Target(kind="mysql", host="127.0.0.1"), monitor_mode=True).apply({"sync_binlog": 0})


def test_interval_and_summary_carry_groups() -> None:
    from benchtop.engine import Engine, EngineSettings, GroupSettings
    from benchtop.record.samples import IntervalStats, RunSummary
    import time

    p = builtin_program("insert_benchmark", "null")
    groups = tuple(GroupSettings(g.name, g.threads, g.rate if g.name == "inserters" else 0.0, g.arrival, g.weights)
                   for g in resolve_groups(p, "i1.q10", ["queriers.threads=1"]))
    eng = Engine(ConnSettings(driver="null"), EngineSettings(groups=groups), p)
    try:
        first = eng.snapshot()
        eng.start()
        time.sleep(0.3)
        last = eng.snapshot()
    finally:
        eng.stop()
        eng.join(5)
        eng.close()
    iv = IntervalStats.between(first, last)
    d = iv.to_dict()["groups"]
    assert set(d) == {"inserters", "queriers"}
    assert set(d["inserters"]) >= {"threads", "rate", "tps", "latency_ms", "service_latency_ms", "queue"}
    assert d["inserters"]["rate"] == 1000.0 and "queue" not in d["queriers"]
    text = interval_line(iv, 95.0)
    assert "  inserters: thds: 1 tps:" in text and "rate: 1000 queue:" in text and "  queriers: thds: 1" in text
    s = RunSummary.between(first, last)
    assert s.to_dict()["groups"]["queriers"]["threads"] == 1
    assert "thread groups (ms)" in summary_text(s, 95.0)
    assert [g.name for g in iv.without_histograms().groups] == ["inserters", "queriers"]


def test_group_ranges_sweep_like_threads() -> None:
    sc = parse_scenario('[[step]]\nduration = 1\ngroup = ["inserters.rate=1000", "queriers.threads=1..8*2"]\n')
    assert [s.group for s in sc.steps] == [("inserters.rate=1000", f"queriers.threads={n}") for n in (1, 2, 4, 8)]
    with pytest.raises(ScenarioError, match="fractional thread counts"):
        parse_scenario('[[step]]\nduration = 1\ngroup = ["q.threads=1..2.5+0.5"]\n')
