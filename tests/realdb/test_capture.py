"""benchtop capture on real servers, with peers nobody here wrote as
production (sysbench oltp_read_write with literals on MariaDB, pgbench's
tpcb-like over the simple protocol on PostgreSQL): the capture only reads
(the servers' statement logs say so), and the workload made from it compiles
and runs at the captured rate."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchtop.capture.model import Capture, Column, read_capture
from benchtop.commands.capture import main as capture_main
from benchtop.commands.workload import main as workload_main
from benchtop.workload import file_run_defaults, load_program
from tests.e2e.conftest import run_benchtop
from tests.fixtures.servers import Server, mysql_admin_exec, pg_admin_exec, retry
from tests.proxysql_standin import start_standin

# alone: a busy neighbour thins the processlist samples that name prepared executions and order them
pytestmark = [pytest.mark.realdb, pytest.mark.alone]

SYSBENCH = shutil.which("sysbench")
PGBENCH = shutil.which("pgbench") or next(
    (str(p) for p in sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))), None)
WHO = "capturer"  # a read-only account, so the statement logs hold its statements alone
# a read, or the client library's SET of its own session (PyMySQL: the character set, autocommit)
_READ = re.compile(r"^\s*(SELECT\b|SET\s+(SESSION\s+)?(autocommit|NAMES)\b)", re.I)


def _dsn(kind: str, server: Server) -> str:
    return f"{kind}://{WHO}:{WHO}@{server.host}:{server.port}/{server.database}"


def _twin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    capsys.readouterr()
    assert workload_main(["from-capture", str(tmp_path / "cap")]) == 0
    path = tmp_path / "twin.toml"
    path.write_text(capsys.readouterr().out)
    return path


def _summary(res: subprocess.CompletedProcess[str]) -> dict:
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines() if '"summary"' in line][-1]


# Concurrent writes in random order meet each other's row locks: a twin's clients may deadlock as production's
# did (the engine retries those transactions, as sysbench's ignored errors); any other error is the twin's fault.
_RETRIED = {"deadlock", "lock_timeout", "serialization"}


def _ran_clean(summary: dict) -> bool:
    return set(summary["errors_by_kind"]) <= _RETRIED and summary["transactions"] > 0


@pytest.fixture
def mysql_capturer(mysql_server: Server) -> Iterator[None]:
    for stmt in (f"DROP USER IF EXISTS '{WHO}'@'%'", f"CREATE USER '{WHO}'@'%' IDENTIFIED BY '{WHO}'",
                 f"GRANT SELECT ON {mysql_server.database}.* TO '{WHO}'@'%'",
                 f"GRANT SELECT ON performance_schema.* TO '{WHO}'@'%'"):
        mysql_admin_exec(mysql_server, stmt)
    yield
    mysql_admin_exec(mysql_server, f"DROP USER IF EXISTS '{WHO}'@'%'")


@pytest.fixture
def pg_capturer(pg_server: Server) -> Iterator[None]:
    pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {WHO}")
    pg_admin_exec(pg_server, f"CREATE ROLE {WHO} LOGIN PASSWORD '{WHO}' IN ROLE pg_monitor")
    yield
    pg_admin_exec(pg_server, f"DROP OWNED BY {WHO}")
    pg_admin_exec(pg_server, f"DROP ROLE IF EXISTS {WHO}")


def _sysbench_captured(s: Server, tmp_path: Path, *options: str, window: str = "3") -> tuple[Capture, list[str]]:
    """sysbench oltp_read_write at 40 tps as production, captured for `window` s:
    the capture and the capturer's statements as the general log holds them."""
    conn = ["--db-driver=mysql", f"--mysql-host={s.host}", f"--mysql-port={s.port}", f"--mysql-user={s.user}",
            f"--mysql-password={s.password}", f"--mysql-db={s.database}", "--tables=1", "--table-size=2000"]
    subprocess.run([SYSBENCH, "oltp_common", *conn, "cleanup"], capture_output=True, timeout=60, check=False)
    subprocess.run([SYSBENCH, "oltp_common", *conn, "prepare"], capture_output=True, timeout=120, check=True)
    prod = subprocess.Popen([SYSBENCH, "oltp_read_write", *conn, *options, "--threads=2", "--rate=40", "--time=30",
                             "run"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    commits = ("SELECT COALESCE(SUM(COUNT_STAR), 0) FROM performance_schema.events_statements_summary_global_by_event_name"
               " WHERE EVENT_NAME IN ('statement/sql/commit', 'statement/com/Execute')")
    try:
        since = mysql_admin_exec(s, commits)[0][0]
        retry(lambda: mysql_admin_exec(s, commits)[0][0] > since, timeout=20)
        with s.statement_log() as log:
            assert capture_main(["--mysql", _dsn("mysql", s), "--time", window, "--out", str(tmp_path / "cap")]) == 0
            mine = log.statements(user=WHO)
    finally:
        prod.terminate()
        prod.wait(10)
    return read_capture(tmp_path / "cap"), mine


@pytest.mark.skipif(SYSBENCH is None, reason="sysbench not installed (apt-get install sysbench)")
def test_sysbench_captured_read_only_and_run_again(mysql_server: Server, mysql_capturer: None, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    s = mysql_server
    cap, mine = _sysbench_captured(s, tmp_path, "--db-ps-mode=disable")
    assert any("events_statements_summary_by_digest" in q for q in mine)
    assert [q for q in mine if not _READ.match(q)] == []
    assert 20 <= cap.rate <= 60, cap.rate  # sysbench's 40 transactions/s
    texts = {st.text.strip(): st for st in cap.statements}
    point = texts["SELECT `c` FROM `sbtest1` WHERE ID = ?"]
    # performance_schema adds a digest's counts without a lock: a reading may fall between its calls and rows
    assert point.calls == pytest.approx(10 * cap.transactions, rel=0.1)
    assert point.rows_sent == pytest.approx(point.calls, abs=2)
    assert point.placeholders[0].column is not None and point.placeholders[0].column.hi == 2000
    assert cap.notes[0] == "no literal values seen: placeholders drawn from the columns' statistics"
    # no statement history: no transaction's statements seen, so no order
    assert cap.order is None and cap.notes[1].startswith("no statement was seen inside a transaction")
    assert len(cap.notes) == 2

    twin = _twin(tmp_path, capsys)
    program = load_program(str(twin), "mysql")
    assert len(program.stmts) == len(cap.statements)
    assert file_run_defaults(str(twin)).rate == pytest.approx(cap.rate, abs=0.001)
    summary = _summary(run_benchtop("--headless", "--json", "--engine", "mysql", "--dsn", s.dsn(), "--workload",
                                    str(twin), "--threads", "2", "--time", "3", env={"MYSQL_PWD": s.password}))
    assert _ran_clean(summary), summary["errors_by_kind"]
    assert summary["tps"] == pytest.approx(cap.rate, rel=0.3)


@pytest.mark.skipif(SYSBENCH is None, reason="sysbench not installed (apt-get install sysbench)")
def test_values_come_from_the_statement_history_when_it_is_on(mysql_server: Server, mysql_capturer: None,
                                                               tmp_path: Path) -> None:
    """The history consumer is the server owner's to turn on (here the test's): the capture reads it."""
    s = mysql_server
    on = ("UPDATE performance_schema.setup_consumers SET ENABLED = '{}' "
          "WHERE NAME IN ('events_statements_current', 'events_statements_history_long')")
    mysql_admin_exec(s, on.format("YES"))
    try:
        cap, mine = _sysbench_captured(s, tmp_path, "--db-ps-mode=disable")
    finally:
        mysql_admin_exec(s, on.format("NO"))
    assert [q for q in mine if not _READ.match(q)] == []
    assert cap.sample_source == ("performance_schema.events_statements_history_long, "
                                 "performance_schema.events_statements_current")
    point = next(st for st in cap.statements if st.text.startswith("SELECT `c` FROM `sbtest1` WHERE ID = ?"))
    values = [int(v) for v in point.placeholders[0].samples]
    assert len(values) >= 20 and all(1 <= v <= 2000 for v in values)
    rng = next(st for st in cap.statements if st.text.startswith("SELECT `c` FROM `sbtest1` WHERE ID BETWEEN"))
    lo, hi = (p.samples for p in rng.placeholders)
    assert lo and all(int(b) - int(a) == 99 for a, b in zip(lo, hi))  # sysbench's range_size 100
    # the long history shows each thread's transactions whole: sysbench's order, and the key the INSERT puts back
    assert cap.order is not None and cap.order.transactions >= 30
    assert [" ".join(t.split()) for t in cap.order.statements] == [
        "SELECT `c` FROM `sbtest1` WHERE ID = ?", "SELECT `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ?",
        "SELECT SUM ( `k` ) FROM `sbtest1` WHERE ID BETWEEN ? AND ?",
        "SELECT `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ? ORDER BY `c`",
        "SELECT DISTINCTROW `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ? ORDER BY `c`",
        "UPDATE `sbtest1` SET `k` = `k` + ? WHERE ID = ?", "UPDATE `sbtest1` SET `c` = ? WHERE ID = ?",
        "DELETE FROM `sbtest1` WHERE ID = ?", "INSERT INTO `sbtest1` ( ID , `k` , `c` , `pad` ) VALUES (...)"]
    assert [(x.statement.split()[0], x.index, x.source.split()[0], x.source_index) for x in cap.order.shared] == [
        ("INSERT", 0, "DELETE", 0)]


@pytest.mark.skipif(SYSBENCH is None, reason="sysbench not installed (apt-get install sysbench)")
def test_prepared_statements_the_capture_cannot_see_are_said(mysql_server: Server, mysql_capturer: None,
                                                             tmp_path: Path) -> None:
    cap, _ = _sysbench_captured(mysql_server, tmp_path)
    assert any("prepared statements" in n and "not captured" in n for n in cap.notes), cap.notes


@pytest.mark.skipif(SYSBENCH is None, reason="sysbench not installed (apt-get install sysbench)")
def test_prepared_executions_named_by_the_processlist_and_run_again(mysql_server: Server, mysql_capturer: None,
                                                                    tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """With the statement history on and PROCESS granted, sysbench's prepared statements (no digest counts
    them) are shared out from the history's executions: their texts, counts and order, read-only; the twin
    prepares them too."""
    s = mysql_server
    on = ("UPDATE performance_schema.setup_consumers SET ENABLED = '{}' "
          "WHERE NAME IN ('events_statements_current', 'events_statements_history_long')")
    mysql_admin_exec(s, f"GRANT PROCESS ON *.* TO '{WHO}'@'%'")
    mysql_admin_exec(s, on.format("YES"))
    try:
        cap, mine = _sysbench_captured(s, tmp_path, window="6")
    finally:
        mysql_admin_exec(s, on.format("NO"))
    assert [q for q in mine if not _READ.match(q)] == []
    assert not cap.literals and 20 <= cap.rate <= 60, cap.rate
    texts = {st.text: st for st in cap.statements}
    point = texts["SELECT c FROM sbtest1 WHERE id=?"]
    assert point.calls == pytest.approx(10 * cap.transactions, rel=0.15)
    assert texts["SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?"].rows_sent == pytest.approx(
        100 * texts["SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?"].calls, rel=0.05)
    assert any("named by the processlist" in n for n in cap.notes), cap.notes
    assert cap.order is not None and cap.order.statements[0] == "SELECT c FROM sbtest1 WHERE id=?"

    twin = _twin(tmp_path, capsys)
    assert "prepare = true" in twin.read_text()
    summary = _summary(run_benchtop("--headless", "--json", "--engine", "mysql", "--dsn", s.dsn(), "--workload",
                                    str(twin), "--threads", "2", "--time", "3", env={"MYSQL_PWD": s.password}))
    assert _ran_clean(summary), summary["errors_by_kind"]


def test_proxysql_digests_with_the_backends_columns_run_again(mysql_server: Server, mysql_capturer: None,
                                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ProxySQL's digests (the stand-in's sysbench-like mix) and the ranges of the columns they name, read
    read-only from the backend's schema: the twin runs on the backend."""
    s = mysql_server
    mysql_admin_exec(s, f"DROP TABLE IF EXISTS {s.database}.sbtest1")
    mysql_admin_exec(s, f"CREATE TABLE {s.database}.sbtest1 (id INT PRIMARY KEY AUTO_INCREMENT, k INT NOT NULL, "
                        "c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL, KEY k_1 (k))")
    mysql_admin_exec(s, f"INSERT INTO {s.database}.sbtest1 (k, c, pad) SELECT seq % 100, 'c', 'p' FROM seq_1_to_500")
    proxy = start_standin()
    timer = threading.Timer(0.3, proxy.simulate_traffic, (1.0, 1000))
    try:
        timer.start()
        with s.statement_log() as log:
            assert capture_main(["--proxysql", proxy.dsn("stats"), "--mysql", _dsn("mysql", s), "--time", "1",
                                 "--out", str(tmp_path / "cap")]) == 0
            mine = log.statements(user=WHO)
    finally:
        timer.join()
        proxy.stop()
    assert [q for q in mine if not _READ.match(q)] == []
    cap = read_capture(tmp_path / "cap")
    point = next(st for st in cap.statements if st.text == "SELECT c FROM sbtest1 WHERE id=?")
    assert point.placeholders[0].column == Column("sbtest1", "id", True, 1.0, 500.0)
    twin = _twin(tmp_path, capsys)
    summary = _summary(run_benchtop("--headless", "--json", "--engine", "mysql", "--dsn", s.dsn(), "--workload",
                                    str(twin), "--threads", "2", "--time", "2", "--rate", "0",
                                    env={"MYSQL_PWD": s.password}))
    assert _ran_clean(summary), summary["errors_by_kind"]


@pytest.mark.skipif(PGBENCH is None, reason="pgbench not installed (apt-get install postgresql-client)")
@pytest.mark.parametrize("protocol", ["simple", "prepared"])
def test_pgbench_captured_read_only_and_run_again(pg_server: Server, pg_capturer: None, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str], protocol: str) -> None:
    """Over the simple protocol the values come from pg_stat_activity and the twin sends literals too;
    prepared, pg_stats gives the ranges and the twin prepares."""
    s = pg_server
    env = dict(os.environ, PGPASSWORD=s.password)
    where = ["-h", s.host, "-p", str(s.port), "-U", s.user, s.database]
    subprocess.run([PGBENCH, "-i", "-q", "-s", "1", *where], capture_output=True, env=env, timeout=120, check=True)
    pg_admin_exec(s, f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {WHO}")
    prod = subprocess.Popen([PGBENCH, "-n", "-M", protocol, "-c", "2", "-R", "40", "-T", "30", *where], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        retry(lambda: pg_admin_exec(s, "SELECT count(*) FROM pgbench_history")[0][0] > 0, timeout=20)
        with s.statement_log() as log:
            # 6 s: under -M prepared the transactions come from pg_stat_database's commits, which a backend adds
            # a second or more late; over 3 s that lag was half the window and the twin ran each statement twice
            assert capture_main(["--pgsql", _dsn("postgresql", s), "--time", "6", "--out", str(tmp_path / "cap")]) == 0
            mine = log.statements(user=WHO)
    finally:
        prod.terminate()
        prod.wait(10)
        subprocess.run([PGBENCH, "-i", "-I", "d", *where], capture_output=True, env=env, timeout=60, check=False)
    assert any("pg_stat_statements" in q for q in mine) and any("pg_stat_activity" in q for q in mine)
    assert [q for q in mine if not _READ.match(re.sub(r"/\*.*?\*/", "", q))] == []
    assert not any(re.search(r"_reset\s*\(", q) for q in mine)
    cap = read_capture(tmp_path / "cap")
    # pgbench's 40 transactions/s; prepared, counted from the server's commits, which each backend adds once a second
    assert (20 <= cap.rate <= 60) if protocol == "simple" else (10 <= cap.rate <= 90), cap.rate
    update = next(st for st in cap.statements if st.text.startswith("UPDATE pgbench_accounts"))
    assert update.rows_sent == update.calls > 0
    # values seen in pg_stat_activity while the window lasted, or none when they were parameters
    assert cap.literals == any(p.samples for st in cap.statements for p in st.placeholders) == (protocol == "simple")
    # the order within a transaction where pg_stat_activity caught enough of them, or a note saying it did not
    assert any(n.startswith(("statements in the order seen", "no statement was seen inside")) for n in cap.notes)
    aid = update.placeholders[1]
    # pg_stats' histogram bounds, from ANALYZE's sample of the 100,000 accounts
    assert aid.column is not None and aid.column.lo <= 100 and aid.column.hi >= 99_000, aid.column

    # the tables again for the twin to run on (pgbench's were dropped above)
    subprocess.run([PGBENCH, "-i", "-q", "-s", "1", *where], capture_output=True, env=env, timeout=120, check=True)
    try:
        twin = _twin(tmp_path, capsys)
        assert file_run_defaults(str(twin)).prepare is (protocol == "prepared")
        load_program(str(twin), "postgresql")
        summary = _summary(run_benchtop("--headless", "--json", "--engine", "postgres", "--dsn", s.dsn(), "--workload",
                                        str(twin), "--threads", "2", "--time", "3", env={"PGPASSWORD": s.password}))
        assert _ran_clean(summary), summary["errors_by_kind"]
        assert summary["tps"] == pytest.approx(cap.rate, rel=0.3)
        rows = pg_admin_exec(s, "SELECT count(*) FROM pgbench_history")[0][0]
        assert rows == pytest.approx(summary["transactions"], abs=2)
    finally:
        subprocess.run([PGBENCH, "-i", "-I", "d", *where], capture_output=True, env=env, timeout=60, check=False)
