"""Per-type costs of a run whose rate-limited type falls behind: its
transactions' waits for their tickets cost the host nothing, so the host's
CPU is shared by the time the workers spent serving each type."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import run_benchtop


def test_a_type_behind_its_rate_is_not_charged_its_queue_time(tmp_path: Path) -> None:
    db = str(tmp_path / "ib.db")
    prep = run_benchtop("prepare", "--engine", "sqlite", "--db", db, "--workload", "insert_benchmark", "--rows", "2000")
    assert prep.returncode == 0, prep.stderr
    # one inserter asked for far more than it can do: each insert's latency grows by its wait for a ticket
    res = run_benchtop("--headless", "--json", "--engine", "sqlite", "--db", db, "--workload", "insert_benchmark",
                       "--rows", "2000", "--group", "inserters.rate=1000000", "--group", "queriers.threads=2",
                       "--time", "3")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout.splitlines()[-1])
    by_type = summary["by_type"]
    assert summary["txn_latency_ms"]["insert"]["p50"] > 20 * summary["txn_latency_ms"]["market_query"]["p50"]
    cpu = {name: t["ops"] * t["cpu_s"] for name, t in by_type.items()}
    # one inserter beside two queriers, all busy: about a third of the workers' time serves inserts
    # (split by latency, inserts took 98.7% of the host's CPU and the queries next to nothing)
    share = cpu["insert"] / sum(cpu.values())
    assert 0.1 < share < 0.7, by_type
    assert all(t["cpu_s"] > 0 for t in by_type.values())
