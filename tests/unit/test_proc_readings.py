"""The readings of a local server's processes from /proc: files kept open
between readings read what the kernel says now, one pass gives the server
tree's CPU as the kernel counts it, and a run's cost meter and its verdict share
that pass (and say what it cost)."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from benchtop.engine import _allow_files
from benchtop.record.costs import ClientCpu
from benchtop.run.costs import CostMeter
from benchtop.run.verdicts import VerdictMeter
from benchtop.sources import proc_files
from benchtop.sources.host_state import title
from benchtop.sources.proc_files import ProcFiles
from benchtop.sources.proc_scan import MAX_TASK_READS, WORKER_THREADS, ProcScan, _worker_waits, scan, shares
from benchtop.sources.proc_table import LatestPass, read_stats, tree
from benchtop.sources.process import clock_ticks, listener_pid, listening_inodes, parse_listeners
from benchtop.target import Target


def _stat(pid: int, name: str, ppid: int, utime: int, stime: int = 0, reaped: int = 0, threads: int = 1) -> str:
    # fields 14-17 utime stime cutime cstime, 20 num_threads, 24 rss (1-based)
    return (f"{pid} ({name}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 {utime} {stime} {reaped} 0 20 0 "
            f"{threads} 0 100 1000 50 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0")


def _process(root: Path, pid: int, name: str, ppid: int, utime: int, *, reaped: int = 0, kids: str = "",
             run_ns: int = 0, wait_ns: int = 0, written: int = 0) -> None:
    d = root / str(pid)
    (d / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
    (d / "stat").write_text(_stat(pid, name, ppid, utime, reaped=reaped))
    (d / "schedstat").write_text(f"{run_ns} {wait_ns} 7\n")
    (d / "io").write_text(f"rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 0\nwrite_bytes: {written}\n"
                          "cancelled_write_bytes: 0\n")
    (d / "task" / str(pid) / "children").write_text(kids)
    (d / "task" / str(pid) / "schedstat").write_text(f"{run_ns} {wait_ns} 7\n")
    (d / "task" / str(pid) / "comm").write_text(name + "\n")


def _server(root: Path, backend_ticks: int = 30, written: int = 4096) -> None:
    """A postmaster (500) with two backends, a neighbour (sh) and benchtop (900)."""
    _process(root, 1, "init", 0, 5, kids="500 77 900 ")
    _process(root, 500, "postgres", 1, 100, reaped=40, kids="501 502 ", written=written)
    _process(root, 501, "postgres", 500, backend_ticks, run_ns=3 * 10**8, wait_ns=10**8, written=written)
    _process(root, 502, "postgres", 500, 20, run_ns=10**6, wait_ns=5 * 10**8)
    _process(root, 77, "sh", 1, 300)
    _process(root, 900, "bt-loop-0", 1, 60, wait_ns=2 * 10**8)


def test_kept_files_read_what_is_there_now_and_sweep_closes_the_unread(tmp_path: Path) -> None:
    files = ProcFiles()
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("first")
    b.write_text("other")
    assert files.read(str(a)) == b"first" and files.read(str(b)) == b"other" and files.kept == 2
    a.write_text("second, longer")  # rewritten in place, as the kernel regenerates a /proc file
    assert files.read(str(a)) == b"second, longer"
    files.sweep()
    files.read(str(a))
    files.sweep()  # b was not read since the last sweep: closed
    assert files.kept == 1
    a.write_text("x" * 40000)  # longer than one read: read whole
    assert files.read(str(a)) == b"x" * 40000
    files.close()
    assert files.kept == 0 and files.read(str(b)) == b"other"


def test_an_ended_process_reads_as_gone_and_its_file_is_dropped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    files = ProcFiles()
    try:
        assert files.read(f"/proc/{child.pid}/stat").startswith(f"{child.pid} (".encode())
        assert files.kept == 1
    finally:
        child.kill()
        child.wait()
    with pytest.raises(OSError):
        files.read(f"/proc/{child.pid}/stat")
    assert files.kept == 0


def test_files_are_kept_only_within_the_open_files_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the hard limit already, a descriptor past the limit's lowest quarter
    is closed after its read: the load's sockets keep the rest."""
    limits = {"now": (8, 8)}
    monkeypatch.setattr(proc_files.resource, "getrlimit", lambda _: limits["now"])
    monkeypatch.setattr(proc_files.resource, "setrlimit", lambda _, v: limits.update(now=v))
    (tmp_path / "f").write_text("data")
    files = ProcFiles()
    assert files.read(str(tmp_path / "f")) == b"data" and files.kept == 0  # past descriptor 2
    limits["now"] = (8, 10_000)  # room under the hard limit: raised by a step, then kept
    assert files.read(str(tmp_path / "f")) == b"data" and files.kept == 1
    assert limits["now"] == (8 + proc_files.KEEP_STEP, 10_000)


