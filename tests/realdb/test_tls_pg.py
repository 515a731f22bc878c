"""TLS for the PostgreSQL driver and the PostgreSQL monitor source, verified
against a private PostgreSQL with a self-signed certificate."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from benchtop.commands.monitor import main as monitor_main
from benchtop.target import parse_dsn
from benchtop.target.instrumentation import InstrumentationControl
from tests.e2e.conftest import run_benchtop
from tests.fixtures.dbhelpers import retry
from tests.fixtures.local import PG_ADMIN, LocalPostgres, MissingBinary, give_to_postgres, free_port
from tests.realdb.test_tls import assert_instrumentation_refused, make_certs

pytestmark = [pytest.mark.realdb, pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")]


class TLSPostgres(LocalPostgres):
    certs: dict[str, Path] = {}

    def _init(self) -> None:
        super()._init()
        for name in ("cert", "key"):
            dst = self.datadir / f"server.{name}"
            shutil.copy(self.certs[name], dst)
            dst.chmod(0o600)
            give_to_postgres(dst)
        with open(self.datadir / "postgresql.conf", "a") as conf:
            conf.write("ssl = on\nssl_cert_file = 'server.cert'\nssl_key_file = 'server.key'\n")
        hba = self.datadir / "pg_hba.conf"
        # tlsadmin may change settings (instrumentation); both roles only over TLS
        rules = "hostssl all tls,tlsadmin 127.0.0.1/32 md5\nhostnossl all tls,tlsadmin 127.0.0.1/32 reject\n"
        hba.write_text(rules + hba.read_text())


@pytest.fixture(scope="module")
def tls_pg():
    # the server runs as the postgres OS user: pytest's own tmp folders are
    # private to root, so this one is made traversable
    root = Path(tempfile.mkdtemp(prefix="benchtop-pgtls-"))
    root.chmod(0o755)
    (root / "certs").mkdir()
    certs = make_certs(root / "certs")
    TLSPostgres.certs = certs
    try:
        srv = TLSPostgres(root, free_port())
    except MissingBinary as exc:
        pytest.skip(str(exc))
    srv.start()
    with psycopg.connect(host="127.0.0.1", port=srv.port, user=PG_ADMIN[0], password=PG_ADMIN[1],
                         dbname="postgres", autocommit=True) as c:
        c.execute("CREATE ROLE tls LOGIN PASSWORD 'tlspw'")
        c.execute("GRANT pg_monitor TO tls")
        c.execute("CREATE ROLE tlsadmin LOGIN SUPERUSER PASSWORD 'tlspw'")
    try:
        yield srv, certs
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


WL = "[[transaction]]\nscript = '''\nexec read: SELECT 1\n'''\n"


def run(srv, tmp_path: Path, query: str) -> object:
    wl = tmp_path / "tls.toml"
    wl.write_text(WL)
    # 200 transactions over the connection (--time only as a bound)
    return run_benchtop("--headless", "--json", "--events", "200", "--time", "30", "--engine", "postgres",
                        "--no-monitor",
                        "--dsn", f"postgresql://tls@127.0.0.1:{srv.port}/postgres{query}", "--workload", str(wl),
                        env={"PGPASSWORD": "tlspw"})


def test_required_tls(tls_pg, tmp_path: Path) -> None:
    srv, _ = tls_pg
    res = run(srv, tmp_path, "?sslmode=require")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.splitlines()[-1])["transactions"] > 0


def test_refused_without_tls(tls_pg, tmp_path: Path) -> None:
    srv, _ = tls_pg
    res = run(srv, tmp_path, "?sslmode=disable")
    assert res.returncode == 1 and "cannot connect" in res.stderr


def test_verify_full_against_the_private_ca(tls_pg, tmp_path: Path) -> None:
    srv, certs = tls_pg
    res = run(srv, tmp_path, f"?sslmode=verify-full&sslrootcert={certs['ca']}")
    assert res.returncode == 0, res.stderr


def test_verification_fails_with_an_unknown_ca(tls_pg, tmp_path: Path) -> None:
    srv, _ = tls_pg
    other = tmp_path / "other"
    other.mkdir()
    res = run(srv, tmp_path, f"?sslmode=verify-full&sslrootcert={make_certs(other)['ca']}")
    assert res.returncode == 1 and "cannot connect" in res.stderr


def test_monitor_over_verified_tls(tls_pg, monkeypatch: pytest.MonkeyPatch) -> None:
    srv, certs = tls_pg
    monkeypatch.setenv("PGPASSWORD", "tlspw")
    out = io.StringIO()
    rc = monitor_main(["--pgsql", f"postgresql://tls@127.0.0.1:{srv.port}/postgres?sslmode=verify-full&sslrootcert={certs['ca']}",
                       "--no-os", "--headless", "--json", "--count", "1"], out=out)
    assert rc == 0
    snap = json.loads(out.getvalue().splitlines()[-1])
    assert snap["sources"]["postgresql"]["ok"] is True


def _admin(srv, query: str) -> list[tuple]:
    with psycopg.connect(host="127.0.0.1", port=srv.port, user=PG_ADMIN[0], password=PG_ADMIN[1],
                         dbname="postgres", autocommit=True) as c:
        return c.execute(query).fetchall()


def _track_io_timing(srv) -> str:
    # a fresh session: ALTER SYSTEM + reload must reach it
    return _admin(srv, "SHOW track_io_timing")[0][0]


def test_instrumentation_over_verified_tls_applies_and_restores(tls_pg) -> None:
    srv, certs = tls_pg
    before = _track_io_timing(srv)
    flipped = "off" if before == "on" else "on"
    target = parse_dsn(f"postgresql://tlsadmin:tlspw@127.0.0.1:{srv.port}/postgres"
                       f"?sslmode=verify-full&sslrootcert={certs['ca']}")
    with InstrumentationControl(target) as ctl:
        ctl.apply("all_enabled" if flipped == "on" else "all_disabled")
        retry(lambda: _track_io_timing(srv) == flipped, timeout=10)
        ssl_rows = _admin(srv, "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)"
                               " WHERE a.application_name = 'benchtop-instrumentation'")
        assert ssl_rows == [(True,)]
    assert ctl.events[-1].preset == "restored"
    retry(lambda: _track_io_timing(srv) == before, timeout=10)


def test_instrumentation_needs_tls_and_the_right_ca(tls_pg, tmp_path: Path) -> None:
    srv, _ = tls_pg
    base = f"postgresql://tlsadmin:tlspw@127.0.0.1:{srv.port}/postgres"
    assert_instrumentation_refused(f"{base}?sslmode=disable", "pg_hba.conf rejects")
    other = tmp_path / "other"
    other.mkdir()
    # the spelling the MySQL side takes (ssl=, ssl-ca=) means the same here
    assert_instrumentation_refused(f"{base}?ssl=verify-full&ssl-ca={make_certs(other)['ca']}", "certificate verify failed")


def test_required_tls_on_event_loops(tls_pg, tmp_path: Path) -> None:
    """--connections: libpq's non-blocking connect does the TLS handshake on
    the loop, and every connection is served over TLS."""
    srv, _ = tls_pg
    wl = tmp_path / "tls.toml"
    wl.write_text(WL)
    res = run_benchtop("--headless", "--json", "--time", "1", "--engine", "postgres", "--no-monitor",
                       "--dsn", f"postgresql://tls@127.0.0.1:{srv.port}/postgres?sslmode=require", "--workload",
                       str(wl), "--connections", "8", "--threads", "2", env={"PGPASSWORD": "tlspw"})
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout.splitlines()[-1])
    assert s["connections_served"] == 8 and s["threads"] == 2 and s["errors"] == 0, s
