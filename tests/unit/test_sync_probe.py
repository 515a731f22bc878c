"""The sync timing the disk rule reads: an overwrite and fdatasync in an
unnamed file beside the server's data, never inside it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from benchtop.sources.sync_probe import data_directory, probe_directory, timed_sync_ms


def test_a_sync_is_timed_in_an_unnamed_file_that_leaves_nothing_behind(tmp_path: Path) -> None:
    ms = timed_sync_ms(tmp_path)
    assert ms is not None and 0.0 <= ms < 1000.0
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_written_gives_no_time(tmp_path: Path) -> None:
    assert timed_sync_ms(tmp_path / "absent") is None


def test_the_probe_writes_in_the_temporary_directory_on_the_data_s_filesystem(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert probe_directory(data) == tmp_path
    assert probe_directory(tmp_path / "absent") is None


def test_a_server_s_data_directory_is_its_working_directory() -> None:
    assert data_directory(os.getpid()) == Path(os.getcwd()).resolve()
    assert data_directory(2**22 + 7) is None
