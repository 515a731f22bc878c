"""bench/roundtrip_floor.c, the minimal client `bench/vs_peers.py --floor` sets
benchtop's point select against: built by the script's own build step, run
against a real PostgreSQL."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.fixtures.servers import Server

pytestmark = pytest.mark.realdb

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "floor_probe"


@pytest.fixture(scope="module")
def floor_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("vs_peers", ROOT / "bench" / "vs_peers.py")
    assert spec and spec.loader
    vs_peers = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = vs_peers  # its dataclasses look their module up there
    spec.loader.exec_module(vs_peers)
    exe: Path = vs_peers.build_floor(tmp_path_factory.mktemp("floor"))
    return exe


def _run(exe: Path, server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    conninfo = (f"host={server.host} port={server.port} user={server.user} dbname={server.database} "
                f"options='-c search_path={SCHEMA}'")
    env = {**os.environ, "PGPASSWORD": server.password or ""}
    return subprocess.run([str(exe), conninfo, *args], capture_output=True, text=True, timeout=60, env=env,
                          check=False)


@pytest.fixture
def tables(pg_server: Server) -> Iterator[Callable[[int], None]]:
    """sbtest1..N (100 rows each) and pgbench_accounts (100 rows) in a schema
    of their own, dropped afterwards."""
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        def create(count: int) -> None:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
            conn.execute(f"CREATE SCHEMA {SCHEMA}")
            for t in range(1, count + 1):
                conn.execute(f"CREATE TABLE {SCHEMA}.sbtest{t} (id int PRIMARY KEY, c text)")
                conn.execute(f"INSERT INTO {SCHEMA}.sbtest{t} SELECT g, repeat('x', 120) FROM generate_series(1, 100) g")
            conn.execute(f"CREATE TABLE {SCHEMA}.pgbench_accounts (aid int PRIMARY KEY, abalance int)")
            conn.execute(f"INSERT INTO {SCHEMA}.pgbench_accounts SELECT g, 0 FROM generate_series(1, 100) g")
        yield create
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def test_point_selects_on_several_connections_per_thread(floor_binary: Path, pg_server: Server,
                                                         tables: Callable[[int], None]) -> None:
    tables(4)
    done = _run(floor_binary, pg_server, "2", "2", "1", "100")
    assert done.returncode == 0, done.stderr
    transactions = int(done.stdout.split("transactions:")[1])
    assert transactions > 100


def test_select_only_on_many_connections_per_epoll_thread(floor_binary: Path, pg_server: Server,
                                                          tables: Callable[[int], None]) -> None:
    tables(0)
    done = _run(floor_binary, pg_server, "2", "8", "1", "100", "--epoll", "--normal", "--pgbench")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split("transactions:")[1]) > 100


def test_a_missing_table_fails_with_the_servers_message(floor_binary: Path, pg_server: Server,
                                                        tables: Callable[[int], None]) -> None:
    tables(3)
    done = _run(floor_binary, pg_server, "1", "1", "1", "100")
    assert done.returncode == 1
    assert 'relation "sbtest4" does not exist' in done.stderr


def test_bad_arguments_get_the_usage(floor_binary: Path) -> None:
    done = subprocess.run([str(floor_binary), "x", "0", "1", "1", "1"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "THREADS" in done.stderr
    unknown = subprocess.run([str(floor_binary), "x", "1", "1", "1", "1", "--fast"], capture_output=True, text=True,
                             check=False)
    assert unknown.returncode == 2 and unknown.stderr.startswith("usage: roundtrip_floor")
