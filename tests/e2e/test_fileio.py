"""`--engine fileio` against a temporary folder: prepare, each sysbench test
mode for up to a second on the native engine, cleanup."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
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


def _run(spec, seconds: float = 1.0, threads: int = 2, enough=None):  # type: ignore[no-untyped-def]
    """Runs `seconds`, or less once `enough(snapshot)` holds (a fast disk
    does thousands of requests in a tenth of a second)."""
    eng = Engine(fileio_conn(spec), EngineSettings(threads=threads), fileio_program(spec))
    try:
        eng.start()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (enough is not None and enough(eng.snapshot())):
            time.sleep(0.02)
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
        # 2,000 requests: the read/write ratio and the fsyncs per request below are exact by then
        s = _run(_spec(tmp_path, "--file-test-mode", mode), enough=lambda s: s.reads + s.writes >= 2000)
        assert s.state == "stopped" and s.error == "", (mode, s.error)
        if mode in ("seqrd", "rndrd"):
            assert s.reads > 100 and s.writes == 0 and s.other == 0, mode
        elif mode == "rndrw":
            assert s.reads > 100 and s.writes > 50
            assert 1.2 < s.reads / s.writes < 1.8  # --file-rw-ratio 1.5
        else:
            assert s.reads == 0 and s.writes > 100, mode
        if mode not in ("seqrd", "rndrd"):
            # after every 100 requests each of the 4 files is fsynced (--file-fsync-freq 100)
            assert abs(s.other - 4 * (s.reads + s.writes) / 100) <= 2 * 4 + 1, mode
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
    (["--file-io-mode", "async", "--file-async-backlog", "0"], "between 1 and 4096"),
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


def _sysbench_ratio(folder: Path, *args: str) -> float:
    """fsyncs per read/write of a sysbench fileio run on these files."""
    out = subprocess.run(["sysbench", "fileio", "--file-num=4", "--file-total-size=8M", *args, "--time=1", "run"],
                         cwd=folder, capture_output=True, text=True, timeout=60, check=True).stdout
    rate = {k: float(v) for k, v in re.findall(r"(reads|writes|fsyncs)/s:\s+([\d.]+)", out)}
    return rate["fsyncs"] / (rate["reads"] + rate["writes"])


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench not installed")
@pytest.mark.parametrize("args", [
    ["--file-test-mode=rndrw"],
    ["--file-test-mode=seqwr", "--file-fsync-freq=10"],
    ["--file-test-mode=rndwr", "--file-fsync-all=on"],
])
def test_fsyncs_per_request_as_sysbench(tmp_path: Path, args: list[str]) -> None:
    """The same files, the same options: the same fsyncs per read/write."""
    spec = _spec(tmp_path, *[a for arg in args for a in arg.split("=", 1)])
    prepare_files(spec, io.StringIO())
    s = _run(spec, 1.0, threads=1)
    ours = s.other / (s.reads + s.writes)
    theirs = _sysbench_ratio(tmp_path, *args)
    assert ours == pytest.approx(theirs, rel=0.1, abs=0.005), (ours, theirs)


def _uring_depths() -> list[int]:
    """Requests submitted and not yet reaped, per io_uring of this process."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:[io_uring]":
                continue
            info = dict(ln.split(":", 1) for ln in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
                        if ":" in ln and not ln.startswith(" "))
        except OSError:
            continue
        if "SqTail" in info and "CqHead" in info:
            out.append(int(info["SqTail"]) - int(info["CqHead"]))
    return out


def test_async_keeps_requests_in_flight(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--file-test-mode", "rndrw", "--file-io-mode", "async", "--file-async-backlog", "16")
    prepare_files(spec, io.StringIO())
    eng = Engine(fileio_conn(spec), EngineSettings(threads=1), fileio_program(spec))
    depths: list[int] = []
    try:
        eng.start()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            depths += _uring_depths()
        eng.stop()
        assert eng.join(10)
        s = eng.snapshot()
    finally:
        eng.close()
    assert s.state == "stopped" and s.error == "" and s.reads > 100 and s.writes > 50
    assert depths and max(depths) > 1 and max(depths) <= 16


def test_mmap_writes_reach_the_files(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--file-test-mode", "rndwr", "--file-io-mode", "mmap")
    prepare_files(spec, io.StringIO())
    s = _run(spec, 0.5, threads=2)
    assert s.state == "stopped" and s.error == "" and s.writes > 100 and s.other > 0
    assert any(b"abcdefghijklmnopqrstuvwxyz" in p.read_bytes() for p in tmp_path.iterdir())


def test_read_write_fsync_latency_apart(tmp_path: Path) -> None:
    """A mixed run reports each operation's latency: in the interval lines,
    the summary (text and JSON) and the report."""
    from tests.e2e.conftest import run_benchtop

    files = tmp_path / "files"
    common = ["--engine", "fileio", "--dir", str(files), "--file-num", "4", "--file-total-size", "8M"]
    assert run_benchtop("prepare", *common).returncode == 0
    res = run_benchtop("--headless", *common, "--file-test-mode", "rndrw", "--time", "2",
                       "--out", str(tmp_path / "res"), timeout=60)
    assert res.returncode == 0, res.stderr
    assert re.search(r"\] lat \(ms,95%\) read: [\d.]+ write: [\d.]+ fsync: [\d.]+", res.stdout)
    assert re.search(r"^      fsync +\d+ ", res.stdout, re.M)
    summary = json.loads((tmp_path / "res" / "summary.json").read_text())
    ops = summary["op_latency_ms"]
    assert set(ops) == {"read", "write", "fsync"}
    # the histograms are read just after the counters, while the one thread may finish a request
    for name, counted in (("read", summary["reads"]), ("write", summary["writes"]), ("fsync", summary["other"])):
        assert abs(ops[name]["count"] - counted) <= 1, (name, ops[name], counted)
    assert max(v["max"] for v in ops.values()) <= summary["latency_ms"]["max"]
    interval = json.loads((tmp_path / "res" / "intervals.jsonl").read_text().splitlines()[0])
    assert set(interval["op_latency_ms"]) <= {"read", "write", "fsync"} and interval["op_latency_ms"]
    rep = run_benchtop("report", str(tmp_path / "res"))
    assert rep.returncode == 0 and re.search(r"res +fsync +\d+", rep.stdout), rep.stdout
