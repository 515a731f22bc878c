"""OS counters from /proc text and the per-transaction normalisation."""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager
from typing import Iterator

from benchtop.sources.os import OSCounters, OSSource, parse_diskstats, parse_stat, per_transaction
from benchtop.sources.process import clock_ticks

DISKSTATS = """\
   7       0 loop0 50 0 400 0 0 0 0 0 0 0 0
 259       0 nvme0n1 1000 0 80000 0 500 0 40000 0 0 0 0
 259       1 nvme0n1p1 900 0 70000 0 400 0 30000 0 0 0 0
   8       0 sda 10 0 20 0 5 0 10 0 0 0 0
   8       1 sda1 10 0 20 0 5 0 10 0 0 0 0
 253       0 dm-0 999 0 99999 0 999 0 99999 0 0 0 0
"""


def test_diskstats_sums_whole_real_disks_only():
    assert parse_diskstats(DISKSTATS, None) == (1010, 505, 80020, 40010)
    assert parse_diskstats(DISKSTATS, {"sda"}) == (10, 5, 20, 10)


def test_cpu_split_and_per_transaction():
    a = OSCounters(0.0, parse_stat("cpu 100 0 50 800 50 0 0 0\nctxt 1000\n")[0], 0, 0, 0, 0, 1000)
    b = OSCounters(2.0, parse_stat("cpu 200 0 100 1000 100 0 0 0\nctxt 5000\n")[0], 40, 20, 2048, 4096, 5000)
    d = b.delta(a)
    assert d.cpu_pct() == {"user_pct": 25.0, "system_pct": 12.5, "iowait_pct": 12.5, "idle_pct": 50.0, "steal_pct": 0.0}
    per = per_transaction(d, 100)
    assert per["reads"] == 0.4 and per["writes"] == 0.2
    assert per["kb_read"] == 10.24 and per["kb_written"] == 20.48
    assert per["context_switches"] == 40.0
    assert per["cpu_ms"] == round(150 * 1000 / 100 / 100, 4)  # 150 busy jiffies at 100 Hz over 100 transactions
    assert per_transaction(d, 0)["cpu_ms"] is None


@contextmanager
def _this_process_as_server(per_process: bool = True) -> Iterator[OSSource]:
    """An OS source whose local server is this test process, found by a port it listens on."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        src = OSSource(server_port=listener.getsockname()[1], per_process=per_process)
        src.connect()
        yield src
    finally:
        listener.close()


def test_host_state_panels_from_this_host() -> None:
    """top/vmstat/iostat -x's rest: load, memory and swap, each disk, and the
    local server's processes with CPU and I/O (here: this test process, found
    by the port it listens on)."""
    import os
    import time

    from benchtop.sources.fields import DISKS, LOAD, MEMORY, SERVER_PROCESSES

    with _this_process_as_server() as src:
        src.poll()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:  # some CPU of our own to see
            sum(range(10000))
        snap = src.poll()
    load, memory = snap.panels[LOAD], snap.panels[MEMORY]
    assert load["cpus"] == os.cpu_count() and load["load_1m"] >= 0
    assert 0 < memory["used_bytes"] <= memory["total_bytes"] and "swap_out_bytes_per_s" in memory
    assert isinstance(snap.panels[DISKS], list)
    procs = snap.panels[SERVER_PROCESSES]
    assert isinstance(procs, list), procs
    mine = next(r for r in procs if r["pid"] == os.getpid())
    assert mine["cpu_pct"] > 0 and mine["rss_bytes"] > 0 and "python" in mine["title"]


def test_without_a_screen_the_server_is_read_whole_not_process_by_process() -> None:
    """A headless run's OS source (per_process=False): the server tree's CPU,
    memory and process count, no row per process (nor their I/O files)."""
    import os

    from benchtop.sources.base import PER_PROCESS_NOT_READ
    from benchtop.sources.fields import SERVER_PROCESS, SERVER_PROCESSES

    with _this_process_as_server(per_process=False) as src:
        src.poll()
        snap = src.poll()
    whole = snap.panels[SERVER_PROCESS]
    assert whole["pid"] == os.getpid() and whole["processes"] >= 1 and whole["rss_bytes"] > 0
    assert whole["cpu_cores"] is not None
    assert snap.panels[SERVER_PROCESSES] == PER_PROCESS_NOT_READ


def test_in_a_run_the_server_tree_comes_from_the_runs_own_pass_over_proc() -> None:
    """With the run's cost meter making a pass over /proc each interval, the
    host's source reads its server tree from that pass (not a second listing
    of every process), its CPU rate counted from when that pass was made."""
    import os

    from benchtop.sources.fields import SERVER_PROCESS
    from benchtop.sources.proc_table import LatestPass, PidStat, StatsPass

    shared = LatestPass()
    with _this_process_as_server(per_process=False) as src:
        src._shared = shared  # noqa: SLF001 - the session hands it over at construction
        src.poll()  # finds this process by its port (no pass shared yet: it makes its own)
        me, t = PidStat("python", 1, 0, 0, 1, 100), time.monotonic() - 0.5
        shared.publish(StatsPass(t, {os.getpid(): me}))
        first = src.poll()
        shared.publish(StatsPass(t + 0.3, {os.getpid(): me._replace(ticks=clock_ticks() * 3 // 10)}))
        second = src.poll()
    assert first.panels[SERVER_PROCESS]["processes"] == 1  # the pass's one process, not this host's listing
    assert second.panels[SERVER_PROCESS]["cpu_cores"] == 1.0  # 0.3 s of CPU over the 0.3 s between the passes
    # a screen's rows per process read their I/O at the poll: their rates count from a pass of the poll's own
    with _this_process_as_server(per_process=True) as src:
        src._shared = shared  # noqa: SLF001
        src.poll()
        shared.publish(StatsPass(time.monotonic(), {os.getpid(): me._replace(ticks=10**9)}))
        third = src.poll()
    assert third.panels[SERVER_PROCESS]["cpu_cores"] < 100
