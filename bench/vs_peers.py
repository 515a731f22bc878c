#!/usr/bin/env python3
"""benchtop against sysbench, sysbench-tpcc and pgbench on the same private servers.

    python bench/vs_peers.py [--time 20] [--threads 4] [--rounds 3] [--many-threads 256]
                             [--setups auto,normal,idle] [--connections 256] [--pgbouncer-connections 10000]
                             [--sysbench-tpcc DIR] [--only NAME] [--no-strace] [--perf] [--floor]

Starts a private MariaDB and PostgreSQL (the test harness's code, free
loopback ports, a temporary folder; or uses running ones with --mysql-port /
--pgsql-port), prepares the same tables once, then runs every row below in
one go, peer and benchtop alternating (which one goes first swaps each
round), same threads and duration:

    oltp_point_select, oltp_read_write, oltp_read_only, oltp_write_only
        sysbench --db-driver=mysql against MariaDB, and
        sysbench --db-driver=pgsql against PostgreSQL
    tpcb-select-only, tpcb       pgbench -S / TPC-B (-M prepared) against PostgreSQL
    tpcc                         sysbench-tpcc's tpcc.lua against MariaDB (with
                                 --sysbench-tpcc DIR, a checkout of
                                 Percona-Lab/sysbench-tpcc: GPL, so it is never
                                 copied into this repository)
    oltp_read_write@N            --many-threads N connections (default 256)

Each row runs in every setup of --setups, each labelled with what it holds
for:
    auto     benchtop's default (--worker-priority auto: SCHED_IDLE beside a
             local server), the peer at normal priority: this machine only
    normal   both at normal priority, as against a server on another host
             (where auto never applies): like-for-like
    idle     both under SCHED_IDLE (the peer started with chrt --idle 0)

Connections > threads (--connections N, default 256, on --threads J):
    tpcb-select-only c256/j4, tpcb c256/j4   pgbench -c N -j J against
                                 benchtop --connections N --threads J
    oltp_read_write c256/j4      sysbench --threads N against benchtop
                                 --connections N --threads J (MariaDB)
    pgbouncer c10000/j4          --pgbouncer-connections N through a private
                                 PgBouncer (transaction pooling, pool 20),
                                 pgbench -S -c N -j J beside benchtop; every
                                 connection must be served and the client's
                                 RSS stay under 1 GiB

For each row: TPS, p99, client CPU (user+sys of the client process and its
children) per transaction, context switches per transaction, and (unless
--no-strace) system calls per transaction of each client, counted by
`strace -c -f` in a separate shorter pass so that strace never slows the
timed runs.  With --perf, both clients of the row with the worst CPU ratio
are profiled (perf record) and the share of their CPU by library printed
under the table.  With --floor, each round also runs bench/roundtrip_floor.c
(a minimal C client: the least CPU a point select can cost here) next to the
PostgreSQL point select row, with one connection per thread and with two (in
lockstep), and next to the select-only row on many connections (each
connection its own closed loop on epoll threads), and prints its figures
under the table.  For the rows with connections > threads, the share of
benchtop's CPU that its readings of the local server's processes took (its
pass over /proc each second for the server's CPU and the verdict, as the
summary's client_cpu.readings_cpu_s times it) is printed under the table
too.  The verdict per row is
the issue's target: TPS >= 1.00x the peer and client CPU per transaction <=
0.85x sysbench (0.95x pgbench).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.local import LocalMariaDB, LocalPgBouncer, LocalPostgres, free_port  # noqa: E402
from tests.fixtures.local import DATABASE, PASSWORD, PG_ADMIN, USER  # noqa: E402

OLTP = ("oltp_point_select", "oltp_read_write", "oltp_read_only", "oltp_write_only")
CPU_TARGET = {"sysbench": 0.85, "sysbench-tpcc": 0.85, "pgbench": 0.95}
# like-for-like priority (both normal, or both idle): pgbench's target is 0.90x
CPU_TARGET_SAME = {"sysbench": 0.85, "sysbench-tpcc": 0.85, "pgbench": 0.90}
CPU_TARGET_MANY = 0.70   # connections > threads, against pgbench -c/-j and sysbench N threads
TPS_TARGET = 1.00
SETUPS = ("auto", "normal", "idle")


@dataclass
class Result:
    tps: float
    p99_ms: float
    cpu_s: float
    transactions: int
    switches: int
    syscalls: int | None = None
    profile: str | None = None
    # benchtop's own account of its measured window: its CPU, and what its readings of the
    # local server's processes in /proc took of it (summary client_cpu.readings_cpu_s)
    window_cpu_s: float | None = None
    readings_s: float | None = None


@dataclass
class Row:
    """One line of the table: a workload, a server, a peer, and how to run each side."""

    name: str
    peer: str
    run_peer: Callable[[int, str], Result]       # (seconds, probe) -> Result
    run_benchtop: Callable[[int, str], Result]
    peer_runs: list[Result] = field(default_factory=list)
    bt_runs: list[Result] = field(default_factory=list)
    peer_sc: float | None = None
    bt_sc: float | None = None
    cpu_limit: float | None = None   # None: CPU_TARGET[peer]
    served_ok: list[bool] = field(default_factory=list)  # the PgBouncer row: every connection served, RSS <= 1 GiB
    # the bare client --floor runs beside it: "point" (a connection per thread), "many" (connections on epoll threads)
    floor: str = ""
    readings: bool = False  # report the share of benchtop's CPU its /proc readings of the server took


@dataclass
class Servers:
    my_port: int
    pg_port: int
    database: str


def timed(cmd: list[str], env: dict[str, str] | None = None, probe: str = "",
          cwd: str | None = None) -> tuple[str, float, int, int | None | str]:
    """Run a client; return its output, its CPU seconds (user+sys, children
    included), its context switches and what the probe found: with "strace"
    its system call count, with "perf" the share of its CPU samples by
    library (kernel, client library, libc, the tool itself)."""
    found: int | None | str = None
    path = ""
    if probe:
        fd, path = tempfile.mkstemp(suffix="." + probe)
        os.close(fd)
        cmd = (["strace", "-c", "-f", "-o", path, *cmd] if probe == "strace"
               else ["perf", "record", "-q", "-F", "999", "-o", path, "--", *cmd])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    if probe == "strace":
        text = Path(path).read_text()
        m = re.search(r"^\s*100\.00\s+\S+\s+(?:\S+\s+)?(\d+)\s+(?:\d+\s+)?total\s*$", text, re.M)
        found = int(m.group(1)) if m else None
    elif probe == "perf":
        rep = subprocess.run(["perf", "report", "-i", path, "--sort", "dso", "--stdio", "-q"],
                             capture_output=True, text=True).stdout
        shares = [(float(pct), Path(dso).name) for pct, dso in re.findall(r"^\s*([\d.]+)%\s+(\S+)", rep, re.M)]
        found = ", ".join(f"{dso} {pct:.1f}%" for pct, dso in shares[:6])
    if path:
        Path(path).unlink(missing_ok=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return res.stdout, cpu, switches, found


def figure(pattern: str, out: str) -> str:
    """One figure of a client's report; a report without it stops the run."""
    m = re.search(pattern, out)
    if not m:
        raise SystemExit(f"no {pattern!r} in the client's output:\n{out[-2000:]}")
    return m.group(1)


