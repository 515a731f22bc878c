"""`benchtop knee` on a private MariaDB: one live engine through the
probes, a best setting under the limit, the USL fit in summary.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.realdb.test_run_servers import bt

pytestmark = [pytest.mark.realdb, pytest.mark.slow, pytest.mark.alone]

SIZE = ["--tables", "1", "--table-size", "2000"]


def test_knee_on_mysql(mysql_server, tmp_path: Path) -> None:
    bt(mysql_server, "cleanup", *SIZE)
    assert bt(mysql_server, "prepare", *SIZE).returncode == 0
    out = tmp_path / "knee"
    res = bt(mysql_server, "knee", "--headless", "--json", "--workload", "oltp_point_select", *SIZE,
             "--min-threads", "1", "--max-threads", "8", "--p99-limit", "50", "--probe-min", "0.5",
             "--probe-max", "1", "--probe-interval", "0.125", "--settle", "0.125", "--out", str(out), timeout=300)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    probes = [d for d in lines if d["type"] == "probe"]
    assert len(probes) >= 2
    knee = json.loads((out / "summary.json").read_text())["knee"]
    assert knee["best"]["p99_ms"] <= 50 and knee["best"]["tps"] > 0
    if knee["reason"].startswith("the answer kept the limits"):  # held as long as the longest probe before it was given
        assert knee["best"]["confirmed"] is True and knee["held"][-1] == {"threads": knee["best"]["threads"],
                                                                          "kept": True}
    if len({p["threads"] for p in probes}) >= 3:
        assert knee["usl"] is not None and knee["usl"]["sigma"] is not None
    # the workers stay connected between probes: a connection is made only for each thread added
    summary = json.loads((out / "summary.json").read_text())
    threads = [0] + [p["threads"] for p in probes]
    added = sum(max(0, b - a) for a, b in zip(threads, threads[1:]))
    assert summary["connects"] <= added
    bt(mysql_server, "cleanup", *SIZE)
