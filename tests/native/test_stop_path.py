"""The engine's stop path in C, under AddressSanitizer + UBSan + LeakSanitizer
and under ThreadSanitizer, against the harness's MariaDB frozen with SIGSTOP:
blocked reads are unblocked by abort_io, the engine is freed exactly once,
and workers stuck in connect are detached and free it themselves
(native/tests/test_stop.c)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.servers import Server
from tests.native.sanitized import SANITIZERS, build, run_frozen

pytestmark = pytest.mark.realdb


@pytest.fixture(scope="module", params=sorted(SANITIZERS))
def stop_binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return build("test_stop", request.param, tmp_path_factory)


def test_stop_path_is_clean_under_sanitizers(stop_binary: tuple[Path, dict], mysql_server: Server) -> None:
    run_frozen(stop_binary, mysql_server, mysql_server.kill, "detached")
