#!/usr/bin/env python3
"""How closely a captured twin runs like its production (issue 45), judged
by the servers' own statement statistics, not by benchtop's.

    python bench/twin_fidelity.py [--rate 100] [--time 20] [--rounds 3] [--threads 4]
        [--cases my-text,my-ps,pg-simple,pg-prepared] [--twin-priority auto|normal|idle] [--out DIR]

Production is played by peers: sysbench oltp_read_write on the private MariaDB
(127.0.0.1:13306) with --db-ps-mode=disable and with prepared statements, and
pgbench's tpcb-like on the private PostgreSQL (15432) with -M simple and -M
prepared, each at a fixed rate, in a database of its own (twinbench; made
beforehand as root/postgres, granted to sbtest, pg_stat_statements created in
it).  For each case: `benchtop capture` for TIME seconds while production runs,
`benchtop workload from-capture`, the twin run at the captured rate while a
second capture watches it, and `benchtop report` of the two captures; then
production and twin alternate, a window each, for the rest of --rounds (each
PostgreSQL window opens as pgbench's own runs do: branches and tellers
vacuumed, then a checkpoint).  The verdict compares root's (postgres')
readings of performance_schema's digests (pg_stat_statements) over the
windows, as deltas summed over the rounds (nothing is reset: others use
these servers): each statement's share of executions
(target: within 2 points), rows per execution (10%) and mean time (25%), and
the rate (the peer's own tps against the twin's, 5%).  On MariaDB the
statement history consumers (events_statements_current and _history_long)
are on for the MariaDB cases, as a server's owner turns them on for a
capture (the capture only reads them), and put back as they were after.  Prints a table per case
and the summary; writes DIR/fidelity.json and each case's files.
--twin-priority is the twin's --worker-priority (auto: SCHED_IDLE beside these
local servers, where a worker holding a row lock waits for CPU longer than the
peers, which run at normal priority).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchtop.capture.model import Capture, Statement  # noqa: E402
from benchtop.capture.normalize import statement_kind, with_question_marks  # noqa: E402
from benchtop.report.capture_compare import pairs  # noqa: E402

DB = "twinbench"
MY_ROOT = ["mariadb", f"--defaults-file={os.environ.get('BENCH_DIR', '/tmp/benchpeers')}/mariadb/my.cnf"]
PG_SUPER = ["psql", "-X", "-q", "-h", "127.0.0.1", "-p", "15432", "-U", "postgres", "-d", DB, "-tA",
            "-F", "\t"]
MY_DSN = f"mysql://sbtest@127.0.0.1:13306/{DB}"
PG_DSN = f"postgresql://sbtest@127.0.0.1:15432/{DB}"
SB = ["--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=13306", "--mysql-user=sbtest",
      "--mysql-password=sbtest", f"--mysql-db={DB}", "--tables=2", "--table-size=10000"]
PGB = ["-h", "127.0.0.1", "-p", "15432", "-U", "sbtest", DB]
ENV = {**os.environ, "MYSQL_PWD": "sbtest", "PGPASSWORD": "sbtest"}
# statements of the drivers and of whoever reads the statistics, not of the workload
NOISE = re.compile(r"^\s*(set|show)\b|@@|_schema|pg_|benchtop-capture|benchtop-monitor", re.I)
# production starts this long before its capture, and ends this long after it
LEAD_S = 3.0
# the issue's targets
SHARE_PTS, ROWS_PCT, RATE_PCT, MEAN_PCT = 2.0, 10.0, 5.0, 25.0
# MariaDB's digests hold no execution of a prepared statement (binary protocol)
EXECUTES = ("SELECT COUNT_STAR FROM performance_schema.events_statements_summary_global_by_event_name "
            "WHERE EVENT_NAME = 'statement/com/Execute'")


@dataclass(frozen=True, slots=True)
class Row:
    text: str
    prod_share: float
    twin_share: float
    prod_rows: float | None
    twin_rows: float | None
    prod_ms: float | None
    twin_ms: float | None


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    peer: str
    prod_tps: float
    twin_tps: float | None
    rows: tuple[Row, ...]
    note: str = ""
    # the host's highest 1-minute load average at the end of production's windows and of the twin's (2 cores, shared)
    load: tuple[float, float] = (0.0, 0.0)

    def worst(self) -> dict[str, float | None]:
        both = [r for r in self.rows if r.prod_rows is not None and r.twin_rows is not None]
        return {
            "share_pts": max((abs(r.twin_share - r.prod_share) for r in self.rows), default=None),
            "rows_pct": max((_pct(r.prod_rows, r.twin_rows) for r in both if r.prod_rows), default=None),
            "mean_pct": max((_pct(r.prod_ms, r.twin_ms) for r in both if r.prod_ms), default=None),
            "rate_pct": _pct(self.prod_tps, self.twin_tps) if self.twin_tps is not None else None,
        }


def _pct(a: float | None, b: float | None) -> float:
    return abs(100.0 * ((b or 0.0) / a - 1)) if a else 0.0


def sh(cmd: list[str], check: bool = True) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if check and res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed: {(res.stderr or res.stdout).strip()[-600:]}")
    return res.stdout


def benchtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchtop", *args], capture_output=True, text=True, env=ENV)


def my_totals() -> dict[str, tuple[str, int, float, int]]:
    """Root's reading of the digests of this database: text, calls, total ms, rows sent + affected."""
    out = {}
    q = ("SELECT DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, SUM_ROWS_SENT + SUM_ROWS_AFFECTED FROM "
         f"performance_schema.events_statements_summary_by_digest WHERE SCHEMA_NAME = '{DB}'")
    for line in sh([*MY_ROOT, "-NBe", q]).splitlines():
        digest, text, calls, ps, rows = line.split("\t")
        out[digest] = (text, int(calls), int(ps) / 1e9, int(rows))
    return out


