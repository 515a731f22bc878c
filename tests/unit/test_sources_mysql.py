"""MySQL/MariaDB source parsing, with rows captured from MariaDB 10.11 under
sysbench load (shared/reference/server-captures.txt)."""

from __future__ import annotations

import re

from benchtop.sources import sql
from benchtop.sources.base import SourceSnapshot
from benchtop.sources.fields import INNODB, InnoDBPanel
from benchtop.sources.mysql import (
    BinlogReading,
    binlog_panel,
    innodb_counters,
    innodb_panel,
    lsn_facts,
    parse_engine_status,
    parse_version,
    settings_panel,
    status_rates_panel,
    threads_panel,
    waits_panel,
)
from benchtop.sources.rates import CounterTracker, Interval
from benchtop.verdict import Signals, rules
from benchtop.verdict.snapshots import from_snapshots

# SHOW GLOBAL STATUS LIKE 'Innodb_lsn%' / 'Innodb_checkpoint%' from the capture
MARIADB_STATUS = {
    "Innodb_checkpoint_age": "19887924",
    "Innodb_checkpoint_max_age": "80819529",
    "Innodb_lsn_current": "328844390",
    "Innodb_lsn_flushed": "328844390",
    "Innodb_lsn_last_checkpoint": "308956466",
    "Innodb_os_log_written": "328799836",
    "Innodb_buffer_pool_pages_dirty": "12",
    "Innodb_buffer_pool_pages_total": "32448",
    "Innodb_buffer_pool_pages_flushed": "1000",
    "Innodb_buffer_pool_reads": "100",
    "Innodb_buffer_pool_read_requests": "10000",
    "Innodb_row_lock_waits": "5",
    "Innodb_history_list_length": "17",
}

ENGINE_STATUS = """
=====================================
2026-11-21 23:33:31 0x7712076d26c0 INNODB MONITOR OUTPUT
=====================================
------------
TRANSACTIONS
------------
Trx id counter 1234
History list length 42
---
LOG
---
Log sequence number 328872943
Log flushed up to   328872943
Pages flushed up to 308956466
Last checkpoint at  308956466
----------------------
"""


def test_version_flavour_selects_sql_folder():
    maria = parse_version("10.11.19-MariaDB-0+deb12u1", "Debian 12")
    mysql = parse_version("8.0.36", "MySQL Community Server - GPL")
    assert (maria.flavour, maria.backend, maria.number) == ("mariadb", "mariadb", 101119)
    assert (mysql.flavour, mysql.backend, mysql.number) == ("mysql", "mysql", 80036)
    assert "innodb_redo_log_capacity" in sql.get("mysql", "settings", 80030)
    assert "innodb_redo_log_capacity" not in sql.get("mysql", "settings", 80029)


def test_mariadb_lsn_facts_use_checkpoint_max_age():
    facts = lsn_facts(MARIADB_STATUS, {}, {})
    assert facts["lsn"] == 328844390
    assert facts["checkpoint_lsn"] == 308956466
    assert facts["checkpoint_age_bytes"] == 19887924
    assert facts["redo_capacity_bytes"] == 80819529
    assert facts["checkpoint_age_pct"] == round(100 * 19887924 / 80819529, 2)


def test_mysql_8030_lsn_from_redo_log_status_against_capacity():
    status = {"Innodb_redo_log_current_lsn": "5000", "Innodb_redo_log_checkpoint_lsn": "1000"}
    facts = lsn_facts(status, {"innodb_redo_log_capacity": 8000}, {})
    assert (facts["lsn"], facts["checkpoint_age_bytes"], facts["checkpoint_age_pct"]) == (5000, 4000, 50.0)


def test_old_mysql_falls_back_to_engine_status_and_log_file_size():
    engine = parse_engine_status(ENGINE_STATUS)
    assert engine == {
        "lsn": 328872943,
        "flushed_lsn": 328872943,
        "checkpoint_lsn": 308956466,
        "history_list_length": 42,
    }
    facts = lsn_facts({}, {"innodb_log_file_size": "50331648", "innodb_log_files_in_group": "2"}, engine)
    assert facts["checkpoint_age_bytes"] == 328872943 - 308956466
    assert facts["redo_capacity_bytes"] == 2 * 50331648


def test_innodb_panel_rates_between_two_polls():
    later = dict(MARIADB_STATUS)
    later.update(
        Innodb_lsn_current="329844390",  # +1,000,000 bytes of redo
        Innodb_buffer_pool_pages_flushed="1200",
        Innodb_buffer_pool_reads="110",
        Innodb_buffer_pool_read_requests="20000",
        Innodb_row_lock_waits="9",
    )
    tracker = CounterTracker()
    tracker.advance(innodb_counters(MARIADB_STATUS, 328844390), now=100.0)
    facts = lsn_facts(later, {}, {})
    iv = tracker.advance(innodb_counters(later, facts["lsn"]), now=102.0)
    panel = innodb_panel(later, facts, iv, 17)
    assert panel["redo_bytes_per_s"] == 500000.0
    assert panel["pages_flushed_per_s"] == 100.0
    assert panel["row_lock_waits_per_s"] == 2.0
    assert panel["buffer_pool_hit_ratio"] == 0.999  # 10 misses in 10,000 requests
    assert panel["dirty_pages_pct"] == round(100 * 12 / 32448, 2)
    assert panel["history_list_length"] == 17


