"""Each local PostgreSQL backend's CPU and I/O in the activity view
(pg_activity's CPU%, READ/s, WRITE/s), from a recorded /proc tree."""

from __future__ import annotations

from pathlib import Path

from benchtop.panels.views.postgres import PG_ACTIVITY, postgres_summary
from benchtop.panels.views.spec import cell_of, fits, rows_for
from benchtop.sources.backend_usage import BackendUsage, not_local
from benchtop.sources.base import Missing, SourceSnapshot
from benchtop.sources.fields import BACKEND_CPU_PCT, BACKEND_READ_BPS, BACKEND_USAGE, BACKEND_WRITE_BPS
from benchtop.target import Target

# /proc/PID/stat of a backend, recorded (utime 150, stime 25 are fields 14 and 15)
STAT = ("4242 (postgres) S 4100 4100 4100 0 -1 4194560 1200 0 0 0 150 25 0 0 20 0 1 0 364469 "
        "227344384 4000 18446744073709551615 1 1 0 0 0 0 4194304 19935232 536890887 0 0 0 17 1 0 0 0 0 0")
IO = "rchar: 12345\nwchar: 678\nsyscr: 10\nsyscw: 5\nread_bytes: {r}\nwrite_bytes: {w}\ncancelled_write_bytes: 0\n"
CMDLINE = b"postgres: bt bt 127.0.0.1(40000) INSERT\0"


def _backend(root: Path, pid: int, ticks: int, read: int = 0, write: int = 0, io: bool = True) -> None:
    d = root / str(pid)
    d.mkdir(exist_ok=True)
    fields = STAT.split()
    fields[0], fields[13], fields[14] = str(pid), str(ticks), "0"
    (d / "stat").write_text(" ".join(fields))
    (d / "cmdline").write_bytes(CMDLINE)
    if io:
        (d / "io").write_text(IO.format(r=read, w=write))


def test_rates_between_polls(tmp_path: Path) -> None:
    now = [100.0]
    usage = BackendUsage(tmp_path, clock=lambda: now[0], ticks_per_s=100)
    _backend(tmp_path, 4242, 1000)
    first = usage.sample([4242, 999])  # 999 ended since the query: no row
    assert first == {4242: {BACKEND_CPU_PCT: None, BACKEND_READ_BPS: None, BACKEND_WRITE_BPS: None}}
    now[0] += 2.0
    _backend(tmp_path, 4242, 1150, read=2 << 20, write=8192)  # 1.5 s of CPU in 2 s, 2 MiB read
    assert usage.sample([4242]) == {4242: {BACKEND_CPU_PCT: 75.0, BACKEND_READ_BPS: float(1 << 20),
                                           BACKEND_WRITE_BPS: 4096.0}}
    assert usage.note() is None


def test_io_unreadable_keeps_cpu_and_says_why(tmp_path: Path) -> None:
    usage = BackendUsage(tmp_path, clock=iter([0.0, 1.0]).__next__, ticks_per_s=100)
    _backend(tmp_path, 7, 10, io=False)
    usage.sample([7])
    _backend(tmp_path, 7, 60, io=False)
    assert usage.sample([7]) == {7: {BACKEND_CPU_PCT: 50.0}}
    note = usage.note()
    assert isinstance(note, Missing) and "/proc/PID/io" in note.what and "root" in (note.hint or "")


def test_only_a_postgres_process_of_this_host_is_read(tmp_path: Path) -> None:
    local = Target(kind="postgresql", host="127.0.0.1")
    _backend(tmp_path, 4242, 0)
    assert not_local(local, 4242, tmp_path) is None
    (tmp_path / "4243").mkdir()
    (tmp_path / "4243" / "cmdline").write_bytes(b"/usr/bin/python3\0-m\0pytest\0")
    container = not_local(local, 4243, tmp_path)  # another PID namespace: the pid is someone else here
    assert container is not None and "not a postgres process here" in container.what
    assert not_local(local, 5555, tmp_path) is not None  # no such process
    remote = not_local(Target(kind="postgresql", host="db.example.com"), 4242, tmp_path)
    assert remote is not None and "not on this host" in remote.what


def test_activity_view_shows_the_columns_and_the_note() -> None:
    row = {"pid": 4242, "state": "active", "query": "INSERT", BACKEND_CPU_PCT: 75.0, BACKEND_READ_BPS: 1048576.0,
           BACKEND_WRITE_BPS: 0.0}
    rows = rows_for(PG_ACTIVITY, SourceSnapshot("pg", "postgresql", 0.0, True, panels={"activity": [row]}))
    assert isinstance(rows, list)
    cells = {c.label: str(cell_of(c, rows[0])) for c in PG_ACTIVITY.cols}
    assert (cells["CPU%"], cells["Read/s"], cells["Write/s"]) == ("75.0%", "1.0 MiB/s", "0 B/s")
    at_80 = [c.label for c in PG_ACTIVITY.cols if fits(c, 80)]
    assert "CPU%" in at_80 and "Read/s" not in at_80  # I/O from 100 columns: the statement keeps its room
    remote = SourceSnapshot("pg", "postgresql", 0.0, True, panels={
        "activity": [{"pid": 1, "state": "active"}],
        BACKEND_USAGE: Missing("per-backend CPU and I/O: the server is not on this host", "run it there")})
    lines = [t.plain for t in postgres_summary(remote, 200)]
    assert "sessions: ✗ per-backend CPU and I/O: the server is not on this host — run it there" in lines, lines


def test_headless_line_has_cpu_only_when_read() -> None:
    from benchtop.panels.headless import summary_lines

    base = {"pid": 4242, "state": "active", "query_age_s": 2.5, "query": "SELECT pg_sleep(9)"}
    local = SourceSnapshot("pg", "postgresql", 0.0, True, panels={"activity": [dict(base, cpu_pct=12.5)]})
    remote = SourceSnapshot("pg", "postgresql", 0.0, True, panels={"activity": [base]})
    line = next(x for x in summary_lines(local) if x.startswith("sessions now"))
    assert line.endswith("4242  active  2.5s  12.5%  SELECT pg_sleep(9)"), line
    line = next(x for x in summary_lines(remote) if x.startswith("sessions now"))
    assert line.endswith("4242  active  2.5s  SELECT pg_sleep(9)"), line  # no '-' for a column it has not