def pg_totals() -> dict[str, tuple[str, int, float, int]]:
    out = {}
    q = ("SELECT s.userid || '/' || s.queryid, replace(replace(s.query, E'\\n', ' '), E'\\t', ' '), s.calls, "
         f"s.total_exec_time, s.rows FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
         f"WHERE d.datname = '{DB}'")
    for line in sh([*PG_SUPER, "-c", q]).splitlines():
        key, text, calls, ms, rows = line.split("\t")
        out[key] = (text, int(calls), float(ms), int(rows))
    return out


def delta(before: dict[str, tuple[str, int, float, int]], after: dict[str, tuple[str, int, float, int]],
          window_s: float) -> Capture:
    """The statements run between two readings, as a Capture (so the report's matching applies)."""
    stmts = []
    for key, (text, calls, ms, rows) in after.items():
        _, c0, ms0, r0 = before.get(key, (text, 0, 0.0, 0))
        if calls < c0:
            c0, ms0, r0 = 0, 0.0, 0
        if calls > c0 and not NOISE.search(text):
            stmts.append(Statement(text, statement_kind(text), calls - c0, ms - ms0, rows - r0))
    return Capture("-", "-", "-", 0.0, window_s, 0, 0, True, "-", tuple(stmts))


HISTORY = ("events_statements_current", "events_statements_history_long")
SLOW_ENTRY = re.compile(r"# Thread_id: \d+\s+Schema: (\S*).*?\n# Query_time: ([\d.]+).*?Rows_sent: (\d+).*?\n"
                        r"# Rows_affected: (\d+)[^\n]*\n(.*?)(?=\n# (?:User@Host|Time):|\Z)", re.S)


@contextlib.contextmanager
def slow_log(path: Path) -> Iterator[None]:
    """MariaDB's slow log of every statement (long_query_time 0) to `path`:
    the truth for prepared statements, which no digest counts (it logs each
    execution with its values in place).  Connections keep the long_query_time
    they opened with, so it is on before the load starts; as it was after."""
    names = ("slow_query_log", "long_query_time", "slow_query_log_file")
    was = sh([*MY_ROOT, "-NBe", "SELECT " + ", ".join(f"@@GLOBAL.{n}" for n in names)]).strip().split("\t")
    sh([*MY_ROOT, "-NBe", f"SET GLOBAL slow_query_log_file = '{path}'; SET GLOBAL long_query_time = 0; "
                          "SET GLOBAL slow_query_log = 1"])
    try:
        yield
    finally:
        sh([*MY_ROOT, "-NBe", f"SET GLOBAL slow_query_log = {was[0]}; SET GLOBAL long_query_time = {was[1]}; "
                              f"SET GLOBAL slow_query_log_file = '{was[2]}'"])


def slow_statements(path: Path, window_s: float) -> Capture:
    """The slow log's statements of this database, their values put back to `?`."""
    got: dict[str, list[float]] = {}
    for schema, secs, sent, affected, body in SLOW_ENTRY.findall(path.read_text(errors="replace")):
        lines = [ln for ln in body.strip().splitlines() if not re.match(r"(use |SET timestamp=)", ln)]
        # blanks as the twin's runnable text has them: none before a parenthesis
        sql = re.sub(r" \(", "(", " ".join(" ".join(lines).split()).rstrip(";"))
        if schema != DB or not sql or NOISE.search(sql):
            continue
        sql = with_question_marks(sql)
        acc = got.setdefault(sql, [0, 0.0, 0])
        acc[0] += 1
        acc[1] += float(secs) * 1000
        acc[2] += int(sent) + int(affected)
    stmts = tuple(Statement(t, statement_kind(t), int(c), ms, int(r)) for t, (c, ms, r) in got.items())
    return Capture("-", "-", "-", 0.0, window_s, 0, 0, False, "-", stmts)