def test_waits_top_n_by_interval_wait_time_in_ms_per_second():
    # cumulative picosecond totals from the capture, then 2 s later
    prev = {
        "wait/io/table/sql/handler": (4105104, 10785880747740),
        "wait/io/file/innodb/innodb_data_file": (20025, 5017170167280),
        "wait/lock/table/sql/handler": (448850, 262731245970),
    }
    cur = {
        "wait/io/table/sql/handler": (4125104, 12785880747740),  # +2 s of wait in 2 s
        "wait/io/file/innodb/innodb_data_file": (20125, 9017170167280),  # +4 s
        "wait/lock/table/sql/handler": (448850, 262731245970),  # idle instrument
        "idle": (1, 10**15),
    }
    rows = waits_panel(prev, cur, 2.0, top=5)
    assert [r["event"] for r in rows] == ["wait/io/file/innodb/innodb_data_file", "wait/io/table/sql/handler"]
    assert rows[0] == {
        "event": "wait/io/file/innodb/innodb_data_file",
        "ms_per_s": 2000.0,
        "count_per_s": 50.0,
        "avg_us": 40000.0,
    }
    assert waits_panel(None, cur, None) == []


def test_waits_top_n_limit():
    prev = {f"e{i}": (0, 0) for i in range(20)}
    cur = {f"e{i}": (1, (i + 1) * 10**9) for i in range(20)}
    rows = waits_panel(prev, cur, 1.0, top=3)
    assert [r["event"] for r in rows] == ["e19", "e18", "e17"]


def test_binlog_growth_across_rotation_and_purge():
    a = BinlogReading({"binlog.000001": 1000, "binlog.000002": 400})
    b = BinlogReading({"binlog.000002": 900, "binlog.000003": 100, "binlog.000004": 50})
    panel = binlog_panel(a, b, 5.0)
    assert panel == {
        "enabled": True,
        "files": 3,
        "current_file": "binlog.000004",
        "total_bytes": 1050,
        "bytes_per_s": 130.0,
        "rotations": 2,
    }
    assert binlog_panel(None, b, None)["bytes_per_s"] is None


def test_settings_flag_crash_unsafe_durability():
    safe = settings_panel(
        {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1", "log_bin": "ON", "innodb_doublewrite": "ON"}
    )
    assert safe["crash_safe"] is True
    unsafe = settings_panel(
        {"innodb_flush_log_at_trx_commit": "0", "sync_binlog": "0", "log_bin": "ON", "innodb_doublewrite": "OFF"}
    )
    assert unsafe["crash_safe"] is False
    assert unsafe["unsafe_because"] == ["innodb_flush_log_at_trx_commit=0", "sync_binlog=0", "innodb_doublewrite=OFF"]


def test_status_rates_none_on_counter_reset():
    iv = Interval({"Questions": 1000, "Com_commit": 10}, {"Questions": 5, "Com_commit": 12}, 2.0)
    rates = status_rates_panel(iv)
    assert rates["questions_per_s"] is None  # server restarted: no rate, not a negative one
    assert rates["commits_per_s"] == 1.0


def test_waits_and_binlog_say_what_is_off_without_asking_the_server():
    from benchtop.sources.base import Missing
    from benchtop.sources.mysql import MySQLSource
    from benchtop.target import Target

    src = MySQLSource("m", Target(kind="mysql"))  # never connected: these must not touch the server
    waits = src._waits({"performance_schema": "OFF"}, 2.0)
    assert waits == Missing("performance_schema is OFF", "add performance_schema=ON under [mysqld] and restart the server")
    binlog = src._binlog({"log_bin": "OFF"}, 2.0)
    assert isinstance(binlog, Missing) and binlog.what == "binary log off"


def _lock_poll(before: dict[str, str], after: dict[str, str], waits: list[dict]) -> SourceSnapshot:
    """A MariaDB poll 2 s after `before`, as the source builds its panels."""
    tracker = CounterTracker()
    tracker.advance(innodb_counters(before, 328844390), now=100.0)
    iv = tracker.advance(innodb_counters(after, 328844390), now=102.0)
    panels = {INNODB: innodb_panel(after, lsn_facts(after, {}, {}), iv, 17), "waits": waits,
              "threads": threads_panel(after)}
    return SourceSnapshot("mysql", "mysql", 0.0, True, panels=panels)


def test_a_finished_50s_lock_wait_never_reads_as_more_waiters_than_sessions():
    """`25.8 of 8 sessions waiting on locks`: InnoDB adds a row lock wait's
    whole time (here a 50 s innodb_lock_wait_timeout) to Innodb_row_lock_time
    when it ends, and performance_schema a metadata lock wait's; both landed
    in one 2 s poll. Now the row lock waiters are those waiting at the poll,
    and the figure is never more than the sessions."""
    running = dict(MARIADB_STATUS, Threads_running="9", Innodb_row_lock_time="1000",
                   Innodb_row_lock_current_waits="1")
    during = _lock_poll(MARIADB_STATUS, running, [])
    assert InnoDBPanel.of(during.panels).row_lock_waiting == 1
    ended = dict(running, Innodb_row_lock_time="51000", Innodb_row_lock_current_waits="0")
    mdl = waits_panel({"wait/lock/metadata/sql/mdl": (3, 0)},
                      {"wait/lock/metadata/sql/mdl": (4, 50_000 * 10**9)}, 2.0)  # one 50 s wait, in ps
    for snap in (during, _lock_poll(running, ended, mdl)):
        signals = Signals(threads=8, **from_snapshots([snap]))
        evidence = rules.lock_evidence(signals)
        n, of = re.match(r"([\d.]+) of (\d+) sessions waiting on locks", evidence).groups()
        assert float(n) <= int(of) == 8, evidence
        assert rules.lock_score(signals) <= 1.0
    assert InnoDBPanel.of(_lock_poll(running, ended, []).panels).row_lock_waiting == 0
