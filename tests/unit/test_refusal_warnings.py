"""The summary's warning about workers that never connected says who said
what: the server's own words for a refusal, the engine's account when the
server took the connection and never answered (PgBouncer at its open-files
limit: accept() fails and the kernel's backlog holds the connection)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchtop.engine.histogram import Histogram
from benchtop.engine.sample import CONNECT_UNANSWERED
from benchtop.record.samples import RunSummary

UNANSWERED = (CONNECT_UNANSWERED + " before the run stopped (a pooler at its open-files limit? "
              "a full listen backlog?)")
BASE = RunSummary(time_s=2.0, threads=60, rate=0.0, transactions=1000, rollbacks=0, reads=1000, writes=0, other=0,
                  errors={}, reconnects=0, connects=28, connect_ms_avg=1.0, latency_ms={}, service_latency_ms={},
                  latency=Histogram.empty(), service=Histogram.empty(), connect_failures=32, connected_max=28)


def test_a_refusal_quotes_the_server():
    warning = replace(BASE, refused_reason="sorry, too many clients already").warnings[0]
    assert warning == ("only 28 of 60 workers were connected at once: the server refused 32 connection attempts "
                       "(the server said: sorry, too many clients already); the results are for 28 workers")


def test_an_unanswered_start_up_is_not_the_servers_word():
    warning = replace(BASE, refused_reason=UNANSWERED).warnings[0]
    assert "32 connection attempts were never answered (no answer to the connection's start-up" in warning
    assert "the server said" not in warning and "stopped)" not in warning.replace("run stopped", "")


def test_the_engine_text_begins_as_the_python_side_reads_it():
    header = (Path(__file__).parents[2] / "native" / "driver.h").read_text(encoding="utf-8")
    assert '"' + CONNECT_UNANSWERED + " " in header
