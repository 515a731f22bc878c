"""benchtop.target.connection: one Target, the same TLS for every client."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from benchtop.options.run_options import RunOptions
from benchtop.target import Target, TargetError, parse_dsn
from benchtop.target.connection import (
    TLS,
    libpq_conninfo,
    libpq_params,
    native_conn,
    pymysql_kwargs,
    tls_of,
)

CA = str(Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"))


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("mysql://u@h/db", TLS()),
        ("mysql://u@h/db?ssl=on", TLS("require")),
        ("mysql://u@h/db?ssl=verify-ca&ssl-ca=/ca.pem", TLS("verify-ca", ca="/ca.pem")),
        ("mysql://u@h/db?ssl=verify_identity&ssl_ca=/ca.pem&ssl_cert=/c.pem&ssl_key=/k.pem",
         TLS("verify-full", "/ca.pem", "/c.pem", "/k.pem")),
        ("postgresql://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem", TLS("verify-full", ca="/ca.pem")),
        ("postgresql://u@h/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem", TLS("require", cert="/c.pem", key="/k.pem")),
        ("postgresql://u@h/db?ssl=disable", TLS("disable")),
        ("mysql://u@h/db?ssl=prefer", TLS("prefer")),
    ],
)
def test_tls_is_read_the_same_from_either_spelling(dsn: str, expected: TLS) -> None:
    assert tls_of(parse_dsn(dsn)) == expected


def test_an_unknown_tls_mode_is_refused_not_guessed() -> None:
    with pytest.raises(TargetError, match="unknown TLS mode 'banana'"):
        tls_of(parse_dsn("mysql://u@h/db?ssl=banana"))


def test_tls_mode_may_also_come_from_an_option() -> None:
    t = Target("mysql", options={"ssl-mode": "VERIFY_CA", "ssl-ca": "/ca.pem"})
    assert tls_of(t) == TLS("verify-ca", ca="/ca.pem")


@pytest.mark.parametrize(
    ("mode", "level"),
    [("", 0), ("disable", 0), ("allow", 0), ("prefer", 0), ("require", 1), ("verify-ca", 2), ("verify-full", 2)],
)
def test_c_engine_level(mode: str, level: int) -> None:
    assert TLS(mode).level == level


def test_pymysql_kwargs_keep_timeouts_autocommit_and_name() -> None:
    t = Target("mysql", host="db1", port=3307, user="sb", password="pw", database="sbtest")
    kw = pymysql_kwargs(t, timeout_s=2.5, program_name="benchtop-monitor")
    assert kw == {
        "host": "db1", "port": 3307, "user": "sb", "password": "pw", "unix_socket": None,
        "connect_timeout": 2.5, "read_timeout": 2.5, "write_timeout": 2.5,
        "autocommit": True, "charset": "utf8mb4", "database": "sbtest", "program_name": "benchtop-monitor",
    }  # fmt: skip


def test_pymysql_kwargs_defaults() -> None:
    kw = pymysql_kwargs(Target("mysql", socket="/run/mysqld.sock"), timeout_s=1, with_database=False)
    assert kw["user"] is None and kw["password"] == "" and kw["unix_socket"] == "/run/mysqld.sock"
    assert kw["port"] == 3306 and "database" not in kw and "program_name" not in kw
    assert pymysql_kwargs(Target("proxysql"), timeout_s=1)["user"] == "admin"


def test_pymysql_tls_off_prefer_and_required() -> None:
    assert "ssl" not in pymysql_kwargs(Target("mysql"), timeout_s=1)
    assert "ssl" not in pymysql_kwargs(Target("mysql", ssl="prefer"), timeout_s=1)
    assert pymysql_kwargs(Target("mysql", ssl="off"), timeout_s=1)["ssl_disabled"] is True
    ctx = pymysql_kwargs(Target("mysql", ssl="on"), timeout_s=1)["ssl"]
    assert ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname


@pytest.mark.skipif(not Path(CA).is_file(), reason="no system CA bundle")
def test_pymysql_tls_verification_uses_the_dsn_ca() -> None:
    ca_only = pymysql_kwargs(parse_dsn(f"mysql://u@h/db?ssl=verify-ca&ssl-ca={CA}"), timeout_s=1)["ssl"]
    assert ca_only.verify_mode == ssl.CERT_REQUIRED and not ca_only.check_hostname
    assert ca_only.cert_store_stats()["x509_ca"] > 0
    full = pymysql_kwargs(parse_dsn(f"mysql://u@h/db?ssl=verify-full&sslrootcert={CA}"), timeout_s=1)["ssl"]
    assert full.verify_mode == ssl.CERT_REQUIRED and full.check_hostname


def test_pymysql_unreadable_ca_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        pymysql_kwargs(parse_dsn(f"mysql://u@h/db?ssl=verify-ca&ssl-ca={tmp_path / 'none.pem'}"), timeout_s=1)


def test_libpq_params() -> None:
    t = parse_dsn("postgresql://u:pw@h:5433/db?ssl=verify-ca&ssl-ca=/ca.pem&target_session_attrs=read-write&x=1")
    assert libpq_params(t, timeout_s=2.6, application_name="benchtop-monitor") == {
        "host": "h", "port": 5433, "dbname": "db", "connect_timeout": 3, "application_name": "benchtop-monitor",
        "user": "u", "password": "pw", "sslmode": "verify-ca", "sslrootcert": "/ca.pem",
        "target_session_attrs": "read-write",
    }  # fmt: skip


def test_libpq_params_defaults_and_overrides() -> None:
    t = Target("pgbouncer", socket="/run/postgresql", port=6432)
    params = libpq_params(t, timeout_s=0.2, dbname="pgbouncer")
    assert params == {"host": "/run/postgresql", "port": 6432, "dbname": "pgbouncer", "connect_timeout": 1}
    assert libpq_params(Target("postgresql"), timeout_s=5)["dbname"] == "postgres"


def test_conninfo_quotes_what_libpq_needs_quoted() -> None:
    assert libpq_conninfo({"a": "x", "b": "it's", "c": "back\\slash"}) == r"a=x b='it\'s' c='back\\slash'"


def test_native_conn_for_postgresql() -> None:
    t = parse_dsn("postgresql://u:pw@h:5433/db?sslmode=verify-full&sslrootcert=/ca.pem&options=-cwork_mem=64MB")
    assert native_conn(t, "postgresql") == {
        "host": "h", "port": 5433, "socket": "", "user": "u", "password": "pw", "database": "db",
        "options": "options=-cwork_mem=64MB sslmode=verify-full sslrootcert=/ca.pem", "ssl": 0,
    }  # fmt: skip


def test_native_conn_for_mysql() -> None:
    t = parse_dsn("mysql://u@h/db?ssl=verify-ca&ssl_ca=/ca.pem&sslcert=/c.pem&sslkey=/k.pem&compress=1")
    c = native_conn(t, "mysql")
    assert c["options"] == "compress=1;ssl-ca=/ca.pem;ssl-cert=/c.pem;ssl-key=/k.pem" and c["ssl"] == 2
    assert native_conn(parse_dsn("mysql://u@h/db?ssl=on"), "mysql")["ssl"] == 1
    assert native_conn(parse_dsn("mysql://u@h/db?ssl=prefer"), "mysql")["ssl"] == 0


def test_native_conn_over_a_socket() -> None:
    c = native_conn(Target("mysql", host="h", port=3307, socket="/s.sock"), "mysql")
    assert (c["host"], c["port"], c["socket"]) == ("", 0, "/s.sock")


def test_conn_settings_takes_the_fields_from_native_conn() -> None:
    t = parse_dsn("mysql://u:pw@h:3307/db?ssl=verify-ca&ssl-ca=/ca.pem")
    conn = RunOptions(engine="mysql", target=t, prepare_statements=False).conn_settings()
    assert (conn.driver, conn.host, conn.port, conn.user, conn.password, conn.database) == (
        "mysql", "h", 3307, "u", "pw", "db",
    )  # fmt: skip
    assert (conn.options, conn.ssl, conn.prepare) == ("ssl-ca=/ca.pem", 2, False)


# libpq's URI rules: the part a query parameter names wins over the URI's; a path as the host is a socket
@pytest.mark.parametrize(
    ("dsn", "host", "port", "socket", "servers"),
    [
        ("postgresql://sbtest@/sbtest?host=/run/pg&port=25432", "127.0.0.1", 25432, "/run/pg",
         ["/run/pg/.s.PGSQL.25432"]),
        ("postgresql://u@%2Frun%2Fpg:5433/db", "127.0.0.1", 5433, "/run/pg", ["/run/pg/.s.PGSQL.5433"]),
        ("postgresql://u@h:1111/db?port=2222", "h", 2222, "", ["h:2222"]),
        ("postgresql://u@h1:5433,[::1],h3:7/db", "h1", 5433, "", ["h1:5433", "[::1]:5432", "h3:7"]),
        ("postgresql://u@/db?host=h1,h2&port=1,2", "h1", 1, "", ["h1:1", "h2:2"]),
        ("postgresql://u@db.example/db?hostaddr=10.0.0.5", "db.example", 5432, "", ["10.0.0.5:5432"]),
        ("mysql://u@h/db?socket=/tmp/my.sock", "h", 3306, "/tmp/my.sock", ["/tmp/my.sock"]),
        ("mysql://u@(/tmp/my.sock)/db", "127.0.0.1", 3306, "/tmp/my.sock", ["/tmp/my.sock"]),
        ("mysql://u@h/db?port=3307", "h", 3307, "", ["h:3307"]),
    ],
)  # fmt: skip
def test_a_dsn_names_the_server_its_client_library_reaches(dsn, host, port, socket, servers) -> None:
    t = parse_dsn(dsn)
    assert (t.host, t.effective_port, t.socket, t.endpoints()) == (host, port, socket, servers)
    assert t.to_dict()["servers"] == servers


def test_query_parameters_take_the_users_parts_and_tls() -> None:
    t = parse_dsn("postgresql://h/?user=u&password=pw&dbname=db&sslmode=require&target_session_attrs=any")
    assert (t.user, t.password, t.database, t.ssl, t.options) == ("u", "pw", "db", "require",
                                                                   {"target_session_attrs": "any"})


def test_the_load_and_the_monitor_reach_the_socket_and_hosts_the_dsn_names() -> None:
    sock = parse_dsn("postgresql://sbtest@/sbtest?host=/run/pg&port=25432")
    c = native_conn(sock, "postgresql")
    assert (c["host"], c["port"], c["socket"]) == ("", 25432, "/run/pg")
    assert (libpq_params(sock, timeout_s=1)["host"], libpq_params(sock, timeout_s=1)["port"]) == ("/run/pg", 25432)
    many = parse_dsn("postgresql://u@h1:5433,h2/db?hostaddr=10.0.0.5,10.0.0.6")
    c = native_conn(many, "postgresql")
    assert (c["host"], c["port"]) == ("h1,h2", 0)
    assert c["options"] == "port=5433,5432 hostaddr=10.0.0.5,10.0.0.6"
    assert libpq_params(many, timeout_s=1)["port"] == "5433,5432"


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgresql://u@h:-1/db", "bad port '-1'"),
        ("postgresql://u@h:0/db", "bad port '0'"),
        ("postgresql://u@h:70000/db", "bad port '70000'"),
        ("postgresql://u@h/db?port=x", "bad port 'x'"),
        ("postgresql://u@h1,h2/db?port=1,2,3", "names 2 hosts but 3 ports"),
        ("mysql://u@h1,h2/db", "names 2 hosts: a mysql target is one server"),
    ],
)
def test_an_impossible_port_or_host_list_is_refused_in_one_line(dsn: str, message: str) -> None:
    with pytest.raises(TargetError, match=message) as exc:
        parse_dsn(dsn)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "dsn",
    ["sbtest:Zq9-secret-77@127.0.0.1", "mysql://sbtest:Zq9-secret-77@h:99999/db",
     "postgresql://h/db?password=Zq9-secret-77&port=x", "host=h password=Zq9-secret-77 port=x"],
)
def test_a_password_is_masked_in_every_dsn_error(dsn: str) -> None:
    with pytest.raises(TargetError) as exc:
        parse_dsn(dsn, "postgresql")
    assert "Zq9-secret-77" not in str(exc.value) and "***" in str(exc.value)


def test_a_socket_target_takes_its_pgpass_line_for_localhost(tmp_path, monkeypatch) -> None:
    from benchtop.target import fill_defaults

    (tmp_path / "pgpass").write_text("127.0.0.1:25432:*:sbtest:tcp-pw\nlocalhost:25432:*:sbtest:socket-pw\n")
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "pgpass"))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    assert fill_defaults(parse_dsn("postgresql://sbtest@/sbtest?host=/run/pg&port=25432")).password == "socket-pw"
    assert fill_defaults(parse_dsn("postgresql://sbtest@127.0.0.1:25432/sbtest")).password == "tcp-pw"
