"""`--engine fileio`: sysbench fileio-compatible IO benchmarking in the same
engine.  `prepare` creates --file-num files (test_file.0 ..., sysbench's
names, so either tool can use the other's files) of --file-total-size in
--dir; a run sends one block read, write or fsync per event to the native
fileio driver (native/driver_fileio.c), so reads and writes flow through the
engine's read/write query counters (IntervalStats, JSON `reads`/`writes`,
the TUI) and fsyncs count as "other".  MiB/s is reads or writes times
--file-block-size: `Program.extra["fileio"]["block_size"]`.

--file-io-mode async keeps up to --file-async-backlog requests in flight per
thread through io_uring (a request counts once submitted, as in sysbench);
mmap maps the files and copies blocks, fsync being msync, as sysbench does.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from benchtop.engine import ConnSettings
from benchtop.errors import bounded
from benchtop.workload.prepare import PrepareError
from benchtop.workload.compiler import SourceText, compile_definition, on_off
from benchtop.workload.program import Program

TEST_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")
IO_MODES = ("sync", "async", "mmap")
EXTRA_FLAGS = ("sync", "dsync", "direct")
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


class FileioError(PrepareError):
    """Bad fileio options or files: one line."""


def parse_size(text: str) -> int:
    """sysbench sizes: a number with an optional K/M/G/T suffix (binary).

    >>> parse_size("2G"), parse_size("16K"), parse_size("4096")
    (2147483648, 16384, 4096)
    """
    m = re.fullmatch(r"\s*(\d+)\s*([bBkKmMgGtT]?)\s*", str(text))
    if not m:
        raise FileioError(f"{text!r} is not a size: use a number with K, M, G or T (e.g. 16K, 2G)")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass(frozen=True, slots=True)
class FileioSpec:
    dir: str = "."
    file_num: int = 128
    total_size: int = 2 * 1024**3
    block_size: int = 16384
    test_mode: str = ""
    io_mode: str = "sync"
    extra_flags: tuple[str, ...] = ()
    fsync_freq: int = 100
    fsync_all: bool = False
    fsync_end: bool = True
    fsync_mode: str = "fsync"
    rw_ratio: float = 1.5
    async_backlog: int = 128

    @property
    def file_size(self) -> int:
        return self.total_size // self.file_num

    @property
    def blocks_per_file(self) -> int:
        return self.file_size // self.block_size

    def paths(self) -> list[Path]:
        return [Path(self.dir) / f"test_file.{i}" for i in range(self.file_num)]


def add_fileio_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("fileio (--engine fileio, sysbench fileio options)")
    g.add_argument("--dir", default=".", help="folder of the test files (default: current folder)")
    g.add_argument("--file-num", dest="file_num", type=int, default=128, help="number of files (128)")
    g.add_argument("--file-total-size", dest="file_total_size", default="2G", help="size of all files together (2G)")
    g.add_argument("--file-block-size", dest="file_block_size", default="16K", help="bytes per IO (16K)")
    g.add_argument("--file-test-mode", dest="file_test_mode", choices=TEST_MODES, help="seqwr, seqrewr, seqrd, rndrd, rndwr, rndrw")
    g.add_argument("--file-io-mode", dest="file_io_mode", default="sync", choices=IO_MODES)
    g.add_argument("--file-async-backlog", dest="file_async_backlog", type=int, default=128,
                   help="async mode: requests in flight per thread (128)")
    g.add_argument("--file-extra-flags", dest="file_extra_flags", default="", help="sync, dsync and/or direct, comma-separated")
    g.add_argument("--file-fsync-freq", dest="file_fsync_freq", type=int, default=100, help="fsync every N requests (0: never)")
    g.add_argument("--file-fsync-all", dest="file_fsync_all", default="off", help="fsync after every write (on/off)")
    g.add_argument("--file-fsync-end", dest="file_fsync_end", default="on", help="fsync at the end of the run (on/off)")
    g.add_argument("--file-fsync-mode", dest="file_fsync_mode", default="fsync", choices=("fsync", "fdatasync"))
    g.add_argument("--file-rw-ratio", dest="file_rw_ratio", type=bounded(0.000001, 1e6, "reads per write"),
                   default=1.5, help="reads per write in rndrw (1.5)")


def _onoff(name: str, value: Any) -> bool:
    switch = on_off(value)
    if switch is not None:
        return switch
    raise FileioError(f"--{name} takes on or off, not {value!r}")


def fileio_overrides(ns: argparse.Namespace) -> FileioSpec:
    """The fileio settings of parsed arguments, checked."""
    flags = tuple(f.strip() for f in str(ns.file_extra_flags or "").split(",") if f.strip())
    bad = [f for f in flags if f not in EXTRA_FLAGS]
    if bad:
        raise FileioError(f"--file-extra-flags: unknown flag {bad[0]!r}: use sync, dsync or direct")
    spec = FileioSpec(
        dir=ns.dir,
        file_num=ns.file_num,
        total_size=parse_size(ns.file_total_size),
        block_size=parse_size(ns.file_block_size),
        test_mode=ns.file_test_mode or "",
        io_mode=ns.file_io_mode,
        extra_flags=flags,
        fsync_freq=ns.file_fsync_freq,
        fsync_all=_onoff("file-fsync-all", ns.file_fsync_all),
        fsync_end=_onoff("file-fsync-end", ns.file_fsync_end),
        fsync_mode=ns.file_fsync_mode,
        rw_ratio=ns.file_rw_ratio,
        async_backlog=ns.file_async_backlog,
    )
    if spec.fsync_all:
        # as sysbench: --file-fsync-all replaces the periodic and the final fsyncs
        spec = replace(spec, fsync_freq=0, fsync_end=False)
    if spec.file_num < 1:
        raise FileioError("--file-num must be at least 1")
    if not 1 <= spec.async_backlog <= 4096:
        raise FileioError("--file-async-backlog must be between 1 and 4096")
    if spec.block_size < 1 or spec.fsync_freq < 0 or spec.rw_ratio < 0:
        raise FileioError("--file-block-size must be positive, --file-fsync-freq and --file-rw-ratio not negative")
    if spec.blocks_per_file < 1:
        raise FileioError(
            f"--file-total-size {spec.total_size} over {spec.file_num} files is less than one "
            f"{spec.block_size}-byte block per file"
        )
    if "direct" in flags and spec.block_size % 512:
        raise FileioError("--file-extra-flags direct needs a --file-block-size that is a multiple of 512")
    return spec


def fileio_conn(spec: FileioSpec) -> ConnSettings:
    opts = {
        "file_num": spec.file_num, "file_size": spec.file_size, "block_size": spec.block_size,
        "direct": int("direct" in spec.extra_flags), "sync": int("sync" in spec.extra_flags),
        "dsync": int("dsync" in spec.extra_flags),
        "fsync_end": int(spec.fsync_end), "fdatasync": int(spec.fsync_mode == "fdatasync"),
        "async": spec.async_backlog if spec.io_mode == "async" else 0, "mmap": int(spec.io_mode == "mmap"),
    }
    return ConnSettings(driver="fileio", database=str(spec.dir), options=";".join(f"{k}={v}" for k, v in opts.items()))


def _script(spec: FileioSpec) -> str:
    mode = spec.test_mode
    writes = mode in ("seqwr", "seqrewr", "rndwr", "rndrw")
    if mode in ("seqwr", "seqrewr"):
        io = "exec write: seqwrite"
    elif mode == "seqrd":
        io = "exec read: seqread"
    else:
        pick = "set f = uniform(0, file_num - 1)\nset b = uniform(0, blocks - 1)\n"
        if mode == "rndrd":
            io = pick + "exec read: read :f :b"
        elif mode == "rndwr":
            io = pick + "exec write: write :f :b"
        else:
            # as sysbench: a read while (reads + 1) / (writes + 1) < rw_ratio (this thread's counts)
            ratio = round(spec.rw_ratio * 1000)
            io = (pick + "set nr = nr\nset nw = nw\n" + f"set rd = (nr + 1) * 1000 < (nw + 1) * {ratio}\nif rd\n  set nr = nr + 1\n"
                  "  exec read: read :f :b\nend\nunless rd\n  set nw = nw + 1\n  exec write: write :f :b\nend")
    if writes and spec.fsync_all:
        # sysbench's --file-fsync-all: each write is followed by an fsync of its file (counted as one)
        if mode == "rndrw":
            return io.replace("  exec write: write :f :b", "  exec write: write :f :b\n  exec other: fsync_last")
        return io + "\nexec other: fsync_last"
    if not (writes and spec.fsync_freq > 0):
        return io
    # sysbench's periodic fsync: once fsync_freq requests are done and a write
    # has dirtied the files, the next requests fsync every file in turn (they
    # do not count as requests); then the count goes on.  sysbench keeps one
    # count for all threads, this is one per thread: the same fsyncs per
    # read/write at any thread count.
    # (variables keep their values from one event to the next; `set x = x`
    # declares one, starting at 0)
    return ("set n = n\nset dirty = dirty\nset ff = ff\n" + f"set due = dirty and n % {spec.fsync_freq} == 0\nif due\n  exec other: fsync :ff\n"
            "  set ff = (ff + 1) % file_num\n  set dirty = ff != 0\nend\nunless due\n  set n = n + 1\n"
            f"{io}\n" + ("  set dirty = 1\n" if mode != "rndrw" else "  set dirty = dirty or not rd\n") + "end")


def fileio_program(spec: FileioSpec) -> Program:
    """The engine program for a run: one IO request per event."""
    if spec.test_mode not in TEST_MODES:
        raise FileioError(f"a fileio run needs --file-test-mode: one of {', '.join(TEST_MODES)}")
    data = {
        "name": f"fileio {spec.test_mode}",
        "description": f"sysbench fileio {spec.test_mode}",
        "options": {"file_num": spec.file_num, "blocks": spec.blocks_per_file},
        "transaction": [{"name": spec.test_mode, "script": _script(spec)}],
    }
    program = compile_definition(data, SourceText("<fileio>", ""), "null")
    return replace(program, engine="fileio", query_kinds=("read", "write", "fsync"),
                   extra={"fileio": {"block_size": spec.block_size, "test_mode": spec.test_mode}})


def prepare_files(spec: FileioSpec, out: TextIO = sys.stderr) -> int:
    """Creates (or extends) the test files with data, as `sysbench fileio
    prepare` does.  Returns bytes written."""
    d = Path(spec.dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileioError(f"cannot create --dir {d}: {exc.strerror}") from None
    print(f"{spec.file_num} files, {spec.file_size // 1024}Kb each, {spec.total_size // 1024**2}Mb total", file=out)
    chunk = b"\0" * min(spec.file_size, 1024**2)
    written = 0
    t0 = time.monotonic()
    for path in spec.paths():
        try:
            size = path.stat().st_size if path.exists() else 0
            if size == spec.file_size:
                continue
            print(f"Creating file {path.name}", file=out)
            with open(path, "r+b" if size < spec.file_size and path.exists() else "wb") as f:
                f.truncate(min(size, spec.file_size))
                f.seek(0, os.SEEK_END)
                left = spec.file_size - f.tell()
                while left > 0:
                    n = f.write(chunk[:left])
                    left -= n
                    written += n
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise FileioError(f"cannot create {path}: {exc.strerror}") from None
    dt = max(time.monotonic() - t0, 1e-9)
    print(f"{written} bytes written in {dt:.2f} seconds ({written / dt / 1024**2:.2f} MiB/sec).", file=out)
    return written


def check_files(spec: FileioSpec) -> None:
    """Fail before the run, in one line, when prepare has not made the files."""
    for path in spec.paths():
        try:
            size = path.stat().st_size
        except OSError:
            raise FileioError(f"{path} is missing: run `benchtop prepare --engine fileio` with the same --dir, "
                              "--file-num and --file-total-size first") from None
        if size < spec.file_size:
            raise FileioError(f"{path} has {size} bytes, less than --file-total-size / --file-num = "
                              f"{spec.file_size}: run `benchtop prepare --engine fileio` with the same options")


def cleanup_files(spec: FileioSpec, out: TextIO = sys.stderr) -> int:
    print("Removing test files...", file=out)
    removed = 0
    for path in spec.paths():
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FileioError(f"cannot remove {path}: {exc.strerror}") from None
    return removed


def summary_lines(program: Program, summary: Any) -> list[str]:
    """sysbench's "File operations" and "Throughput" blocks."""
    info = program.extra.get("fileio")
    if not isinstance(info, dict):
        return []
    t = max(float(summary.time_s), 1e-9)
    mib = float(info["block_size"]) / 1024**2
    return [
        "File operations:",
        f"    reads/s:                      {summary.reads / t:.2f}",
        f"    writes/s:                     {summary.writes / t:.2f}",
        f"    fsyncs/s:                     {summary.other / t:.2f}",
        "",
        "Throughput:",
        f"    read, MiB/s:                  {summary.reads * mib / t:.2f}",
        f"    written, MiB/s:               {summary.writes * mib / t:.2f}",
    ]


def throughput_mib(program: Program, reads_per_s: float, writes_per_s: float) -> tuple[float, float] | None:
    """(read, written) MiB/s of an interval of a fileio run; None for other
    programs.  For the TUI's interval line."""
    info = program.extra.get("fileio")
    if not isinstance(info, dict):
        return None
    mib = float(info["block_size"]) / 1024**2
    return reads_per_s * mib, writes_per_s * mib
