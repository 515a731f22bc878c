"""Event-loop workers in C under AddressSanitizer + UBSan + LeakSanitizer
and under ThreadSanitizer (both told of every stack switch), against the
harness's PostgreSQL frozen with SIGSTOP: connections added and retired on
running loops, every connection of both loops ended by abort_io at once,
loops inside connect ended too, the engine freed once
(native/tests/test_loops.c)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.servers import Server
from tests.native.sanitized import SANITIZERS, build, run_frozen
from tests.realdb.test_stop_path import freeze

pytestmark = pytest.mark.realdb


@pytest.fixture(scope="module", params=sorted(SANITIZERS))
def loops_binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return build("test_loops", request.param, tmp_path_factory)


def test_event_loops_are_clean_under_sanitizers(loops_binary: tuple[Path, dict], pg_server: Server) -> None:
    run_frozen(loops_binary, pg_server, lambda sig: freeze(pg_server, sig), "done")
