#!/usr/bin/env python3
"""benchtop against sysbench and pgbench on the same private servers.

    python bench/vs_peers.py [--time 20] [--threads 4] [--rounds 2] [--strace]

Starts a private MariaDB and PostgreSQL (the test harness's code, free
loopback ports, a temporary folder), prepares the same tables, and runs, in
one go and alternating, the same work with the same threads and duration:
sysbench oltp_point_select / oltp_read_write against MariaDB, pgbench -S and
TPC-B (-M prepared) against PostgreSQL, and benchtop's equivalents.  Prints
TPS, p99 and client CPU (user+sys) per transaction for each, and the ratios.
With --strace, also system calls per transaction of each client (strace -c -f).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.local import LocalMariaDB, LocalPostgres, free_port  # noqa: E402
from tests.fixtures.local import DATABASE, PASSWORD, USER  # noqa: E402


@dataclass
class Result:
    tool: str
    workload: str
    tps: float
    p99_ms: float
    cpu_s: float
    transactions: int
    syscalls: int | None = None

    @property
    def cpu_us_per_txn(self) -> float:
        return self.cpu_s / self.transactions * 1e6 if self.transactions else float("nan")


def timed(cmd: list[str], env: dict[str, str] | None = None, strace: bool = False) -> tuple[str, float, int | None]:
    """Run a client; return its output, its CPU seconds (user+sys, children
    included) and, with strace, its system call count."""
    syscalls = None
    if strace:
        fd, path = tempfile.mkstemp(suffix=".strace")
        os.close(fd)
        cmd = ["strace", "-c", "-f", "-o", path, *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}... failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    if strace:
        text = Path(path).read_text()
        Path(path).unlink()
        m = re.search(r"^\s*100\.00\s+\S+\s+\S+\s+(\d+)", text, re.M) or re.search(r"total\s*$", text, re.M)
        syscalls = int(m.group(1)) if m and m.groups() else None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res.stdout, cpu, syscalls


def sysbench(port: int, workload: str, threads: int, seconds: int, strace: bool) -> Result:
    out, cpu, sc = timed(["sysbench", workload, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={port}",
                          f"--mysql-user={USER}", f"--mysql-password={PASSWORD}", f"--mysql-db={DATABASE}",
                          "--tables=4", "--table-size=100000", f"--threads={threads}", f"--time={seconds}",
                          "--percentile=99", "run"], strace=strace)
    tx = int(re.search(r"transactions:\s+(\d+)", out).group(1))
    tps = float(re.search(r"transactions:\s+\d+\s+\((\S+) per sec", out).group(1))
    p99 = float(re.search(r"99th percentile:\s+(\S+)", out).group(1))
    return Result("sysbench", workload, tps, p99, cpu, tx, sc)


def benchtop(engine: str, port: int, workload: str, threads: int, seconds: int, strace: bool,
             extra: list[str]) -> Result:
    scheme = "mysql" if engine == "mysql" else "postgresql"
    env = {"MYSQL_PWD": PASSWORD} if engine == "mysql" else {"PGPASSWORD": PASSWORD}
    exe = [sys.executable, "-m", "benchtop"]
    out, cpu, sc = timed([*exe, "--headless", "--json", "--engine", engine, "--dsn",
                          f"{scheme}://{USER}@127.0.0.1:{port}/{DATABASE}", "--workload", workload,
                          f"--threads={threads}", f"--time={seconds}", "--percentile=99", "--report-interval=0",
                          "--no-monitor", *extra], env=env, strace=strace)
    s = json.loads(out.strip().splitlines()[-1])
    return Result("benchtop", workload, s["tps"], s["latency_ms"]["p99"], cpu, s["transactions"], sc)


def pgbench(port: int, script: list[str], name: str, threads: int, seconds: int, strace: bool) -> Result:
    with tempfile.TemporaryDirectory() as d:
        prefix = Path(d) / "pgb"
        out, cpu, sc = timed(["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", USER, "-M", "prepared",
                              "-c", str(threads), "-j", str(threads), "-T", str(seconds), "-n", "-l",
                              f"--log-prefix={prefix}", *script, DATABASE], env={"PGPASSWORD": PASSWORD},
                             strace=strace)
        lat = []
        for f in Path(d).glob("pgb*"):
            for line in f.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3:
                    lat.append(int(parts[2]))
    lat.sort()
    tx = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    tps = float(re.search(r"tps = (\S+)", out).group(1))
    p99 = lat[max(0, int(len(lat) * 0.99) - 1)] / 1000 if lat else float("nan")
    return Result("pgbench", name, tps, p99, cpu, tx, sc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=20)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--scale", type=int, default=10, help="pgbench scale")
    ap.add_argument("--only", action="append", default=[],
                    help="run only these workloads (oltp_point_select, oltp_read_write, tpcb-select-only, tpcb)")
    args = ap.parse_args()
    for tool in ("sysbench", "pgbench") + (("strace",) if args.strace else ()):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (apt-get install sysbench postgresql-contrib strace)")
    root = Path(tempfile.mkdtemp(prefix="benchtop-vs-peers-"))
    os.chmod(root, 0o755)
    my = LocalMariaDB(root, free_port())
    pg = LocalPostgres(root, free_port())
    results: list[Result] = []
    try:
        my.start()
        pg.start()
        my.wait_ready()
        pg.wait_ready()
        env_pg = {**os.environ, "PGPASSWORD": PASSWORD}
        subprocess.run(["sysbench", "oltp_read_write", "--db-driver=mysql", "--mysql-host=127.0.0.1",
                        f"--mysql-port={my.port}", f"--mysql-user={USER}", f"--mysql-password={PASSWORD}",
                        f"--mysql-db={DATABASE}", "--tables=4", "--table-size=100000", "--threads=4", "prepare"],
                       check=True, capture_output=True)
        subprocess.run(["pgbench", "-i", "-q", "-s", str(args.scale), "-h", "127.0.0.1", "-p", str(pg.port),
                        "-U", USER, DATABASE], check=True, capture_output=True, env=env_pg)
        my_extra = ["--tables=4", "--table-size=100000"]
        pg_extra = [f"--scale={args.scale}"]
        def wanted(wl: str) -> bool:
            return not args.only or wl in args.only

        for _ in range(args.rounds):
            for wl in ("oltp_point_select", "oltp_read_write"):
                if wanted(wl):
                    results.append(sysbench(my.port, wl, args.threads, args.time, args.strace))
                    results.append(benchtop("mysql", my.port, wl, args.threads, args.time, args.strace, my_extra))
            for wl, script in (("tpcb-select-only", ["-S"]), ("tpcb", [])):
                if wanted(wl):
                    results.append(pgbench(pg.port, script, wl, args.threads, args.time, args.strace))
                    results.append(benchtop("postgresql", pg.port, wl, args.threads, args.time, args.strace,
                                            pg_extra))
    finally:
        for srv in (my, pg):
            try:
                srv.stop()
            except Exception as exc:  # noqa: BLE001 - report and go on cleaning up
                print(f"warning: stopping {srv.name}: {exc}", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)

    print(f"\n{args.threads} threads, {args.time} s per run, {args.rounds} round(s), alternating; client CPU = user+sys")
    print(f"{'workload':<20} {'tool':<9} {'tps':>10} {'p99 ms':>8} {'CPU us/txn':>11}" + ("  syscalls/txn" if args.strace else ""))
    by: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        by.setdefault((r.workload, r.tool), []).append(r)
    for (wl, tool), rs in by.items():
        tps = sum(r.tps for r in rs) / len(rs)
        p99 = sum(r.p99_ms for r in rs) / len(rs)
        cpu = sum(r.cpu_s for r in rs) / sum(r.transactions for r in rs) * 1e6
        line = f"{wl:<20} {tool:<9} {tps:>10.1f} {p99:>8.2f} {cpu:>11.1f}"
        if args.strace:
            sc = [r.syscalls / r.transactions for r in rs if r.syscalls]
            line += f"  {sum(sc) / len(sc):>12.1f}" if sc else "  n/a"
        print(line)
    print("\nratios (benchtop / peer):")
    for wl, peer in (("oltp_point_select", "sysbench"), ("oltp_read_write", "sysbench"),
                     ("tpcb-select-only", "pgbench"), ("tpcb", "pgbench")):
        a, b = by.get((wl, "benchtop")), by.get((wl, peer))
        if not a or not b:
            continue
        tps_ratio = (sum(r.tps for r in a) / len(a)) / (sum(r.tps for r in b) / len(b))
        cpu_a = sum(r.cpu_s for r in a) / sum(r.transactions for r in a)
        cpu_b = sum(r.cpu_s for r in b) / sum(r.transactions for r in b)
        print(f"  {wl:<20} TPS x{tps_ratio:.3f}   CPU per transaction x{cpu_a / cpu_b:.3f}   (vs {peer})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
