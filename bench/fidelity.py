#!/usr/bin/env python3
"""benchtop beside the tools users compare it with (issue 15), measured, not
asserted by tests.

    python bench/fidelity.py [--time 10] [--threads 2] [--rounds 3] [--only pgbench|fileio]

pgbench scripts: starts a private PostgreSQL (the test harness's code, a free
loopback port), `pgbench -i -s SCALE`, then runs pgbench's tpcb-like written as
a file, a Zipfian select and a \\gset read-modify-write with `pgbench -M
prepared` and with `benchtop --pgbench-script`, alternating, same clients and
time.  fileio: sysbench's files in a temporary folder, sysbench fileio and
`benchtop --engine fileio` on them under `strace -c -f`: fsyncs per
read/write and the rates, for rndrw, seqwr and rndrw with async IO.
Prints the median of the rounds and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.local import DATABASE, PASSWORD, USER, LocalPostgres, free_port  # noqa: E402

SCRIPTS = {
    "tpcb-like": (ROOT / "workloads" / "examples" / "pgbench_tpcb_like.sql").read_text(),
    "zipfian-select": "\\set aid random_zipfian(1, 100000 * :scale, 1.07)\n"
                      "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    "gset": "\\set aid random(1, 100000 * :scale)\n"
            "SELECT abalance AS before FROM pgbench_accounts WHERE aid = :aid \\gset\n"
            "\\set after :before + random(-100, 100)\n"
            "UPDATE pgbench_accounts SET abalance = :after WHERE aid = :aid;\n",
}
FILEIO_RUNS = {
    "rndrw": ["--file-test-mode=rndrw"],
    "seqwr": ["--file-test-mode=seqwr"],
    "rndrw async": ["--file-test-mode=rndrw", "--file-io-mode=async"],
}
BENCHTOP = [sys.executable, "-m", "benchtop"]


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed:\n{res.stdout[-1500:]}\n{res.stderr[-1500:]}")
    return res.stdout


def pgbench_scripts(args: argparse.Namespace, folder: Path) -> list[str]:
    pg = LocalPostgres(folder, free_port())
    env = {"PGPASSWORD": PASSWORD}
    tps: dict[tuple[str, str], list[float]] = {}
    try:
        pg.start()
        pg.wait_ready()
        run(["pgbench", "-i", "-q", "-s", str(args.scale), "-h", "127.0.0.1", "-p", str(pg.port), "-U", USER,
             DATABASE], env)
        for name, text in SCRIPTS.items():
            (folder / f"{name}.sql").write_text(text)
        dsn = f"postgresql://{USER}@127.0.0.1:{pg.port}/{DATABASE}"
        for _ in range(args.rounds):
            for name in SCRIPTS:
                script = str(folder / f"{name}.sql")
                out = run(["pgbench", "-n", "-M", "prepared", "-f", script, "-D", f"scale={args.scale}",
                           "-c", str(args.threads), "-j", str(args.threads), "-T", str(args.time),
                           "-h", "127.0.0.1", "-p", str(pg.port), "-U", USER, DATABASE], env)
                tps.setdefault((name, "pgbench"), []).append(float(re.search(r"tps = ([\d.]+)", out).group(1)))
                out = run([*BENCHTOP, "--headless", "--json", "--engine", "postgres", "--dsn", dsn,
                           "--pgbench-script", script, "-D", f"scale={args.scale}", "--threads", str(args.threads),
                           "--time", str(args.time), "--report-interval", "0", "--no-monitor"], env)
                tps.setdefault((name, "benchtop"), []).append(json.loads(out.strip().splitlines()[-1])["tps"])
    finally:
        pg.stop()
    lines = [f"pgbench scripts: scale {args.scale}, {args.threads} clients, {args.time} s, "
             f"{args.rounds} alternating rounds (median tps; pgbench -M prepared)"]
    for name in SCRIPTS:
        p, b = statistics.median(tps[(name, "pgbench")]), statistics.median(tps[(name, "benchtop")])
        lines.append(f"  {name:<16} pgbench {p:>9.1f}  benchtop {b:>9.1f}  x{b / p:.3f}   "
                     f"(rounds: pgbench {', '.join(f'{v:.0f}' for v in tps[(name, 'pgbench')])}; "
                     f"benchtop {', '.join(f'{v:.0f}' for v in tps[(name, 'benchtop')])})")
    return lines


def strace_counts(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1].isidentifier() and parts[3].isdigit():
            out[parts[-1]] = int(parts[3])
    return out


def fileio(args: argparse.Namespace, folder: Path) -> list[str]:
    files = folder / "files"
    files.mkdir()
    size = ["--file-total-size=128M", "--file-num=16"]
    run(["sysbench", "fileio", *size, "prepare"], cwd=files)
    lines = [f"fileio: 16 files, 128M, {args.threads} thread(s), {args.time} s, under strace -c -f"]
    for name, opts in FILEIO_RUNS.items():
        row = {}
        for tool in ("sysbench", "benchtop"):
            trace = folder / f"{tool}.strace"
            if tool == "sysbench":
                cmd = ["sysbench", "fileio", *size, *opts, f"--threads={args.threads}", f"--time={args.time}", "run"]
            else:
                # sysbench's --name=value as benchtop's --name value
                same = [part for o in size + opts for part in o.split("=", 1)]
                cmd = [*BENCHTOP, "--headless", "--engine", "fileio", "--dir", str(files), *same,
                       "--threads", str(args.threads), "--time", str(args.time), "--report-interval", "0"]
            out = run(["strace", "-f", "-c", "-o", str(trace), *cmd], cwd=files)
            calls = strace_counts(trace)
            rw = sum(calls.get(c, 0) for c in ("pread64", "pwrite64", "read", "write", "preadv", "pwritev"))
            sync = calls.get("fsync", 0) + calls.get("fdatasync", 0)
            rates = {k: float(v) for k, v in re.findall(r"(reads|writes|fsyncs)/s:\s+([\d.]+)", out)}
            row[tool] = (sync / rw if rw else float("nan"), rates)
        (sr, srates), (br, brates) = row["sysbench"], row["benchtop"]
        fmt = "reads/s {reads:.0f} writes/s {writes:.0f} fsyncs/s {fsyncs:.0f}"

        def counted(r: dict[str, float]) -> float:
            return r["fsyncs"] / max(r["reads"] + r["writes"], 1e-9)

        # async IO goes through io_submit / io_uring_enter: only the tools' own counters tell
        traced = f"syscalls sysbench {sr:.3f} benchtop {br:.3f}; " if "async" not in name else ""
        lines.append(f"  {name:<12} fsyncs per read/write: {traced}"
                     f"counters sysbench {counted(srates):.3f} benchtop {counted(brates):.3f}")
        lines.append(f"  {'':<12} sysbench {fmt.format(**srates)}; benchtop {fmt.format(**brates)}")
    run(["sysbench", "fileio", *size, "cleanup"], cwd=files)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--only", choices=("pgbench", "fileio"))
    args = ap.parse_args()
    for tool in ("pgbench", "sysbench", "strace"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (apt-get install postgresql-client sysbench strace)")
    folder = Path(tempfile.mkdtemp(prefix="benchtop-fidelity-"))
    os.chmod(folder, 0o755)
    out: list[str] = []
    try:
        if args.only in (None, "fileio"):
            out += fileio(args, folder)
        if args.only in (None, "pgbench"):
            out += pgbench_scripts(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
