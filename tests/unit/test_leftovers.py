"""The record of what benchtop changed on a server: one small file per server
under the state folder, written before a change, gone once restored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchtop.target import Target
from benchtop.target.leftovers import ChangeRecord, LeftoverError, leftover_warning, state_dir

PG = Target("postgresql", "127.0.0.1", 15432, "sbtest")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_state_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BENCHTOP_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert state_dir() == tmp_path / "benchtop"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert state_dir() == tmp_path / ".local" / "state" / "benchtop"


def test_the_values_found_first_are_kept_and_the_file_goes_once_restored(tmp_path: Path) -> None:
    record = ChangeRecord(PG, tmp_path)
    # the benchmark user and the admin user reach one server: one record
    assert ChangeRecord(Target("postgresql", "localhost", 15432, "postgres"), tmp_path).path == record.path
    assert record.record("instrumentation", {"track_io_timing": ["off", False]}) == {"track_io_timing": ["off", False]}
    # a later run finds the value the first left changed: the first run's original is what is restored
    merged = record.record("instrumentation", {"track_io_timing": ["on", True], "track_wal_io_timing": ["off", False]})
    assert merged == {"track_io_timing": ["off", False], "track_wal_io_timing": ["off", False]}
    record.record("settings", {"work_mem": ["4096", False]})
    record.clear("instrumentation")
    assert [c.section for c in record.changes()] == ["settings"]
    record.clear("settings")
    assert not record.path.exists() and list(tmp_path.iterdir()) == []


def test_a_killed_runs_record_is_named_in_one_line_a_live_runs_is_not(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("BENCHTOP_STATE_DIR", str(tmp_path))
    record = ChangeRecord(PG)
    record.record("instrumentation", {"track_io_timing": ["off", False]})
    assert leftover_warning(PG) is None  # this process made it: its own restore is to come
    body = json.loads(record.path.read_text())
    body["changes"]["instrumentation"]["pid"] = _dead_pid()
    record.path.write_text(json.dumps(body))
    line = leftover_warning(PG)
    assert line is not None and "\n" not in line
    assert line.startswith("benchtop: warning: 127.0.0.1:15432 still has settings")
    assert "track_io_timing (was off)" in line and "benchtop restore --engine postgres" in line
    assert leftover_warning(Target("mysql", "127.0.0.1", 13306)) is None  # another server


def test_a_change_the_admin_made_by_another_address_is_found_through_admin_dsn(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    """ab's --set is recorded under --admin-dsn's address (the server's
    socket here); a later run with --dsn on host:port warned of nothing."""
    monkeypatch.setenv("BENCHTOP_STATE_DIR", str(tmp_path))
    tcp = Target("mysql", "127.0.0.1", 13306, "sbtest")
    admin = "mysql://root@localhost/?unix_socket=/tmp/my.sock"
    record = ChangeRecord(Target("mysql", socket="/tmp/my.sock"))
    record.record("settings", {"innodb_flush_log_at_trx_commit": ["1", False]})
    body = json.loads(record.path.read_text())
    body["changes"]["settings"]["pid"] = _dead_pid()
    record.path.write_text(json.dumps(body))
    assert leftover_warning(tcp) is None  # nothing under host:port
    line = leftover_warning(tcp, admin)
    assert line is not None and "\n" not in line
    assert line.startswith("benchtop: warning: /tmp/my.sock still has settings")
    assert "innodb_flush_log_at_trx_commit (was 1)" in line and line.endswith(f"record: {record.path}")
    # a change under each address: both named
    ChangeRecord(tcp).record("instrumentation", {"x": ["on", False]})
    tcp_record = ChangeRecord(tcp)
    body = json.loads(tcp_record.path.read_text())
    body["changes"]["instrumentation"]["pid"] = _dead_pid()
    tcp_record.path.write_text(json.dumps(body))
    line = leftover_warning(tcp, admin)
    assert line is not None and line.startswith("benchtop: warning: 127.0.0.1:13306 and /tmp/my.sock still have")
    # an admin on the run's own address: one record, looked at once
    assert leftover_warning(tcp, "mysql://root@localhost:13306/") == leftover_warning(tcp)


def test_a_damaged_record_is_one_line_naming_it(tmp_path: Path) -> None:
    record = ChangeRecord(PG, tmp_path)
    record.path.write_text('{"changes": {"instr')
    with pytest.raises(LeftoverError, match=str(record.path)):
        record.changes()
    with pytest.raises(LeftoverError):
        record.record("instrumentation", {})
    assert os.path.getsize(record.path) == len('{"changes": {"instr')  # kept for the user to look at
