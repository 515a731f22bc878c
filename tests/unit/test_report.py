"""`benchtop report` on synthetic results folders: the table, the terminal
rendition, PNG files, one self-contained HTML file, and plots whose data is
the data in the folders."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from benchtop.engine.histogram import Histogram
from benchtop.commands import report as cli
from benchtop.report.data import load_runs, table_rows
from benchtop.report.plots import SPREAD_APART, build_plots, close, draw, spread


def _write(folder: Path, summary: dict, intervals: list[dict], latencies_ns: list[int],
           config: dict | None = None, target: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "intervals.jsonl").write_text("".join(json.dumps(iv) + "\n" for iv in intervals))
    (folder / "config.json").write_text(json.dumps(config or {"engine": "mysql"}))
    hist = Histogram.from_values_ns(latencies_ns)
    (folder / "histogram.json").write_text(json.dumps({"unit": "ns", "latency": hist.to_sparse()}))
    if target is not None:
        (folder / "target.json").write_text(json.dumps(target))
    return folder


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    # a plain run on unsafe settings, with a one-second drop to zero
    tps = [1000.0, 1010.0, 990.0, 0.0, 1005.0, 995.0]
    plain = _write(
        tmp_path / "unsafe",
        {"type": "summary", "tps": 833.33, "threads": 8, "rate": 0.0, "errors": 2,
         "latency_ms": {"p95": 2.5, "p99": 4.0}, "steps": [{"threads": 8, "tps": 833.33}]},
        [{"type": "interval", "t": float(i + 1), "tps": v, "threads": 8} for i, v in enumerate(tps)],
        [1_000_000] * 90 + [5_000_000] * 10,
        target={"kind": "mysql", "settings": {"innodb_flush_log_at_trx_commit": 2, "log_bin": "OFF",
                                              "innodb_doublewrite": "ON"}},
    )
    # a two-step sweep on durable settings
    steps = [
        {"index": 0, "threads": 1, "rate": 0.0, "tps": 100.0, "errors": 0, "latency_ms": {"p95": 1.0, "p99": 1.5},
         "t_start": 0.0, "steady_state": {"samples": 2, "cv": 0.01}},
        {"index": 1, "threads": 4, "rate": 0.0, "tps": 350.0, "errors": 0, "latency_ms": {"p95": 2.0, "p99": 3.5},
         "t_start": 3.0, "steady_state": {"samples": 2, "cv": 0.02}},
    ]
    ivs = [
        {"t": 1.0, "dt": 1.0, "tps": 80.0, "step": 0, "warmup": True},
        {"t": 2.0, "dt": 1.0, "tps": 99.0, "step": 0},
        {"t": 3.0, "dt": 1.0, "tps": 101.0, "step": 0},
        {"t": 4.0, "dt": 1.0, "tps": 200.0, "step": 1, "warmup": True},
        {"t": 5.0, "dt": 1.0, "tps": 345.0, "step": 1},
        {"t": 6.0, "dt": 1.0, "tps": 355.0, "step": 1},
    ]
    sweep = _write(
        tmp_path / "sweep",
        {"type": "summary", "tps": 225.0, "threads": 4, "steps": steps,
         "validity": {"status": "durable", "reasons": [], "settings": {}}},
        ivs, [500_000] * 50 + [2_000_000] * 50,
    )
    return [plain, sweep]


def test_table_rows_mark_unsafe_runs_and_split_steps(folders):
    runs = load_runs(folders)
    rows = table_rows(runs)
    assert [r.name for r in rows] == ["unsafe", "sweep #1", "sweep #2"]
    assert rows[0].validity == "UNSAFE" and not rows[0].validity_ok
    assert [r.tps for r in rows] == [833.33, 100.0, 350.0]
    assert [r.p99 for r in rows] == [4.0, 1.5, 3.5]
    assert rows[1].validity == "ok"
    # steady state and stalls are computed for folders that lack them
    assert runs[0].summary["stalls"][0]["start"] == 3.0


def test_terminal_rendition(folders, capsys):
    assert cli.main([str(f) for f in folders]) == 0
    out = capsys.readouterr().out
    assert re.search(r"unsafe\s+8\s+-\s+833\.33\s+995\.0\s+1010\.0\s+2\.500\s+4\.000\s+2\s+.*UNSAFE", out)
    assert "unsafe (UNSAFE)" in out and "▁" in out and "█" in out
    assert "CRASH-UNSAFE settings (innodb_flush_log_at_trx_commit=2)" in out
    assert "stall at 3s" in out


def test_only_a_run_without_its_summary_is_unfinished(tmp_path, capsys):
    """summary.json's `unfinished` counts what was in flight when a run ended
    as it should (a benchtop ab round's, here 2): such a run is finished; one
    killed before writing summary.json is not."""
    ivs = [{"type": "interval", "t": float(i + 1), "tps": 500.0, "threads": 2} for i in range(3)]
    ended = _write(tmp_path / "round-01-b", {"type": "summary", "tps": 500.0, "threads": 2, "transactions": 1500,
                                             "unfinished": 2, "stopped_by": "time",
                                             "latency_ms": {"p95": 2.0, "p99": 3.0}},
                   ivs, [2_000_000] * 100, config={"engine": "null"})
    killed = _write(tmp_path / "killed", {}, ivs, [2_000_000] * 100, config={"engine": "null"})
    (killed / "summary.json").unlink()
    runs = load_runs([ended, killed])
    assert [(r.unfinished, r.label) for r in runs] == [(False, "round-01-b"), (True, "killed (unfinished)")]
    assert [row.name for row in table_rows(runs)] == ["round-01-b", "killed (unfinished)"]
    assert cli.main([str(ended), str(killed)]) == 0
    out = capsys.readouterr().out
    assert "round-01-b (unfinished)" not in out and "round-01-b: time" not in out
    assert "killed: unfinished: no summary.json (the run was killed or its disk filled)" in out


def test_plot_data_matches_the_results(folders):
    runs = load_runs(folders)
    plots = {p.name: p for p in build_plots(runs)}
    assert set(plots) == {"throughput", "jitter", "boxplot", "latency_histogram", "latency_cdf", "sweep_tps",
                          "sweep_p99"}
    tp = plots["throughput"]
    assert tp.series[0].y == (1000.0, 1010.0, 990.0, 0.0, 1005.0, 995.0)
    assert tp.series[1].x == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert tp.series[0].label == "unsafe (UNSAFE)"
    box = plots["boxplot"]
    assert [s.y for s in box.series] == [(1000.0, 1010.0, 990.0, 0.0, 1005.0, 995.0), (99.0, 101.0), (345.0, 355.0)]
    assert plots["jitter"].series[2].y == (345.0, 355.0)
    sweep = plots["sweep_tps"].series[0]
    assert (sweep.x, sweep.y) == ((1.0, 4.0), (100.0, 350.0))
    assert plots["sweep_p99"].series[0].y == (1.5, 3.5)
    hist = plots["latency_histogram"].series[0]
    assert sorted(hist.y) == [10.0, 90.0] and sum(hist.y) == pytest.approx(100.0)
    assert hist.x[0] == pytest.approx(1.0, rel=0.01) and hist.x[1] == pytest.approx(5.0, rel=0.01)
    # the percentile view of the same histogram: 90% at ~1 ms (x = 1/(1-0.9) = 10), the rest up to ~5 ms
    cdf = plots["latency_cdf"].series[0]
    assert cdf.x[0] == 1.0 and cdf.x[1] == pytest.approx(10.0) and cdf.y[1] == pytest.approx(1.0, rel=0.02)
    assert cdf.y[-1] == pytest.approx(5.0, rel=0.02) and list(cdf.y) == sorted(cdf.y)
    # and the figure draws exactly that data
    fig = draw(tp)
    try:
        ax = fig.axes[0]
        assert tuple(ax.lines[0].get_ydata()) == tp.series[0].y
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["unsafe (UNSAFE)", "sweep"]
    finally:
        close(fig)


def _tick_labels(axis) -> list[str]:
    lo, hi = sorted(axis.get_view_interval())
    return [t.get_text() for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs()) if lo <= v <= hi and t.get_text()]


def test_log_axes_say_plain_units_and_rates_start_at_zero(folders):
    """Log ticks were 2x10^0, 3x10^0, 6x10^0, 10 (matplotlib's minor labels)
    and sweep_tps started its y axis at the lowest point."""
    plots = {p.name: p for p in build_plots(load_runs(folders))}
    for name, axis_of, wanted in (("sweep_p99", "yaxis", {"2 ms", "3 ms"}), ("latency_cdf", "yaxis", {"1 ms", "2 ms"}),
                                  ("latency_histogram", "xaxis", {"1 ms", "2 ms", "5 ms"})):
        fig = draw(plots[name])
        try:
            fig.canvas.draw()
            labels = _tick_labels(getattr(fig.axes[0], axis_of))
            assert labels and all(re.fullmatch(r"\d+(\.\d+)? (ns|µs|ms|s)", label) for label in labels), (name, labels)
            assert wanted <= set(labels), (name, labels)
            minor = [t.get_text() for t in getattr(fig.axes[0], axis_of).get_minorticklabels() if t.get_text()]
            assert not minor, (name, minor)
        finally:
            close(fig)
    for name in ("sweep_tps", "throughput", "boxplot", "jitter"):
        fig = draw(plots[name])
        try:
            apart = name in ("boxplot", "jitter") and spread(plots[name]) > SPREAD_APART
            # runs far apart: a panel each on its own scale, none squashed flat
            assert len(fig.axes) == (len(plots[name].series) if apart else 1), name
            for ax, series in zip(fig.axes, plots[name].series if apart else [None]):
                assert ax.get_ylim()[0] == 0.0, name
                # room above the highest point: no line drawn on the frame
                top = max(y for s in ([series] if series else plots[name].series) for y in s.y)
                assert ax.get_ylim()[1] > top * 1.02, name
        finally:
            close(fig)


def test_png_and_self_contained_html(folders, tmp_path, capsys):
    html_file, png_dir = tmp_path / "r.html", tmp_path / "png"
    assert cli.main([*map(str, folders), "--html", str(html_file), "--png", str(png_dir)]) == 0
    pngs = sorted(p.name for p in png_dir.iterdir())
    assert pngs == sorted(f"{n}.png" for n in
                          ("throughput", "jitter", "boxplot", "latency_histogram", "latency_cdf", "sweep_tps",
                           "sweep_p99"))
    assert all((png_dir / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in pngs)
    text = html_file.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert "<script" not in text and "<link" not in text and "@import" not in text
    assert text.count('src="data:image/png;base64,') == 7
    # the histogram and its percentile view side by side
    assert re.search(r'<div class="pair"><figure><img alt="Latency histogram"[^>]*><figcaption>[^<]*</figcaption>'
                     r'</figure><figure><img alt="Latency by percentile"', text)
    assert 'class="unsafe">UNSAFE<' in text and "CRASH-UNSAFE" in text


def test_errors_are_one_line(tmp_path, capsys, monkeypatch, folders):
    assert cli.main([str(tmp_path / "nope")]) == 1
    assert capsys.readouterr().err.strip() == f"benchtop report: error: {tmp_path / 'nope'}: not a folder"
    (tmp_path / "empty").mkdir()
    assert cli.main([str(tmp_path / "empty")]) == 1
    assert "no summary.json" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert cli.main([str(folders[0]), "--png", str(tmp_path / "p")]) == 1
    err = capsys.readouterr().err
    # the pip of the Python benchtop runs in, not whichever `pip` is first on PATH
    assert err.strip() == f"benchtop report: error: plots need matplotlib: {sys.executable} -m pip install 'matplotlib>=3.7'"


def test_verdict_column_and_paragraph(tmp_path, capsys):
    # a run whose summary.json predates the verdict: computed from its interval lines
    verdicts = ["locks"] * 5 + ["server_cpu"]
    ivs = [{"type": "interval", "t": float(i + 1), "tps": 900.0 + i, "threads": 16,
            "verdict": {"limit": v, "confidence": 0.9, "evidence": f"{i} of 16 sessions waiting on locks",
                        "next": None}} for i, v in enumerate(verdicts)]
    folder = _write(tmp_path / "hot", {"type": "summary", "tps": 902.5, "threads": 16, "rate": 0.0, "errors": 0,
                                       "latency_ms": {"p95": 9.0, "p99": 12.0}}, ivs, [1_000_000] * 10)
    rows = table_rows(load_runs([folder]))
    assert rows[0].limit == "locks 83%"
    assert cli.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"hot\s+16\s+.*\s+locks 83%\s+", out)
    assert "What limits each run" in out
    assert re.search(r"hot: bound by lock waits in 83% of 6 intervals \(\d of 16 sessions waiting on locks\); "
                     r"server CPU 17%", out)