def probed(r: Result, found: int | None | str) -> Result:
    if isinstance(found, str):
        r.profile = found
    else:
        r.syscalls = found
    return r


def sysbench_result(out: str, cpu: float, switches: int) -> Result:
    tx = int(figure(r"transactions:\s+(\d+)", out))
    tps = float(figure(r"transactions:\s+\d+\s+\((\S+) per sec", out))
    p99 = float(figure(r"99th percentile:\s+(\S+)", out))
    return Result(tps, p99, cpu, tx, switches)


def sysbench_conn(engine: str, srv: Servers) -> list[str]:
    if engine == "mysql":
        return ["--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={srv.my_port}", f"--mysql-user={USER}",
                f"--mysql-password={PASSWORD}", f"--mysql-db={srv.database}"]
    return ["--db-driver=pgsql", "--pgsql-host=127.0.0.1", f"--pgsql-port={srv.pg_port}", f"--pgsql-user={USER}",
            f"--pgsql-password={PASSWORD}", f"--pgsql-db={srv.database}"]


def sysbench(srv: Servers, engine: str, workload: str, threads: int, extra: list[str],
             cwd: str | None = None) -> Callable[[int, str], Result]:
    def run(seconds: int, probe: str) -> Result:
        out, cpu, cs, found = timed([*PEER_PREFIX, "sysbench", workload, *sysbench_conn(engine, srv), *extra,
                                     f"--threads={threads}", f"--time={seconds}", "--percentile=99", "run"],
                                    probe=probe, cwd=cwd)
        return probed(sysbench_result(out, cpu, cs), found)
    return run