def test_the_engine_leaves_room_for_the_files_already_open(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"now": (1024, 100_000)}
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", lambda _, v: limits.update(now=v))
    _allow_files(700, open_now=lambda: 0)
    assert limits["now"] == (1024, 100_000)  # 700 sockets and the usual margin fit
    _allow_files(700, open_now=lambda: 600)  # 600 kept /proc files besides
    assert limits["now"] == (700 + 256 + 600, 100_000)


def test_one_pass_gives_the_tree_the_neighbours_and_the_waits(tmp_path: Path) -> None:
    _server(tmp_path)
    files = ProcFiles()
    stats = read_stats(files, str(tmp_path))
    assert tree(500, stats) == {500, 501, 502}
    s = scan(500, own_pid=900, proc=str(tmp_path), files=files)
    assert s.server is not None and s.server.pids == 3
    # the live tree's ticks (a tick more each: /proc floors them) and what the postmaster reaped
    assert s.server.cpu_s == (100 + 30 + 20 + 3 + 40) / clock_ticks()
    assert s.run == frozenset({500, 501, 502, 900})
    assert s.ticks[77] == ("sh", 300)
    assert s.server_tasks == {500: (0, 0), 501: (3 * 10**8, 10**8), 502: (10**6, 5 * 10**8)}
    assert s.server_write_bytes == 8192 and s.worker_wait_ns == 2 * 10**8
    # the next pass through the same open files reads the counters as they are then
    _server(tmp_path, backend_ticks=80, written=10_000)
    later = scan(500, own_pid=900, proc=str(tmp_path), files=files)
    assert later.server is not None and later.server.cpu_s == (100 + 80 + 20 + 3 + 40) / clock_ticks()
    assert later.server_write_bytes == 20_000


