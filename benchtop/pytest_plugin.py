"""pytest plugin (entry point "benchtop"): performance checks in your own suite.

    def test_point_selects_stay_fast(benchtop_run):
        result = benchtop_run(workload="oltp_point_select", threads=4, time=5)
        assert result.latency_ms.p99 < 5
        assert result.errors == 0

    def test_the_new_option_costs_no_throughput(benchtop_ab):
        comparison = benchtop_ab(a="", b="--point-selects 11", rounds=6, round_time=1)
        assert comparison.tps.no_regression_beyond(0.05), comparison.text()

The database is the `dsn=` argument, else `--benchtop-dsn` (or the
BENCHTOP_DSN environment variable), else a temporary embedded SQLite
database.  Runs are headless, in-process and silent; a failed run fails the
test with benchtop's one-line error.  See docs/pytest-plugin.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

if TYPE_CHECKING:  # the comparison's types load numpy: not in every pytest session that never compares
    from benchtop.ab.result import AbResult

_SCHEMES = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgres", "postgres": "postgres",
            "pgbouncer": "postgres", "sqlite": "sqlite"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("benchtop", "benchtop performance checks")
    group.addoption("--benchtop-dsn", dest="benchtop_dsn", default=None, metavar="DSN",
                    help="database for benchtop_run when a test names none, e.g. mysql://sbtest@127.0.0.1:3306/sbtest "
                         "(default: $BENCHTOP_DSN, else a temporary SQLite database)")
    group.addoption("--benchtop-out", dest="benchtop_out", default=None, metavar="DIR",
                    help="keep each benchtop_run's results folder under DIR/<test name>")


class Figures(dict):
    """Latency figures: `figures["p99"]` and `figures.p99` alike (milliseconds)."""

    def __getattr__(self, name: str) -> float:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no latency figure {name!r} (have: {', '.join(self)})") from None


class BenchResult:
    """A RunSummary with friendlier access: `latency_ms.p99`, `errors` as a
    count (`errors_by_kind` for the split); everything else is the summary's."""

    def __init__(self, summary: Any, folder: Path | None = None) -> None:
        self.summary = summary
        self.folder = folder
        self.latency_ms = Figures(summary.latency_ms)
        self.service_latency_ms = Figures(summary.service_latency_ms)
        self.errors = summary.error_count
        self.errors_by_kind = {k: v for k, v in summary.errors.items() if v}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.summary, name)

    def to_dict(self) -> dict[str, Any]:
        return self.summary.to_dict()

    def __repr__(self) -> str:
        return (f"BenchResult(tps={self.summary.tps:.1f}, p99={self.latency_ms.get('p99', 0.0):.3f}ms, "
                f"errors={self.errors}, stopped_by={self.summary.stopped_by!r})")


def _engine_of(dsn: str) -> str:
    scheme = dsn.split("://", 1)[0].lower() if "://" in dsn else ""
    if scheme not in _SCHEMES:
        raise pytest.UsageError(f"benchtop_run: cannot tell the engine of DSN {dsn!r}: use mysql:// or postgresql://")
    return _SCHEMES[scheme]


def run_benchmark(dsn: str | None = None, workload: str = "oltp_point_select", threads: int = 1,
                  time: float = 5.0, engine: str | None = None, prepare: bool = False,
                  out: Path | None = None, **options: Any) -> BenchResult:
    """One headless run in this process, with nothing printed. Raises
    RuntimeError (one line) if it cannot start or fails.  `prepare=True`
    creates and loads the tables when they are missing."""
    # imported on use: pytest loads this plugin in every session of every
    # project where benchtop is installed, most of which never run a benchmark
    from benchtop.commands.exits import user_errors
    from benchtop.errors import UsageError, one_line
    from benchtop.options.run_options import options_from_mapping
    from benchtop.run.headless import LinePrinter, run_headless
    from benchtop.session import RunSession
    from benchtop.stopping import StopFlag

    expected: tuple[type[BaseException], ...] = (UsageError, ValueError, *user_errors())
    values: dict[str, Any] = {"headless": True, "engine": engine or (_engine_of(dsn) if dsn else "sqlite"),
                              "workload": workload, "threads": threads, "time": time, **options}
    if dsn:
        values["dsn"] = dsn
    if out is not None:
        values["out"] = str(out)
    try:
        opts = options_from_mapping({k: v for k, v in values.items() if v is not None})
        # the embedded default is prepared by the session; monitoring and
        # instrumentation are for people watching, not for assertions
        with RunSession(opts, monitor=False, instrumentation=False, prepare_missing=prepare, progress=None) as session:
            summary = run_headless(session.controller(), LinePrinter(None, opts.json, opts.percentile), StopFlag())
    except expected as exc:
        raise RuntimeError(f"benchtop_run: {one_line(exc)}") from None
    assert summary is not None  # a single run always has a summary
    if summary.stopped_by.startswith("error:"):
        raise RuntimeError(f"benchtop_run: the run failed: {summary.stopped_by[6:].strip()}")
    return BenchResult(summary, Path(opts.out) if opts.out else None)


