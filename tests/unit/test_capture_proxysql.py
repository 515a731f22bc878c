"""benchtop capture --proxysql against the stand-in that serves ProxySQL's
real admin schema: the digests' mix, times and rows over the window, the
transactions from ProxySQL's COMMIT counter, and nothing but reads."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchtop.capture.model import read_capture
from benchtop.capture.proxysql import ProxySQLReader
from benchtop.capture.window import capture
from benchtop.commands.capture import main as capture_main
from benchtop.sources.registry import parse_spec
from tests.proxysql_standin import Standin, start_standin
from tests.proxysql_standin.traffic import DIGESTS


@pytest.fixture
def standin() -> Iterator[Standin]:
    s = start_standin()
    yield s
    s.stop()


def test_the_digests_mix_times_and_transactions_over_the_window(standin: Standin) -> None:
    standin.simulate_traffic(5.0, qps=1000)  # before the window: not captured
    now = [0.0]

    def two_seconds_of_traffic(s: float) -> None:
        standin.simulate_traffic(s, qps=1000)
        now[0] += s

    reader = ProxySQLReader(parse_spec("proxysql", standin.dsn("stats")))
    try:
        cap = capture(reader, 2.0, interval_s=2.0, clock=lambda: now[0], wait=two_seconds_of_traffic)
    finally:
        reader.close()
    assert cap.engine == "mysql" and cap.server_version == "ProxySQL 2.7.1-16-g2726c27"
    by_text = {s.text: s for s in cap.statements}
    assert set(by_text) == {text for _, text, *_ in DIGESTS}
    for _, text, _, share, lat_us in DIGESTS:
        s = by_text[text]
        assert s.calls == int(2000 * share)
        assert s.mean_ms == pytest.approx(lat_us / 1000)
    assert by_text["SELECT c FROM sbtest1 WHERE id=?"].rows_sent == 1200
    # the stand-in digests no BEGIN: ProxySQL's COMMIT counter counts the transactions, 2000 queries // 20
    assert cap.transactions == 100 and cap.rate == pytest.approx(50.0)
    assert cap.literals and not any(p.samples for s in cap.statements for p in s.placeholders)
    assert any("no backend named (--mysql)" in n for n in cap.notes)
    assert all(p.column is None for s in cap.statements for p in s.placeholders)


def test_capture_through_the_command_reads_only(standin: Standin, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    timer = threading.Timer(0.3, standin.simulate_traffic, (1.0, 1000))
    timer.start()
    try:
        assert capture_main(["--proxysql", standin.dsn("stats"), "--time", "1", "--out", str(tmp_path / "cap")]) == 0
    finally:
        timer.join()
    cap = read_capture(tmp_path / "cap")
    assert len(cap.statements) == len(DIGESTS) and cap.transactions == 50
    assert "5 statements, 50 transactions" in capsys.readouterr().out
    mine = [q for q in standin.queries_seen if not q.startswith("SET NAMES")]
    assert mine and all(re.match(r"\s*SELECT\b", q, re.I) for q in mine), mine
    assert not any("_reset" in q for q in mine)


@pytest.mark.parametrize("args, says", [
    (["--proxysql", "proxysql://u@127.0.0.1:1", "--pgsql", "postgresql://u@127.0.0.1:1/db", "--out", "x"],
     "--pgsql cannot go with it"),
    (["--proxysql", "proxysql://u:secret@127.0.0.1:1", "--time", "1", "--out", "x"],
     "cannot connect to ProxySQL's admin interface proxysql://u@127.0.0.1:1"),
    (["--time", "1", "--out", "x"], "name the server to capture"),
])
def test_bad_proxysql_input_is_one_line(args: list[str], says: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert capture_main([a.replace("x", str(tmp_path / "x")) if a == "x" else a for a in args]) in (1, 2)
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "secret" not in err
    assert not (tmp_path / "x").exists()


def test_the_monitors_capture_of_a_proxysql_source(standin: Standin, tmp_path: Path) -> None:
    from benchtop.screens.capture_key import capture_to

    timer = threading.Timer(0.3, standin.simulate_traffic, (1.0, 1000))
    timer.start()
    try:
        said = capture_to("proxysql", parse_spec("proxysql", standin.dsn("stats")), tmp_path / "c", 1.0)
    finally:
        timer.join()
    assert said.startswith("captured 5 statements, "), said
    cap = read_capture(tmp_path / "c")
    assert len(cap.statements) == 5 and cap.transactions == 50