def benchtop(srv: Servers, engine: str, workload: str, threads: int, extra: list[str],
             port: int | None = None, check: Callable[[dict, int], None] | None = None) -> Callable[[int, str], Result]:
    scheme, dport = ("mysql", srv.my_port) if engine == "mysql" else ("postgresql", srv.pg_port)
    env = {"MYSQL_PWD": PASSWORD} if engine == "mysql" else {"PGPASSWORD": PASSWORD}

    def run(seconds: int, probe: str) -> Result:
        rss_file = Path(tempfile.mkstemp(suffix=".rss")[1]) if check else None
        rss = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)] if rss_file else []
        out, cpu, cs, found = timed([*rss, sys.executable, "-m", "benchtop", "--headless", "--json", "--engine", engine,
                                  "--dsn", f"{scheme}://{USER}@127.0.0.1:{port or dport}/{srv.database}",
                                  "--workload", workload, f"--threads={threads}", f"--time={seconds}",
                                  "--percentile=99", "--report-interval=0", "--no-monitor", *BT_PRIORITY, *extra],
                                 env=env, probe=probe)
        s = json.loads([ln for ln in out.strip().splitlines() if '"summary"' in ln][-1])
        if check and rss_file:
            check(s, int(rss_file.read_text().split()[-1]) * 1024)
            rss_file.unlink(missing_ok=True)
        own = s.get("client_cpu") or {}
        return probed(Result(s["tps"], s["latency_ms"]["p99"], cpu, s["transactions"], cs,
                             window_cpu_s=own.get("cpu_s"), readings_s=own.get("readings_cpu_s")), found)
    return run


def idle_peer(run: Callable[[int, str], Result]) -> Callable[[int, str], Result]:
    """The peer under SCHED_IDLE (chrt --idle 0), for the both-idle setup."""
    def wrapped(seconds: int, probe: str) -> Result:
        global PEER_PREFIX
        PEER_PREFIX = ["chrt", "--idle", "0"]
        try:
            return run(seconds, probe)
        finally:
            PEER_PREFIX = []
    return wrapped


PEER_PREFIX: list[str] = []


def pgbench(srv: Servers, script: list[str], threads: int, clients: int = 0,
            port: int | None = None, mode: str = "prepared") -> Callable[[int, str], Result]:
    def run(seconds: int, probe: str) -> Result:
        with tempfile.TemporaryDirectory() as d:
            prefix = Path(d) / "pgb"
            out, cpu, cs, found = timed([*PEER_PREFIX, "pgbench", "-h", "127.0.0.1", "-p", str(port or srv.pg_port),
                                      "-U", USER, "-M", mode, "-c", str(clients or threads), "-j", str(threads),
                                      "-T", str(seconds),
                                      "-n", "-l", f"--log-prefix={prefix}", *script, srv.database],
                                     env={"PGPASSWORD": PASSWORD}, probe=probe)
            lat = []
            for f in Path(d).glob("pgb*"):
                for line in f.read_text().splitlines():
                    parts = line.split()
                    if len(parts) >= 3:
                        lat.append(int(parts[2]))
        lat.sort()
        tx = int(figure(r"number of transactions actually processed: (\d+)", out))
        tps = float(figure(r"tps = (\S+)", out))
        p99 = lat[max(0, int(len(lat) * 0.99) - 1)] / 1000 if lat else float("nan")
        return probed(Result(tps, p99, cpu, tx, cs), found)
    return run


def roundtrip_floor(srv: Servers, exe: Path, threads: int, per_thread: int,
                    table_size: int, flags: Sequence[str] = ()) -> Callable[[int, str], Result]:
    conninfo = f"host=127.0.0.1 port={srv.pg_port} user={USER} dbname={srv.database}"

    def run(seconds: int, probe: str) -> Result:
        out, cpu, cs, _ = timed([str(exe), conninfo, str(threads), str(per_thread), str(seconds), str(table_size),
                                 *flags], env={"PGPASSWORD": PASSWORD})
        tx = int(figure(r"transactions: (\d+)", out))
        return Result(tx / seconds, float("nan"), cpu, tx, cs)
    return run


FloorRuns = list[tuple[str, Callable[[int, str], Result], list[Result]]]


