"""`benchtop report` on a knee results folder: throughput and p99 against
concurrency with the probes, the USL fit, the answer and the limit, and the
one-paragraph answer in the terminal and the HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchtop.commands import report as cli
from benchtop.knee.answer import answer_text
from benchtop.knee.search import KneeSearch, Probe, SearchSettings
from benchtop.knee.usl import usl
from benchtop.report.data import load_runs
from benchtop.report.plots import build_plots, close, draw


@pytest.fixture
def knee_folder(tmp_path: Path) -> Path:
    search = KneeSearch(SearchSettings(low=1, high=64, p99_limit_ms=20.0))
    while (x := search.next()) is not None:
        tps = usl(x, 1000.0, 0.03, 0.0003)
        search.record(Probe(x, tps, 3 * x / tps * 1000, transactions=int(tps * 3), time_s=3.0))
    knee = search.to_dict()
    knee["elapsed_s"] = 30.0
    folder = tmp_path / "knee"
    folder.mkdir()
    steps = [{"index": i, "threads": p["threads"], "tps": p["tps"], "latency_ms": {"p99": p["p99_ms"]}}
             for i, p in enumerate(knee["probes"])]
    (folder / "summary.json").write_text(json.dumps({"type": "summary", "tps": 1.0, "threads": 1, "knee": knee,
                                                     "steps": steps}))
    (folder / "intervals.jsonl").write_text(json.dumps({"t": 1.0, "tps": 100.0, "threads": 1}) + "\n")
    (folder / "config.json").write_text(json.dumps({"engine": "sqlite"}))
    return folder


def test_knee_plots_carry_probes_fit_and_limit(knee_folder: Path) -> None:
    runs = load_runs([knee_folder])
    plots = {p.name: p for p in build_plots(runs)}
    assert "knee_tps" in plots and "knee_p99" in plots
    assert "sweep_tps" not in plots  # the probes are drawn once, with their fit
    knee = runs[0].summary["knee"]
    tps = plots["knee_tps"]
    points = next(s for s in tps.series if s.style == "points")
    assert points.x == tuple(float(p["threads"]) for p in knee["probes"])
    fit = next(s for s in tps.series if s.style == "fit")
    u = knee["usl"]
    assert fit.y[10] == pytest.approx(usl(fit.x[10], u["lambda"], u["sigma"], u["kappa"]))
    assert any(text.startswith("USL peak") for _, text in tps.marks)
    best = next(s for s in tps.series if s.style == "best")
    assert best.x == (float(knee["best"]["threads"]),)
    assert plots["knee_p99"].hlines == ((20.0, "p99 limit 20 ms"),)
    for plot in (tps, plots["knee_p99"]):
        close(draw(plot))


def test_report_prints_the_answer(knee_folder: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main([str(knee_folder)]) == 0
    text = capsys.readouterr().out
    knee = json.loads((knee_folder / "summary.json").read_text())["knee"]
    assert f"knee: {answer_text(knee)}" in text
    assert "(limit 20 ms), steady; USL peak at" in text and "contention 0.03" in text
    assert cli.main([str(knee_folder), "--html", str(tmp_path / "r.html")]) == 0
    assert "<h2>Knee</h2>" in (tmp_path / "r.html").read_text()


def test_answer_of_a_search_with_no_setting_under_the_limit() -> None:
    text = answer_text({"setting": "threads", "p99_limit_ms": 1.0, "best": None, "usl": None, "probes": [{}],
                        "reason": "the limit is broken at the lowest setting"})
    assert text.startswith("best: none; the lowest setting already breaks the limit (1 ms). 1 probe (")
    rate = answer_text({"setting": "rate", "p99_limit_ms": 5.0, "best": {"rate": 8000.0, "tps": 7990.0, "p99_ms": 4.2},
                        "usl": None, "probes": [{}, {}]})
    assert rate.startswith("best: rate 8000/s, 7.99k tps at p99 4.2 ms (limit 5 ms).")


def test_a_loose_fit_is_said_to_be_one() -> None:
    knee = {"setting": "threads", "p99_limit_ms": 2.0, "best": {"threads": 3, "tps": 37610.0, "p99_ms": 0.229},
            "usl": {"lambda": 14739.0, "sigma": 0.0, "sigma_err": 2.6, "kappa": 0.1405, "kappa_err": 0.62,
                    "peak_threads": 2.67, "peak_tps": 24194.0, "r2": 0.2163, "limit_threads": 3.44},
            "probes": [{}] * 6, "range": [1, 32]}
    text = answer_text(knee)
    # a fit explaining a fifth of the probes' variance places no peak and no limit break
    assert "USL: a loose fit (r² 0.22), no peak or limit break taken from it; contention" in text
    assert "coherency 0.141 ± 0.6" in text
    assert "peak at" not in text and "breaks near" not in text


def test_the_chart_and_the_answer_agree_on_where_the_limit_breaks(knee_folder: Path, tmp_path: Path) -> None:
    """A best of 16 threads with the fit's limit at 13: the chart drew 'limit
    breaks 13' left of the best star while the answer said both."""
    knee = json.loads((knee_folder / "summary.json").read_text())["knee"]
    best = knee["best"]["threads"]
    knee["usl"]["limit_threads"] = best - 3.0
    text = answer_text(knee)
    assert "limit breaks near" not in text and "before the best probe" in text
    from benchtop.report.plots import knee_plots

    tps = next(p for p in knee_plots("k", knee) if p.name == "knee_tps")
    assert not any("limit breaks" in label for _, label in tps.marks)
    knee["usl"]["limit_threads"] = best + 3.0  # past the best: said and drawn, at the same place
    tps = next(p for p in knee_plots("k", knee) if p.name == "knee_tps")
    assert f"limit breaks near {best + 3}" in answer_text(knee)
    assert (best + 3.0, f"limit breaks {best + 3}") in tps.marks



def test_the_chart_marks_no_peak_from_a_loose_fit_as_the_answer_says_none(knee_folder: Path) -> None:
    """A folder whose fit kept its peak (written before loose fits dropped it)."""
    from benchtop.report.plots import knee_plots

    knee = json.loads((knee_folder / "summary.json").read_text())["knee"]
    knee["usl"].update(r2=0.5, peak_threads=knee["best"]["threads"] + 1.0)
    tps = next(p for p in knee_plots("k", knee) if p.name == "knee_tps")
    assert "peak at" not in answer_text(knee)
    assert not any("USL peak" in label or "limit breaks" in label for _, label in tps.marks)


def test_knee_ticks_stand_at_the_probes(knee_folder: Path) -> None:
    plots = {p.name: p for p in build_plots(load_runs([knee_folder]))}
    fig = draw(plots["knee_tps"])
    try:
        probes = sorted({x for s in plots["knee_tps"].series if s.style == "points" for x in s.x})
        ticks = [float(t) for t in fig.axes[0].get_xticks()]
        assert len(probes) > 12 or ticks == probes
    finally:
        close(fig)