@contextlib.contextmanager
def statement_history() -> Iterator[None]:
    """MariaDB's statement history on, for the capture to see values and each transaction's order; as it was after."""
    names = ", ".join(f"'{n}'" for n in HISTORY)
    was = dict(line.split("\t") for line in sh([*MY_ROOT, "-NBe", "SELECT NAME, ENABLED FROM "
                                                 f"performance_schema.setup_consumers WHERE NAME IN ({names})"]).splitlines())
    sh([*MY_ROOT, "-NBe", f"UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ({names})"])
    try:
        yield
    finally:
        for name, enabled in was.items():
            sh([*MY_ROOT, "-NBe", f"UPDATE performance_schema.setup_consumers SET ENABLED = '{enabled}' "
                                  f"WHERE NAME = '{name}'"])


def peer_tps(text: str) -> float:
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", text) or re.search(r"tps = ([\d.]+)", text)
    if not m:
        raise SystemExit(f"no tps in the peer's output: {text[-400:]}")
    return float(m.group(1))


def watched(engine: str, folder: Path, name: str, load: list[str], window_s: float,
            slow: bool = False) -> tuple[Capture, str, float]:
    """Run `load` for the window and its margins while `benchtop capture` and
    root read the server; the statements root saw (with `slow`, those of the
    slow log over a second run of `load`), the load's output and the wall time
    between root's readings."""
    if slow:
        _, out, window = watched(engine, folder, name, load, window_s)
        # the slow log also puts each execution's values in the processlist's text, which the capture reads: its
        # truth comes from a second run of the same load (a steady mix), the capture watching none of it
        path = (folder / f"{name}-slow.log").resolve()
        with slow_log(path):
            again = subprocess.run(load, capture_output=True, text=True, env=ENV)
        (folder / f"{name}-again.out.txt").write_text(again.stdout + again.stderr)
        if again.returncode != 0:
            raise SystemExit(f"{load[0]} ({name}, again with the slow log) failed: {again.stdout.strip()[-400:]}")
        return slow_statements(path, window), out, window
    proc = subprocess.Popen(load, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    time.sleep(LEAD_S)
    read = my_totals if engine == "mysql" else pg_totals
    before, t0 = read(), time.monotonic()
    dsn = ["--mysql", MY_DSN] if engine == "mysql" else ["--pgsql", PG_DSN]
    cap = benchtop("capture", *dsn, "--time", f"{window_s:g}", "--out", str(folder / name))
    after, window = read(), time.monotonic() - t0
    out, _ = proc.communicate()
    (folder / f"{name}.out.txt").write_text(out)
    if cap.returncode != 0:
        raise SystemExit(f"benchtop capture ({name}) failed: {cap.stderr.strip()[-400:]}")
    if proc.returncode != 0:
        raise SystemExit(f"{load[0]} ({name}) failed: {out.strip()[-400:]}")
    return delta(before, after, window), out, window


def settle(engine: str) -> None:
    """Each window starts from the same tables: pgbench's own start (unless -n:
    vacuum the branches and tellers, whose rows every transaction updates, so
    their dead versions pile up from zero) and a checkpoint, so a window opens
    with the same full-page writes to make, not wherever the last one left."""
    if engine == "postgresql":
        for q in ("VACUUM pgbench_branches", "VACUUM pgbench_tellers", "CHECKPOINT"):
            sh([*PG_SUPER, "-c", q])


def pooled(caps: list[Capture]) -> Capture:
    """Alternated windows as one: each statement's calls, time and rows summed over them."""
    acc: dict[str, list[float]] = {}
    for cap in caps:
        for st in cap.statements:
            a = acc.setdefault(st.text, [0, 0.0, 0])
            a[0] += st.calls
            a[1] += st.total_ms
            a[2] += st.rows
    stmts = tuple(Statement(t, statement_kind(t), int(c), ms, int(r)) for t, (c, ms, r) in acc.items())
    return Capture("-", "-", "-", 0.0, sum(c.window_s for c in caps), 0, 0, True, "-", stmts)


def run_case(name: str, engine: str, prod: Callable[[str], list[str]], peer: str, args: argparse.Namespace,
             folder: Path) -> Case:
    """Production, captured; its twin derived from that capture; then the two
    alternated, a window each, for --rounds rounds (the server's state drifts
    between windows: a commit's flush, autovacuum, the tables' dead rows;
    alternating spreads that drift over both), compared pooled."""
    folder = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    span = f"{args.time + 2 * LEAD_S:g}"
    slow = name == "my-ps"
    dsn = MY_DSN if engine == "mysql" else PG_DSN
    run = [sys.executable, "-m", "benchtop", "--headless", "--json", "--engine", "mysql" if engine == "mysql"
           else "postgres", "--dsn", dsn, "--workload", str(folder / "twin.toml"), "--threads", str(args.threads),
           "--time", span, "--worker-priority", args.twin_priority]
    seens, rans, prod_tps, twin_tps = [], [], [], []
    note = ""
    load = (0.0, 0.0)
    for r in range(args.rounds):
        tag = "" if r == 0 else str(r + 1)
        # the server-wide execute count only says, for the first window, what no digest held
        counted = engine == "mysql" and r == 0
        executes0 = int(sh([*MY_ROOT, "-NBe", EXECUTES]).strip() or 0) if counted else 0
        settle(engine)
        seen, out, _ = watched(engine, folder, "prod" + tag, prod(span), args.time, slow)
        prod_load = os.getloadavg()[0]
        executes = int(sh([*MY_ROOT, "-NBe", EXECUTES]).strip() or 0) - executes0 if counted else 0
        seens.append(seen)
        prod_tps.append(peer_tps(out))
        if r == 0:
            twin = benchtop("workload", "from-capture", str(folder / "prod"))
            if counted and not slow and executes > sum(s.calls for s in seen.statements):
                note = (f"MariaDB digests no prepared statement's execution: {executes} executions "
                        f"(statement/com/Execute, server-wide) in production's window, "
                        f"{sum(s.calls for s in seen.statements)} statements digested")
            if twin.returncode != 0 or not seen.statements:
                return Case(name, peer, prod_tps[0], None, (), (note + "; " if note else "") +
                            f"from-capture: {(twin.stderr or 'nothing digested').strip()}", (prod_load, 0.0))
            (folder / "twin.toml").write_text(twin.stdout)
        settle(engine)
        ran, out, _ = watched(engine, folder, "twin" + tag, run, args.time, slow)
        load = (max(load[0], prod_load), max(load[1], os.getloadavg()[0]))
        rans.append(ran)
        summaries = [json.loads(line) for line in out.splitlines() if '"summary"' in line]
        if summaries:
            twin_tps.append(float(summaries[-1]["tps"]))
    report = benchtop("report", str(folder / "prod"), str(folder / "twin"))
    (folder / "report.txt").write_text(report.stdout + report.stderr)
    rows = []
    for p in pairs(pooled(seens), pooled(rans)):
        a, b = p.first, p.second
        rows.append(Row(p.text, 100.0 * (a.share if a else 0.0), 100.0 * (b.share if b else 0.0),
                        a.rows if a else None, b.rows if b else None, a.mean_ms if a else None,
                        b.mean_ms if b else None))
    mean_tps = sum(prod_tps) / len(prod_tps)
    return Case(name, peer, mean_tps, sum(twin_tps) / len(twin_tps) if len(twin_tps) == len(rans) else None,
                tuple(rows), note, load)


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def case_text(c: Case) -> str:
    lines = [f"{c.name} ({c.peer}): production {c.prod_tps:.1f} tps, twin "
             f"{_num(c.twin_tps, '.1f')} tps" + (f" ({c.twin_tps / c.prod_tps - 1:+.1%})" if c.twin_tps else "")
             + f"; host load {c.load[0]:.1f}" + (f" and {c.load[1]:.1f}" if c.twin_tps is not None else "")]
    if c.note:
        lines.append(f"  note: {c.note}")
    if c.rows:
        lines.append(f"  {'share %':>14} {'pts':>5}  {'rows/exec':>15} {'diff':>5}  {'mean ms':>15} {'diff':>5}  "
                     "statement")
    for r in c.rows:
        both = r.prod_rows is not None and r.twin_rows is not None
        rows_d = f"{_pct(r.prod_rows, r.twin_rows):4.0f}%" if both and r.prod_rows else "    -"
        ms_d = f"{_pct(r.prod_ms, r.twin_ms):4.0f}%" if both and r.prod_ms else "    -"
        text = " ".join(r.text.split())
        lines.append(f"  {r.prod_share:6.1f} {r.twin_share:7.1f} {r.twin_share - r.prod_share:+5.1f}  "
                     f"{_num(r.prod_rows, '7.2f'):>7} {_num(r.twin_rows, '7.2f'):>7} {rows_d}  "
                     f"{_num(r.prod_ms, '7.3f'):>7} {_num(r.twin_ms, '7.3f'):>7} {ms_d}  {text[:64]}")
    return "\n".join(lines)


def summary_text(cases: list[Case]) -> str:
    lines = [f"{'case':<12} {'statements':>10} {'share pts':>10} {'rows %':>7} {'rate %':>7} {'mean %':>7}  "
             f"targets: {SHARE_PTS:g} pts, {ROWS_PCT:g}%, {RATE_PCT:g}%, {MEAN_PCT:g}%"]
    for c in cases:
        w = c.worst()
        met = [(v := w[k]) is not None and v <= lim for k, lim in
               (("share_pts", SHARE_PTS), ("rows_pct", ROWS_PCT), ("rate_pct", RATE_PCT), ("mean_pct", MEAN_PCT))]
        verdict = "all met" if all(met) else ("not measurable" if not c.rows else "missed: " + ", ".join(
            k for k, ok in zip(("share", "rows", "rate", "mean"), met, strict=True) if not ok))
        lines.append(f"{c.name:<12} {len(c.rows):>10} {_num(w['share_pts'], '10.1f'):>10} "
                     f"{_num(w['rows_pct'], '7.1f'):>7} {_num(w['rate_pct'], '7.1f'):>7} "
                     f"{_num(w['mean_pct'], '7.1f'):>7}  {verdict}")
    return "\n".join(lines)


def prepare(cases: list[str]) -> None:
    if any(c.startswith("my") for c in cases):
        sh(["sysbench", "oltp_common", *SB, "cleanup"], check=False)
        sh(["sysbench", "oltp_common", *SB, "prepare"])
    if any(c.startswith("pg") for c in cases):
        sh(["pgbench", "-i", "-q", "-s", "2", *PGB])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=100.0, help="production's transactions per second")
    ap.add_argument("--time", type=float, default=20.0, help="seconds of each capture window")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3,
                    help="production and twin windows alternated this many times each, compared pooled")
    ap.add_argument("--cases", default="my-text,my-ps,pg-simple,pg-prepared")
    ap.add_argument("--twin-priority", default="auto", choices=("auto", "normal", "idle"),
                    help="the twin's --worker-priority (the peers run at normal priority)")
    ap.add_argument("--out", default="", help="folder for the cases' files (default: a temporary one)")
    args = ap.parse_args()
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: at least one round (a production window and a twin window)")
    folder = Path(args.out or tempfile.mkdtemp(prefix="twin_fidelity-"))
    rate = f"{args.rate:g}"
    t = str(args.threads)
    defs = {
        "my-text": ("mysql", "sysbench oltp_read_write --db-ps-mode=disable",
                    lambda s: ["sysbench", "oltp_read_write", *SB, "--db-ps-mode=disable", f"--threads={t}",
                               f"--rate={rate}", f"--time={int(float(s))}", "run"]),
        "my-ps": ("mysql", "sysbench oltp_read_write, prepared",
                  lambda s: ["sysbench", "oltp_read_write", *SB, f"--threads={t}", f"--rate={rate}",
                             f"--time={int(float(s))}", "run"]),
        "pg-simple": ("postgresql", "pgbench tpcb-like -M simple",
                      lambda s: ["pgbench", "-n", "-M", "simple", "-c", t, "-j", "2", "-R", rate, "-T",
                                 str(int(float(s))), *PGB]),
        "pg-prepared": ("postgresql", "pgbench tpcb-like -M prepared",
                        lambda s: ["pgbench", "-n", "-M", "prepared", "-c", t, "-j", "2", "-R", rate, "-T",
                                   str(int(float(s))), *PGB]),
    }
    names = [n.strip() for n in args.cases.split(",") if n.strip()]
    unknown = [n for n in names if n not in defs]
    if unknown:
        raise SystemExit(f"unknown case {unknown[0]} (known: {', '.join(defs)})")
    prepare(names)
    print(f"production at {rate} tps, {args.threads} clients; capture windows of {args.time:g} s; twin's workers at "
          f"priority {args.twin_priority}; files in {folder}")
    cases = []
    for n in names:
        engine, peer, load = defs[n]
        with statement_history() if engine == "mysql" else contextlib.nullcontext():
            case = run_case(n, engine, load, peer, args, folder)
        cases.append(case)
        print(case_text(case), flush=True)
    print(summary_text(cases))
    (folder / "fidelity.json").write_text(json.dumps([{**asdict(c), "worst": c.worst()} for c in cases], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