def run_comparison(a: str = "", b: str = "", rounds: int = 6, round_time: float = 2.0, dsn: str | None = None,
                   workload: str = "oltp_point_select", engine: str | None = None, out: Path | None = None,
                   until_confident: bool = False, resolution: float = 0.02, max_time: float = 600.0,
                   seed: int | None = None, turn: float = 0.1, **options: object) -> AbResult:
    """`benchtop ab` in this process, with nothing printed: `rounds` rounds
    of side A and side B (`a`, `b`: their options and --set NAME=VALUE
    settings, as on the command line; "" is the shared options alone),
    taking turns of about `turn` seconds (0, or sides that set settings: one run
    of each in a random order), `round_time` seconds each after a warm-up
    (`warmup=`, default 1 s); `options` are shared by both.  The
    result is what ab.json is written from (in `out`, a new folder when
    None).  Raises RuntimeError (one line) if it cannot start or a run fails."""
    import tempfile

    from benchtop.ab.settings import ab_settings
    from benchtop.commands.ab import compare_sides, prepare_comparison
    from benchtop.commands.exits import user_errors
    from benchtop.errors import UsageError, one_line
    from benchtop.options.run_options import argv_from_mapping
    from benchtop.stopping import StopFlag

    expected: tuple[type[BaseException], ...] = (UsageError, ValueError, *user_errors())
    shared: dict[str, object] = {"engine": engine or (_engine_of(dsn) if dsn else "sqlite"), "workload": workload,
                                 **options}
    if dsn:
        shared["dsn"] = dsn
    values: dict[str, object] = {"a": a, "b": b, "rounds": rounds, "round_time": round_time,
                                 "until_confident": until_confident, "resolution": resolution, "max_time": max_time,
                                 "turn": turn,
                                 "out": str(out) if out is not None else tempfile.mkdtemp(prefix="benchtop-ab-")}
    if seed is not None:
        values["seed"] = seed
    try:
        # the stop flag is not installed: pytest keeps its own Ctrl-C
        result, failed = compare_sides(prepare_comparison(argv_from_mapping(shared), ab_settings(values)), StopFlag(),
                                       None)
    except expected as exc:
        raise RuntimeError(f"benchtop_ab: {one_line(exc)}") from None
    if failed:
        raise RuntimeError(f"benchtop_ab: {failed}")
    return result


def _leaf(request: pytest.FixtureRequest, count: int) -> str:
    """A call's results folder name: the test's, numbered from its second call."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    return name if count == 1 else f"{name}-{count}"


def _dsn(request: pytest.FixtureRequest, dsn: str | None, options: dict[str, Any]) -> str | None:
    """The DSN a call names, else the suite's (--benchtop-dsn, BENCHTOP_DSN) for a server engine."""
    if dsn is None and options.get("engine") in (None, "mysql", "postgres", "postgresql"):
        return request.config.getoption("benchtop_dsn") or os.environ.get("BENCHTOP_DSN") or None
    return dsn


@pytest.fixture
def benchtop_run(request: pytest.FixtureRequest) -> Iterator[Callable[..., BenchResult]]:
    """`benchtop_run(dsn=None, workload="oltp_point_select", threads=1, time=5,
    engine=None, prepare=False, **options)` -> BenchResult.  Options are
    benchtop's command-line options with underscores (rate, table_size,
    tables, rand_type, stop_if=[...], point_selects, ...)."""
    out_root = request.config.getoption("benchtop_out")
    count = 0

    def run(dsn: str | None = None, **kwargs: Any) -> BenchResult:
        nonlocal count
        count += 1
        out = Path(out_root) / _leaf(request, count) if out_root else None
        try:
            return run_benchmark(_dsn(request, dsn, kwargs), out=out, **kwargs)
        except RuntimeError as exc:
            problem = str(exc)
        pytest.fail(problem, pytrace=False)  # outside the except: no chained traceback

    yield run


@pytest.fixture
def benchtop_ab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., AbResult]]:
    """`benchtop_ab(a="", b="", rounds=6, round_time=2, dsn=None, workload="oltp_point_select", engine=None,
    until_confident=False, resolution=0.02, max_time=600, seed=None, **options)` -> the comparison
    (benchtop.ab.result.AbResult): `.tps` and `.p99` are B/A with `.ratio`, `.ci_low`, `.ci_high`,
    `.p_value`, `.verdict` and `.no_regression_beyond(0.05)`; `.metric("p95_ms")` the others; `.text()`
    the verdict's line.  The database as for benchtop_run; the comparison's folder (ab.json and each
    run's) under --benchtop-out DIR/<test name>, else the test's temporary folder."""
    out_root = request.config.getoption("benchtop_out")
    count = 0

    def compare(dsn: str | None = None, **kwargs: Any) -> AbResult:
        nonlocal count
        count += 1
        out = Path(out_root) / _leaf(request, count) if out_root else tmp_path / f"ab-{count}"
        try:
            return run_comparison(dsn=_dsn(request, dsn, kwargs), out=out, **kwargs)
        except RuntimeError as exc:
            problem = str(exc)
        pytest.fail(problem, pytrace=False)  # outside the except: no chained traceback

    yield compare