def floor_clients(srv: Servers, args: argparse.Namespace, rows: list[Row], root: Path) -> dict[str, FloorRuns]:
    """The floor client's variants, by the row they run beside: the PostgreSQL
    point select (one connection per thread, and two in lockstep, SCHED_IDLE
    as benchtop's workers there) and pgbench's select-only on many connections
    (each its own closed loop on epoll threads, normal priority, as the row)."""
    t, out = args.threads, dict[str, FloorRuns]()
    beside = [r for r in rows if r.floor == "point" or (r.floor == "many" and args.connections % t == 0)]
    if not beside:
        return {}
    exe = build_floor(root)
    for r in beside:
        if r.floor == "point":
            out[r.name] = [(f"{t} threads x 1 connection", roundtrip_floor(srv, exe, t, 1, args.table_size), [])]
            if t % 2 == 0:
                out[r.name].append((f"{t // 2} threads x 2 connections, lockstep",
                                    roundtrip_floor(srv, exe, t // 2, 2, args.table_size), []))
        else:
            per = args.connections // t
            out[r.name] = [(f"{t} threads x {per} connections, epoll, normal",
                            roundtrip_floor(srv, exe, t, per, 100000 * args.scale, ["--epoll", "--normal", "--pgbench"]),
                            [])]
    return out


def build_floor(into: Path) -> Path:
    """bench/roundtrip_floor.c, compiled against libpq."""
    flags = (subprocess.run(["pkg-config", "--cflags", "--libs", "libpq"], capture_output=True, text=True)
             if shutil.which("pkg-config") else None)
    libpq = flags.stdout.split() if flags and flags.returncode == 0 else ["-I/usr/include/postgresql", "-lpq"]
    exe = into / "roundtrip_floor"
    subprocess.run(["cc", "-O2", "-std=c11", "-Wall", "-Wextra", "-o", str(exe),
                    str(ROOT / "bench" / "roundtrip_floor.c"), *libpq, "-lpthread"], check=True)
    return exe


def raise_client_limit(port: int, n: int) -> None:
    """PgBouncer's max_client_conn, online through its admin console."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=port, user=PG_ADMIN[0], password=PG_ADMIN[1], dbname="pgbouncer",
                         autocommit=True, prepare_threshold=None) as c:
        c.execute(f"SET max_client_conn = {n + 100}")


def prepare(srv: Servers, args: argparse.Namespace, tables: list[str], need_pg: bool, need_tpcc: bool) -> None:
    """The peers' own prepare for the sysbench and pgbench tables (benchtop
    reads them as they are); benchtop's for TPC-C, whose tables are
    sysbench-tpcc's (tpcc.lua's prepare waits 30 s and loads row by row)."""
    env = {**os.environ, "PGPASSWORD": PASSWORD, "MYSQL_PWD": PASSWORD}
    engines = ["mysql"] + (["pgsql"] if need_pg else [])
    for engine in engines:
        conn = sysbench_conn(engine, srv)
        subprocess.run(["sysbench", "oltp_common", *conn, *tables, "cleanup"], capture_output=True, env=env)
        subprocess.run(["sysbench", "oltp_common", *conn, *tables, "--threads=4", "prepare"], check=True,
                       capture_output=True, env=env)
    if need_pg:
        subprocess.run(["pgbench", "-i", "-q", "-s", str(args.scale), "-h", "127.0.0.1", "-p", str(srv.pg_port),
                        "-U", USER, srv.database], check=True, capture_output=True, env=env)
    if need_tpcc:
        tpcc = ["--engine", "mysql", "--dsn", f"mysql://{USER}@127.0.0.1:{srv.my_port}/{srv.database}",
                "--workload", "tpcc", "--tables=1", f"--scale={args.tpcc_scale}"]
        subprocess.run([sys.executable, "-m", "benchtop", "cleanup", *tpcc], capture_output=True, env=env)
        subprocess.run([sys.executable, "-m", "benchtop", "prepare", *tpcc, "--threads=4"], check=True,
                       capture_output=True, env=env)


def with_setups(rows: list[Row], setups: list[str]) -> list[Row]:
    """Each row once per setup, labelled: auto (benchtop's default priority,
    the peer normal), normal (both normal), idle (both SCHED_IDLE)."""
    out: list[Row] = []
    for setup in setups:
        for r in rows:
            peer, bt = r.run_peer, r.run_benchtop
            if setup == "idle":
                peer = idle_peer(peer)
            out.append(Row(f"{r.name} [{setup}]", r.peer, peer, with_priority(bt, setup), cpu_limit=(
                r.cpu_limit if r.cpu_limit is not None else
                CPU_TARGET[r.peer] if setup == "auto" else CPU_TARGET_SAME[r.peer]),
                # the point floor's threads are SCHED_IDLE, as benchtop's workers by default
                floor=r.floor if setup == "auto" else ""))
    return out


BT_PRIORITY: list[str] = []


def with_priority(run: Callable[[int, str], Result], setup: str) -> Callable[[int, str], Result]:
    def wrapped(seconds: int, probe: str) -> Result:
        global BT_PRIORITY
        BT_PRIORITY = [] if setup == "auto" else [f"--worker-priority={setup}"]
        try:
            return run(seconds, probe)
        finally:
            BT_PRIORITY = []
    return wrapped


def many_connection_rows(srv: Servers, args: argparse.Namespace, tables: list[str]) -> list[Row]:
    """Connections > threads: benchtop --connections N --threads J against
    pgbench -c N -j J and sysbench with N threads (its only way to hold N
    connections), like-for-like priority (both normal)."""
    n, j = args.connections, args.threads
    scale = [f"--scale={args.scale}"]
    many = ["--connections", str(n)]
    tag = f"c{n}/j{j}"
    rows = [
        Row(f"tpcb-select-only {tag} (PostgreSQL)", "pgbench", pgbench(srv, ["-S"], j, n),
            benchtop(srv, "postgres", "tpcb-select-only", j, [*scale, *many]), cpu_limit=CPU_TARGET_MANY,
            floor="many"),
        Row(f"tpcb {tag} (PostgreSQL)", "pgbench", pgbench(srv, [], j, n),
            benchtop(srv, "postgres", "tpcb", j, [*scale, *many]), cpu_limit=CPU_TARGET_MANY),
        Row(f"oltp_read_write {tag} (MariaDB)", "sysbench", sysbench(srv, "mysql", "oltp_read_write", n, tables),
            benchtop(srv, "mysql", "oltp_read_write", j, [*tables, *many]), cpu_limit=CPU_TARGET_MANY),
    ]
    return [Row(r.name + " [normal]", r.peer, r.run_peer, with_priority(r.run_benchtop, "normal"),
                cpu_limit=r.cpu_limit, floor=r.floor, readings=True) for r in rows]


def pgbouncer_row(srv: Servers, args: argparse.Namespace, pgb_port: int) -> Row:
    """--pgbouncer-connections N on --threads J through the private PgBouncer:
    every connection connected and served, the client's RSS <= 1 GiB (ru_maxrss
    of the run), pgbench -S -c N -j J beside it."""
    n, j = args.pgbouncer_connections, args.threads
    # named statements do not survive transaction pooling: pgbench's extended protocol (unnamed), as
    # benchtop falls back to
    row = Row(f"pgbouncer c{n}/j{j} select-only", "pgbench", pgbench(srv, ["-S"], j, n, port=pgb_port, mode="extended"),
              lambda s, p: Result(0, 0, 0, 0, 0), cpu_limit=CPU_TARGET_MANY, readings=True)

    def check(s: dict, rss: int) -> None:
        ok = s.get("connections") == n and s.get("connections_served") == n and rss <= 2**30
        row.served_ok.append(ok)
        print(f"pgbouncer row: {s.get('connections')} connections, {s.get('connections_served')} served, "
              f"client RSS {rss / 2**20:.0f} MiB", file=sys.stderr)

    row.run_benchtop = with_priority(benchtop(srv, "postgres", "tpcb-select-only", j,
                                              [f"--scale={args.scale}", "--connections", str(n), "--report-interval=1"],
                                              port=pgb_port, check=check), "normal")
    return row


def build_rows(srv: Servers, args: argparse.Namespace) -> list[Row]:
    t = args.threads
    tables = ["--tables=4", f"--table-size={args.table_size}"]
    rows: list[Row] = []
    for engine, label in (("mysql", "MariaDB"), ("pgsql", "PostgreSQL")):
        bt_engine = "mysql" if engine == "mysql" else "postgres"
        for wl in OLTP:
            rows.append(Row(f"{wl} ({label})", "sysbench", sysbench(srv, engine, wl, t, tables),
                            benchtop(srv, bt_engine, wl, t, tables),
                            floor="point" if (engine, wl) == ("pgsql", "oltp_point_select") else ""))
    scale = [f"--scale={args.scale}"]
    rows.append(Row("tpcb-select-only (PostgreSQL)", "pgbench", pgbench(srv, ["-S"], t),
                    benchtop(srv, "postgres", "tpcb-select-only", t, scale)))
    rows.append(Row("tpcb (PostgreSQL)", "pgbench", pgbench(srv, [], t), benchtop(srv, "postgres", "tpcb", t, scale)))
    if args.sysbench_tpcc:
        tpcc = ["--tables=1", f"--scale={args.tpcc_scale}"]
        lua = str(Path(args.sysbench_tpcc).resolve() / "tpcc.lua")
        rows.append(Row("tpcc (MariaDB)", "sysbench-tpcc",
                        sysbench(srv, "mysql", lua, t, [*tpcc, "--report-interval=0"], cwd=args.sysbench_tpcc),
                        benchtop(srv, "mysql", "tpcc", t, tpcc)))
    if args.many_threads:
        n = args.many_threads
        rows.append(Row(f"oltp_read_write@{n} (MariaDB)", "sysbench", sysbench(srv, "mysql", "oltp_read_write", n, tables),
                        benchtop(srv, "mysql", "oltp_read_write", n, tables)))
    rows = with_setups(rows, args.setups)
    if args.connections:
        rows += many_connection_rows(srv, args, tables)
    if args.only:
        rows = [r for r in rows if any(o in r.name for o in args.only)]
    return rows


def cpu_per_txn(rs: list[Result]) -> float:
    n = sum(r.transactions for r in rs)
    return sum(r.cpu_s for r in rs) / n * 1e6 if n else float("nan")


def per_txn(rs: list[Result], attr: str) -> float:
    n = sum(r.transactions for r in rs)
    return sum(getattr(r, attr) for r in rs) / n if n else float("nan")


def readings_line(rs: list[Result], seconds: int) -> str:
    """benchtop's /proc readings of the server's processes over its runs of a
    row: their share of its CPU in the measured windows, and their CPU per
    second of run (one reading a second)."""
    got = [r for r in rs if r.readings_s is not None and r.window_cpu_s]
    if not got:
        return "not reported (no local server process found)"
    spent = sum(r.readings_s or 0.0 for r in got)
    share = spent / sum(r.window_cpu_s or 0.0 for r in got)
    return f"{100 * share:4.1f}% of benchtop's CPU ({1000 * spent / (len(got) * seconds):.1f} ms per second)"


def report(rows: list[Row], args: argparse.Namespace) -> int:
    print(f"\n{args.threads} threads (oltp_read_write@N: N), {args.time} s per run, {args.rounds} round(s), "
          f"alternating; client CPU = user+sys of the client and its children; cs = context switches; "
          f"sc = system calls (strace -c -f, {args.strace_time} s pass)")
    w = max([34] + [len(r.name) for r in rows])
    head = (f"{'workload':<{w}} {'peer':<13} {'peer tps':>10} {'bt tps':>10} {'TPS x':>6} {'peer us/tx':>10} "
            f"{'bt us/tx':>9} {'CPU x':>6} {'peer cs/tx':>10} {'bt cs/tx':>8} {'peer sc/tx':>10} {'bt sc/tx':>8}  verdict")
    print(head)
    failed = 0
    for r in rows:
        if not r.peer_runs or not r.bt_runs:
            continue
        ptps = statistics.fmean(x.tps for x in r.peer_runs)
        btps = statistics.fmean(x.tps for x in r.bt_runs)
        pcpu, bcpu = cpu_per_txn(r.peer_runs), cpu_per_txn(r.bt_runs)
        tps_x, cpu_x = btps / ptps, bcpu / pcpu
        limit = r.cpu_limit if r.cpu_limit is not None else CPU_TARGET[r.peer]
        ok = tps_x >= TPS_TARGET and cpu_x <= limit and all(r.served_ok)
        failed += not ok
        sc = (f"{r.peer_sc:>10.1f} {r.bt_sc:>8.1f}" if r.peer_sc is not None and r.bt_sc is not None
              else f"{'-':>10} {'-':>8}")
        why = [] if ok else ([f"TPS < {TPS_TARGET:.2f}x"] if tps_x < TPS_TARGET else []) + (
            [f"CPU > {limit:.2f}x"] if cpu_x > limit else []) + (
            ["a connection unserved or RSS > 1 GiB"] if not all(r.served_ok) else [])
        print(f"{r.name:<{w}} {r.peer:<13} {ptps:>10.1f} {btps:>10.1f} {tps_x:>6.3f} {pcpu:>10.1f} {bcpu:>9.1f} "
              f"{cpu_x:>6.3f} {per_txn(r.peer_runs, 'switches'):>10.2f} {per_txn(r.bt_runs, 'switches'):>8.2f} {sc}  "
              + ("meets target" if ok else "MISSES: " + ", ".join(why)))
    print(f"\ntargets: TPS >= {TPS_TARGET:.2f}x the peer; client CPU/txn <= 0.85x sysbench, <= 0.95x pgbench "
          f"[auto], <= 0.90x pgbench [normal]/[idle], <= {CPU_TARGET_MANY:.2f}x on connections > threads. "
          f"{len(rows) - failed} of {len(rows)} rows meet them.\n"
          "[auto]: benchtop's default priority (SCHED_IDLE beside a local server), the peer normal: true for this "
          "machine only; [normal]: both normal, as against a remote server; [idle]: both SCHED_IDLE.")
    shown = [r for r in rows if r.readings and r.bt_runs]
    if shown:
        print("\nserver-process readings (benchtop's pass over /proc each second for the server's CPU and the "
              "verdict, timed by its own thread CPU), in the measured windows:")
        for r in shown:
            print(f"  {r.name:<{w}} {readings_line(r.bt_runs, args.time)}")
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=20, help="seconds per timed run")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (the peers' own figures move by up to 30%% between rounds here)")
    ap.add_argument("--many-threads", type=int, default=256, help="threads of the many-connections row (0: skip it)")
    ap.add_argument("--table-size", type=int, default=100000, help="rows per sysbench table (4 tables)")
    ap.add_argument("--scale", type=int, default=10, help="pgbench scale")
    ap.add_argument("--sysbench-tpcc", metavar="DIR", help="a checkout of Percona-Lab/sysbench-tpcc (adds the tpcc row)")
    ap.add_argument("--tpcc-scale", type=int, default=1, help="TPC-C warehouses")
    ap.add_argument("--no-strace", dest="strace", action="store_false", help="skip the system-call pass")
    ap.add_argument("--strace-time", type=int, default=10, help="seconds per run of the system-call pass")
    ap.add_argument("--perf", action="store_true",
                    help="profile both clients on the row with the worst CPU ratio (perf record, by library)")
    ap.add_argument("--floor", action="store_true",
                    help="also run bench/roundtrip_floor.c (a minimal C client) beside the PostgreSQL point select "
                         "and the many-connections select-only rows")
    ap.add_argument("--mysql-port", type=int, help="use this running MariaDB instead of a private one")
    ap.add_argument("--pgsql-port", type=int, help="use this running PostgreSQL instead of a private one")
    ap.add_argument("--database", default=DATABASE, help=f"database on running servers (user {USER})")
    ap.add_argument("--only", action="append", default=[], help="run only rows whose name contains this (repeatable)")
    ap.add_argument("--setups", type=lambda v: [s for s in v.split(",") if s], default=list(SETUPS),
                    help="priority setups per row, of auto,normal,idle (default all three)")
    ap.add_argument("--connections", type=int, default=256,
                    help="connections of the connections > threads rows, on --threads (0: skip them)")
    ap.add_argument("--pgbouncer-connections", type=int, default=10000,
                    help="connections through a private PgBouncer, on --threads (0: skip the row)")
    args = ap.parse_args()
    if any(s not in SETUPS for s in args.setups):
        raise SystemExit(f"--setups takes {','.join(SETUPS)}")
    if args.sysbench_tpcc and not (Path(args.sysbench_tpcc) / "tpcc.lua").is_file():
        raise SystemExit(f"--sysbench-tpcc {args.sysbench_tpcc}: no tpcc.lua there "
                         "(git clone https://github.com/Percona-Lab/sysbench-tpcc)")
    for tool in ("sysbench", "pgbench") + (("strace",) if args.strace else ()) + (("perf",) if args.perf else ()):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (apt-get install sysbench postgresql-contrib strace "
                             "linux-perf)")
    # benchtop's modules as an install has them, compiled (pip install . does;
    # an editable checkout under PYTHONDONTWRITEBYTECODE would compile them on every run)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "benchtop")], check=True,
                   stdout=subprocess.DEVNULL)
    root = Path(tempfile.mkdtemp(prefix="benchtop-vs-peers-"))
    os.chmod(root, 0o755)
    own: list[LocalMariaDB | LocalPostgres | LocalPgBouncer] = []
    try:
        if args.mysql_port is None:
            own.append(LocalMariaDB(root, free_port()))
        if args.pgsql_port is None:
            own.append(LocalPostgres(root, free_port()))
        for s in own:
            s.start()
        pgb = None
        if args.pgbouncer_connections:
            pg_port = args.pgsql_port or next(s.port for s in own if s.name == "postgresql")
            pgb = LocalPgBouncer(root, free_port(), pg_port)
            pgb.start()
            own.append(pgb)
            raise_client_limit(pgb.port, args.pgbouncer_connections)
        ports = {s.name: s.port for s in own}
        srv = Servers(args.mysql_port or ports.get("mariadb", 0), args.pgsql_port or ports.get("postgresql", 0),
                      args.database if (args.mysql_port or args.pgsql_port) else DATABASE)
        if not srv.my_port or not srv.pg_port:
            raise SystemExit(f"private server names changed: {sorted(ports)}")
        rows = build_rows(srv, args)
        if pgb is not None and (not args.only or any(o in "pgbouncer" for o in args.only)):
            rows.append(pgbouncer_row(srv, args, pgb.port))
        if not rows:
            raise SystemExit("--only matched no row")
        floors = floor_clients(srv, args, rows, root) if args.floor else {}
        t0 = time.monotonic()
        prepare(srv, args, ["--tables=4", f"--table-size={args.table_size}"],
                need_pg=any("PostgreSQL" in r.name or r.peer == "pgbench" for r in rows), need_tpcc=any(r.peer == "sysbench-tpcc" for r in rows))
        print(f"prepared in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        for rnd in range(args.rounds):
            for r in rows:
                sides = [(r.run_peer, r.peer_runs), (r.run_benchtop, r.bt_runs)]
                for run, into in (sides if rnd % 2 == 0 else sides[::-1]):
                    into.append(run(args.time, ""))
                print(f"round {rnd + 1}: {r.name}: peer {r.peer_runs[-1].tps:.1f} tps, "
                      f"benchtop {r.bt_runs[-1].tps:.1f} tps", file=sys.stderr)
                for _, run_floor, floor_runs in floors.get(r.name, []):
                    floor_runs.append(run_floor(args.time, ""))
        if args.strace:
            for r in rows:
                p = r.run_peer(args.strace_time, "strace")
                b = r.run_benchtop(args.strace_time, "strace")
                r.peer_sc = p.syscalls / p.transactions if p.syscalls and p.transactions else None
                r.bt_sc = b.syscalls / b.transactions if b.syscalls and b.transactions else None
        if args.perf:
            measured = [r for r in rows if r.peer_runs and r.bt_runs]
            worst = max(measured, key=lambda r: cpu_per_txn(r.bt_runs) / cpu_per_txn(r.peer_runs))
            profiles = [(worst.peer, worst.run_peer(args.time, "perf").profile),
                        ("benchtop", worst.run_benchtop(args.time, "perf").profile)]
    finally:
        for s in own:
            try:
                s.stop()
            except Exception as exc:  # noqa: BLE001 - report and go on cleaning up
                print(f"warning: stopping {s.name}: {exc}", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)
    rc = report(rows, args)
    for row_name, variants in floors.items():
        peer = next(r for r in rows if r.name == row_name)
        print(f"\nthe floor beside {row_name} (bench/roundtrip_floor.c, a minimal C client, the same rounds; "
              f"CPU of the whole process; x {peer.peer} in those rounds):")
        for label, _, runs in variants:
            ratio = cpu_per_txn(runs) / cpu_per_txn(peer.peer_runs) if runs and peer.peer_runs else float("nan")
            print(f"  {label:<44} {statistics.fmean(x.tps for x in runs):>10.1f} tps {cpu_per_txn(runs):>6.1f} us/tx "
                  f"x{ratio:.2f} {per_txn(runs, 'switches'):>5.2f} cs/tx")
    if args.perf:
        print(f"\nwhere the client's CPU goes on the slowest row, {worst.name} (perf record, share of samples):")
        for tool, profile in profiles:
            print(f"  {tool:<13} {profile}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
