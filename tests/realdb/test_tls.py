"""TLS for the MySQL driver, verified against a private MariaDB with a
self-signed certificate (its own throwaway instance: the shared one stays
plain)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pymysql
import pytest

from benchtop.commands.monitor import main as monitor_main
from benchtop.sources.mysql import MySQLSource
from benchtop.sources.registry import parse_spec
from benchtop.target import parse_dsn
from benchtop.target.instrumentation import InstrumentationControl, InstrumentationError
from tests.e2e.conftest import run_benchtop
from tests.fixtures.local import LocalMariaDB, MissingBinary, free_port

pytestmark = [pytest.mark.realdb, pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")]


def make_certs(d: Path) -> dict[str, Path]:
    ca_key, ca, key, csr, cert = (d / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=benchtop-test-ca",
        "-keyout", str(ca_key), "-out", str(ca))
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(csr))
    ext = d / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-days", "2",
        "-extfile", str(ext), "-out", str(cert))
    for p in d.iterdir():
        p.chmod(0o644)
    return {"ca": ca, "cert": cert, "key": key}


class TLSMariaDB(LocalMariaDB):
    certs: dict[str, Path] = {}

    def _init(self) -> None:
        super()._init()
        with open(self.cnf, "a") as f:
            f.write(f"\n[mariadbd]\nssl-ca={self.certs['ca']}\nssl-cert={self.certs['cert']}\nssl-key={self.certs['key']}\n")


@pytest.fixture(scope="module")
def tls_mariadb(tmp_path_factory):
    root = tmp_path_factory.mktemp("tls")
    root.chmod(0o755)
    certs = make_certs(root)
    TLSMariaDB.certs = certs
    try:
        srv = TLSMariaDB(root, free_port())
    except MissingBinary as exc:
        pytest.skip(str(exc))
    srv.start()
    with pymysql.connect(host="127.0.0.1", port=srv.port, user="root", unix_socket=str(srv.socket)) as c:
        cur = c.cursor()
        cur.execute("CREATE USER 'tls'@'%' IDENTIFIED BY 'tlspw' REQUIRE SSL")
        cur.execute("GRANT ALL ON sbtest.* TO 'tls'@'%'")
        cur.execute("CREATE TABLE IF NOT EXISTS sbtest.t_tls (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO sbtest.t_tls VALUES (1)")
    yield srv, certs
    srv.stop()


WL = "[[transaction]]\nscript = '''\nexec read: SELECT id FROM t_tls WHERE id = 1\n'''\n"


def run(srv, tmp_path: Path, query: str, ssl_flag: list[str],
        length: tuple[str, ...] = ("--events", "200", "--time", "30")) -> subprocess.CompletedProcess[str]:
    """A run over TLS; by default 200 transactions (--time only as a bound)."""
    wl = tmp_path / "tls.toml"
    wl.write_text(WL)
    return run_benchtop("--headless", "--json", *length, "--engine", "mysql", "--no-monitor",
                        "--dsn", f"mysql://tls@127.0.0.1:{srv.port}/sbtest{query}", "--workload", str(wl),
                        *ssl_flag, env={"MYSQL_PWD": "tlspw"})


def test_required_tls_connects(tls_mariadb, tmp_path: Path) -> None:
    srv, _ = tls_mariadb
    res = run(srv, tmp_path, "", ["--mysql-ssl", "on"])
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.splitlines()[-1])["transactions"] > 0


def test_user_requiring_tls_is_refused_without_it(tls_mariadb, tmp_path: Path) -> None:
    srv, _ = tls_mariadb
    res = run(srv, tmp_path, "", ["--mysql-ssl", "off"])
    assert res.returncode == 1 and "cannot connect" in res.stderr


def test_verified_against_the_private_ca(tls_mariadb, tmp_path: Path) -> None:
    srv, certs = tls_mariadb
    res = run(srv, tmp_path, f"?ssl-ca={certs['ca']}", ["--mysql-ssl", "verify"])
    assert res.returncode == 0, res.stderr


def test_verification_fails_with_an_unknown_ca(tls_mariadb, tmp_path: Path) -> None:
    srv, _ = tls_mariadb
    other = tmp_path / "other"
    other.mkdir()
    bogus = make_certs(other)["ca"]
    res = run(srv, tmp_path, f"?ssl-ca={bogus}", ["--mysql-ssl", "verify"])
    assert res.returncode == 1 and "cannot connect" in res.stderr


def _root_exec(srv, stmt: str) -> list[tuple]:
    with pymysql.connect(host="127.0.0.1", port=srv.port, user="root", unix_socket=str(srv.socket)) as c:
        cur = c.cursor()
        cur.execute(stmt)
        return list(cur.fetchall())


@pytest.fixture(scope="module")
def tls_admin(tls_mariadb):
    """A user that may change performance_schema, only over TLS."""
    srv, certs = tls_mariadb
    _root_exec(srv, "CREATE USER IF NOT EXISTS 'tlsinst'@'%' IDENTIFIED BY 'tlspw' REQUIRE SSL")
    _root_exec(srv, "GRANT SELECT, UPDATE ON performance_schema.* TO 'tlsinst'@'%'")
    return srv, certs


def _instruments(srv) -> list[tuple]:
    return _root_exec(srv, "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments ORDER BY NAME")


def test_instrumentation_over_verified_tls_applies_and_restores(tls_admin) -> None:
    srv, certs = tls_admin
    before = _instruments(srv)
    target = parse_dsn(f"mysql://tlsinst:tlspw@127.0.0.1:{srv.port}?ssl=verify-ca&ssl-ca={certs['ca']}")
    with InstrumentationControl(target) as ctl:
        ctl.apply("waits_only")
        enabled = _root_exec(srv, "SELECT DISTINCT ENABLED FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/%'")
        assert enabled == [("YES",)]
        with ctl._mysql().cursor() as cur:  # the control's own connection
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1]
    assert ctl.events[-1].preset == "restored"
    assert _instruments(srv) == before


def assert_instrumentation_refused(dsn: str, error: str) -> None:
    """The instrumentation connection for `dsn` cannot be made, for `error`."""
    ctl = InstrumentationControl(parse_dsn(dsn))
    with pytest.raises(InstrumentationError, match=error):
        ctl.apply("all_enabled")
    ctl.close()


def test_instrumentation_needs_tls_and_the_right_ca(tls_admin, tmp_path: Path) -> None:
    srv, _ = tls_admin
    base = f"mysql://tlsinst:tlspw@127.0.0.1:{srv.port}"
    assert_instrumentation_refused(f"{base}?ssl=off", "Access denied")
    bogus = make_certs(tmp_path)["ca"]
    assert_instrumentation_refused(f"{base}?ssl=verify-ca&ssl-ca={bogus}", "CERTIFICATE_VERIFY_FAILED")


def test_monitor_source_over_verified_tls(tls_mariadb) -> None:
    srv, certs = tls_mariadb
    target = parse_spec("mysql", f"mysql://tls:tlspw@127.0.0.1:{srv.port}/sbtest?ssl=verify-ca&ssl-ca={certs['ca']}")
    source = MySQLSource("mysql", target, timeout_s=5.0)
    source.connect()
    try:
        for _ in range(2):
            snap = source.poll()
            assert snap.ok and not snap.error
        assert snap.interval_s is not None and snap.panel("threads")["connected"] >= 1
        assert source._conn is not None and source._conn.ssl  # the source's own connection
        with source._conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1]
    finally:
        source.close()


def test_monitor_command_over_verified_tls(tls_mariadb) -> None:
    srv, certs = tls_mariadb
    out = io.StringIO()
    dsn = f"mysql://tls:tlspw@127.0.0.1:{srv.port}/sbtest?ssl=verify-ca&ssl-ca={certs['ca']}"
    rc = monitor_main(["--mysql", dsn, "--no-os", "--headless", "--json", "--count", "2"], out=out)
    assert rc == 0
    snap = json.loads(out.getvalue().splitlines()[-1])
    assert snap["sources"]["mysql"]["ok"] is True, snap


def test_a_run_with_the_monitor_verifies_tls_with_the_dsn_ca(tls_mariadb, tmp_path: Path) -> None:
    # the load and the monitor read the same ssl-ca from the DSN: every poll is ok
    srv, certs = tls_mariadb
    wl = tmp_path / "tls.toml"
    wl.write_text(WL)
    out = tmp_path / "res"
    res = run_benchtop("--headless", "--json", "--time", "1", "--engine", "mysql", "--monitor-interval", "0.25",
                       "--dsn", f"mysql://tls@127.0.0.1:{srv.port}/sbtest?ssl=verify-ca&ssl-ca={certs['ca']}",
                       "--workload", str(wl), "--out", str(out), env={"MYSQL_PWD": "tlspw"})
    assert res.returncode == 0, res.stderr
    polls = [json.loads(x) for x in (out / "monitor.jsonl").read_text().splitlines()]
    mysql = [p["sources"]["mysql"] for p in polls if "mysql" in p["sources"]]
    assert mysql and all(p["ok"] for p in mysql), mysql[:1]
    assert json.loads(res.stdout.splitlines()[-1])["validity"]["status"] != "unknown"


def test_required_tls_on_event_loops(tls_mariadb, tmp_path: Path) -> None:
    """--connections: the library's TLS reads and writes wait on the loop
    (its wait method is ours), and every connection is served over TLS."""
    srv, _ = tls_mariadb
    # a second, not a count: every connection must finish its TLS handshake and serve one
    res = run(srv, tmp_path, "", ["--mysql-ssl", "on", "--connections", "8", "--threads", "2"], ("--time", "1"))
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout.splitlines()[-1])
    assert s["connections_served"] == 8 and s["threads"] == 2 and s["errors"] == 0, s
