"""`--engine fileio` against a temporary folder: prepare, each sysbench test
mode for a second on the native engine, cleanup."""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import pytest

from benchtop.engine import Engine, EngineError, EngineSettings
from benchtop.workload.fileio import (
    TEST_MODES,
    FileioError,
    add_fileio_options,
    check_files,
    cleanup_files,
    fileio_conn,
    fileio_overrides,
    fileio_program,
    parse_size,
    prepare_files,
    summary_lines,
    throughput_mib,
)
from benchtop.workload import workload_extra_fields


def _spec(folder: Path, *args: str):
    p = argparse.ArgumentParser()
    add_fileio_options(p)
    return fileio_overrides(p.parse_args(["--dir", str(folder), "--file-num", "4", "--file-total-size", "8M", *args]))


def _run(spec, seconds: float = 1.0, threads: int = 2):
    eng = Engine(fileio_conn(spec), EngineSettings(threads=threads), fileio_program(spec))
    try:
        eng.start()
        time.sleep(seconds)
        eng.stop()
        assert eng.join(10)
        return eng.snapshot()
    finally:
        eng.close()


def test_prepare_run_every_mode_cleanup(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--file-test-mode", "seqwr")
    out = io.StringIO()
    assert prepare_files(spec, out) == 8 * 1024**2
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"test_file.{i}" for i in range(4)]
    assert all(p.stat().st_size == 2 * 1024**2 for p in tmp_path.iterdir())
    assert prepare_files(spec, io.StringIO()) == 0  # files of the right size are reused

    for mode in TEST_MODES:
        s = _run(_spec(tmp_path, "--file-test-mode", mode))
        assert s.state == "stopped" and s.error == "", (mode, s.error)
        if mode in ("seqrd", "rndrd"):
            assert s.reads > 100 and s.writes == 0 and s.other == 0, mode
        elif mode == "rndrw":
            assert s.reads > 100 and s.writes > 50
            assert 1.2 < s.reads / s.writes < 1.8  # --file-rw-ratio 1.5
        else:
            assert s.reads == 0 and s.writes > 100, mode
            # every 100th request is an fsync (--file-fsync-freq 100)
            assert abs(s.other - s.transactions / 100) <= 2 * 2, mode
    assert cleanup_files(spec, io.StringIO()) == 4
    assert list(tmp_path.iterdir()) == []


def test_direct_io_and_fsync_off(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--file-test-mode", "rndwr", "--file-extra-flags", "direct", "--file-fsync-freq", "0")
    prepare_files(spec, io.StringIO())
    try:
        s = _run(spec, 0.5, threads=1)
    except EngineError as exc:  # a filesystem without O_DIRECT says so in one line
        assert "O_DIRECT" in str(exc)
        return
    if s.state == "failed":
        assert "O_DIRECT" in s.error
        return
    assert s.writes > 10 and s.other == 0


def test_summary_lines_report_mib_per_second(tmp_path: Path) -> None:
    from types import SimpleNamespace as NS

    program = fileio_program(_spec(tmp_path, "--file-test-mode", "rndrw", "--file-block-size", "1M"))
    lines = summary_lines(program, NS(time_s=2.0, reads=10, writes=4, other=1))
    assert "    reads/s:                      5.00" in lines
    assert "    read, MiB/s:                  5.00" in lines and "    written, MiB/s:               2.00" in lines
    assert workload_extra_fields(program, NS(time_s=2.0, reads=10, writes=4)) == {"read_mib_s": 5.0, "written_mib_s": 2.0}
    assert throughput_mib(program, 3.0, 1.0) == (3.0, 1.0)


def test_missing_files_fail_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(FileioError, match="test_file.0 is missing: run `benchtop prepare --engine fileio`"):
        check_files(_spec(tmp_path / "empty", "--file-test-mode", "rndrd"))
    s = _run(_spec(tmp_path / "empty", "--file-test-mode", "rndrd"), 0.2, threads=1)
    assert s.state == "failed" and "benchtop prepare --engine fileio" in s.error and "\n" not in s.error


@pytest.mark.parametrize("args,problem", [
    (["--file-io-mode", "mmap"], "mmap is not supported"),
    (["--file-extra-flags", "turbo"], "unknown flag 'turbo'"),
    (["--file-block-size", "9M"], "less than one"),
    (["--file-total-size", "lots"], "is not a size"),
    (["--file-extra-flags", "direct", "--file-block-size", "1000"], "multiple of 512"),
])
def test_bad_options(tmp_path: Path, args: list[str], problem: str) -> None:
    with pytest.raises(FileioError, match=problem):
        _spec(tmp_path, *args)


def test_run_needs_a_test_mode(tmp_path: Path) -> None:
    with pytest.raises(FileioError, match="--file-test-mode"):
        fileio_program(_spec(tmp_path))
    assert parse_size("16K") == 16384