def test_a_pass_over_this_hosts_proc_finds_a_tree_and_its_cpu() -> None:
    """A process with two children as the 'server' (this test's own process
    may have others: the real-server fixtures' servers)."""
    spawn = ("import subprocess, sys, time\n"
             "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) for _ in range(2)]\n"
             "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
             "time.sleep(60)\n")
    root = subprocess.Popen([sys.executable, "-c", spawn], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert root.stdout is not None
        kids = {int(p) for p in root.stdout.readline().split()}
        files = ProcFiles()
        s = scan(root.pid, files=files)
        assert s.server is not None and s.server.pids == 3
        assert kids | {root.pid} <= set(s.server_tasks or {})
        assert 0 < s.server.cpu_s < 10  # three interpreters' start-up
        again = scan(root.pid, files=files)
        assert again.server is not None and again.server.cpu_s >= s.server.cpu_s
    finally:
        os.killpg(root.pid, 9)
        root.wait()


def test_a_title_is_the_command_line_else_the_command_name(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cmdline").write_bytes(b"postgres: bt bt 127.0.0.1(4000) idle\0")
    (tmp_path / "8").mkdir()
    (tmp_path / "8" / "cmdline").write_bytes(b"")
    files = ProcFiles()
    assert title(7, "postgres", files, str(tmp_path)) == "postgres: bt bt 127.0.0.1(4000) idle"
    assert title(8, "kworker/0:1", files, str(tmp_path)) == "kworker/0:1"


def test_the_cost_meter_reads_the_server_in_one_pass_and_counts_its_cpu() -> None:
    shared = LatestPass()
    meter = CostMeter("null", Target("null"), probe_target=False, shared=shared)
    meter._pid = os.getpid()  # noqa: SLF001 - the server found at begin(): this process here
    first = meter.read(memory=False)
    second = meter.read(memory=False)
    assert meter.scan is not None and first.server is not None and second.server is not None
    # its pass over /proc is the host monitor's too
    newest = shared.newest(60.0)
    assert newest is not None and os.getpid() in newest.stats and newest.t <= meter.scan.t
    assert second.server == meter.scan.server and second.server.pids >= 1
    assert 0 < first.readings_cpu_s < second.readings_cpu_s  # cumulative, from the readings' own thread time
    meter.close()
    # a run's total in summary.json, read back as written (and absent where not measured)
    run = ClientCpu(1.5, 30.0, 0.3, 0.075, 80.0, None, 0.0612)
    assert ClientCpu.from_dict(run.to_dict()) == run and run.to_dict()["readings_cpu_s"] == 0.0612
    assert "readings_cpu_s" not in ClientCpu(1.5).to_dict()


def test_the_verdict_reads_the_cost_meters_pass_when_it_is_new() -> None:
    passes: list[ProcScan] = []

    def made(t: float, sh_ticks: int) -> ProcScan:
        return ProcScan(t, {1: ("sh", sh_ticks), 2: ("postgres", 0)}, frozenset({2}), 0, {2: (0, 0)}, 0)

    target = Target(kind="postgresql", host="127.0.0.1", port=5432)
    meter = VerdictMeter(target, scanned=lambda: passes[-1] if passes else None)
    passes.append(made(1.0, 0))
    assert meter._proc_signals() == {}  # noqa: SLF001 - the first pass: nothing to compare yet
    passes.append(made(3.0, 2 * clock_ticks()))
    got = meter._proc_signals()  # noqa: SLF001
    assert got["neighbour_cores"] == 1.0 and got["neighbour_top"] == "sh 1.00"
    # no new pass from the meter (its reading found no server): the verdict takes its own
    own = meter._proc_signals()  # noqa: SLF001
    assert own["neighbour_cores"] is not None
    meter.close()


def test_thousands_of_own_threads_are_read_through_a_bounded_sample(tmp_path: Path) -> None:
    # 4,096 workers were 8,000 files a reading: evenly spaced threads stand for the rest
    for tid in range(1000, 1000 + 640):
        task = tmp_path / "900" / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "schedstat").write_text(f"5 {10**6} 1\n")
        (task / "comm").write_text("bt-worker-1\n" if tid % 7 else "python3\n")
    files = ProcFiles()
    reads = []
    real = files.read
    files.read = lambda path: reads.append(path) or real(path)  # type: ignore[method-assign]
    wait = _worker_waits(files, str(tmp_path), 900, WORKER_THREADS)
    assert len(reads) <= 2 * MAX_TASK_READS
    named = sum(1 for tid in range(1000, 1640) if tid % 7)
    assert abs(wait - named * 10**6) <= 32 * 10**6, (wait, named)  # the named workers' 1 ms each


def test_hundreds_of_server_backends_are_read_through_a_bounded_sample(tmp_path: Path) -> None:
    # a backend per connection: 10,000 connections would be 10,000 schedstat files a second
    _process(tmp_path, 1, "init", 0, 5, kids="500 ")
    _process(tmp_path, 500, "postgres", 1, 100)
    for pid in range(1000, 1300):
        _process(tmp_path, pid, "postgres", 500, 10, run_ns=10**9, wait_ns=10**6)
    before = scan(500, own_pid=1, proc=str(tmp_path), files=ProcFiles())
    for pid in range(1000, 1300):
        _process(tmp_path, pid, "postgres", 500, 20, run_ns=2 * 10**9, wait_ns=2 * 10**6)
    after = scan(500, own_pid=1, proc=str(tmp_path), files=ProcFiles())
    assert before.server_tasks is not None and after.server_tasks is not None
    assert 0 < len(after.server_tasks) <= MAX_TASK_READS
    assert set(after.server_tasks) == set(before.server_tasks)  # the same tasks from one scan to the next
    assert after.server_tasks_scale * len(after.server_tasks) == 301  # the backends and the postmaster
    # each backend waited 1 ms in the second: the sample's waits, scaled, say all of theirs
    waited = shares(before, replace(after, t=before.t + 1.0)).server_cpu_wait
    assert waited is not None and abs(waited - 0.3) <= 0.03, waited


def test_the_listener_of_a_port_is_found_through_netlink_as_proc_net_tcp_says() -> None:
    """The kernel's listening sockets asked through sock_diag are the ones
    /proc/net/tcp lists, and the process holding one is found."""
    with socket.socket() as listening, socket.socket() as other:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        other.bind(("127.0.0.1", 0))  # bound, not listening: not a listener
        port = listening.getsockname()[1]
        from_proc = parse_listeners(Path("/proc/net/tcp").read_text(), port)
        assert from_proc and listening_inodes(port) == from_proc
        assert listening_inodes(other.getsockname()[1]) == set()
        assert listener_pid(port) == os.getpid()
