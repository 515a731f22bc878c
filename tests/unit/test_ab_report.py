"""`benchtop report` on a comparison's folder (ab.json beside a folder per
round and side): the verdict and the rounds in the terminal and the HTML,
and the per-round B/A of TPS and p99 drawn with the comparison's estimate
and its 95% interval as a band."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from benchtop.ab.result import AbResult
from benchtop.ab.rounds import Plan, Round, SideFigures
from benchtop.ab.sides import parse_side
from benchtop.commands import report as cli
from benchtop.report.ab import ab_plots, load_ab
from benchtop.report.plots import close, draw

# B about 10% slower in TPS and 8% over A's p99 in every round, with some noise
TPS_B = [0.88, 0.91, 0.90, 0.89, 0.92, 0.90, 0.87, 0.91]
P99_B = [1.07, 1.09, 1.08, 1.10, 1.06, 1.08, 1.09, 1.07]


@pytest.fixture
def ab_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "ab-threads"
    rounds = []
    for i, (t, p) in enumerate(zip(TPS_B, P99_B), start=1):
        a_tps, a_p99 = 1000.0 + 10 * i, 2.0 + 0.01 * i
        order = ("a", "b") if i % 2 else ("b", "a")
        rounds.append(Round(i, order, SideFigures(f"round-{i:02d}-a", a_tps, 1.0, 1.5, a_p99, None, 0),
                            SideFigures(f"round-{i:02d}-b", t * a_tps, 1.0, 1.5, p * a_p99, None, 0)))
        for side in "ab":
            (folder / f"round-{i:02d}-{side}").mkdir(parents=True)
    sides = {"a": parse_side("a", ""), "b": parse_side("b", "--threads 64")}
    AbResult(sides, Plan(len(rounds), 1.0), rounds, "rounds", 3).write(folder)
    return folder


def test_the_terminal_names_the_verdict_and_the_rounds(ab_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([str(ab_folder)]) == 0
    out = capsys.readouterr().out
    ab = json.loads((ab_folder / "ab.json").read_text())["ab"]
    assert ab["verdict"] == "b_slower"
    assert f"ab-threads: {ab['text']}" in out and ab["text"].startswith("B is ")
    assert "verdict b_slower; A = the shared options; B = --threads 64; 8 rounds" in out
    tps = ab["metrics"]["tps"]
    assert f"B/A tps {tps['ratio']:.3f} (95% CI {tps['ci_low']:.3f} .. {tps['ci_high']:.3f})" in out
    round_rows = [line for line in out.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert len(round_rows) == 8 and round_rows[1].split()[1:3] == ["B,", "A"]
    assert round_rows[0].split()[5] == f"{TPS_B[0]:.3f}"


def test_the_ratios_are_drawn_with_the_interval_as_a_band(ab_folder: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ab = load_ab(ab_folder)
    plots = {p.name: p for p in ab_plots([ab])}
    assert set(plots) == {"ab_tps", "ab_p99"}
    tps, p99 = plots["ab_tps"], plots["ab_p99"]
    assert tps.series[0].x == tuple(float(i) for i in range(1, 9))
    assert tps.series[0].y == pytest.approx(TPS_B) and p99.series[0].y == pytest.approx(P99_B, rel=1e-6)
    m = ab.metrics["tps"]
    assert tps.hlines[0][0] == m.ratio and tps.bands[0][:2] == (m.ci_low, m.ci_high)
    assert m.ci_low is not None and m.ci_high is not None and m.ci_low < m.ratio < m.ci_high < 1
    fig = draw(tps)
    try:
        labels = fig.axes[0].get_legend_handles_labels()[1]
        assert any(label.startswith("95% CI ") for label in labels) and "no difference (1)" in labels
    finally:
        close(fig)

    html_file, png_dir = tmp_path / "r.html", tmp_path / "png"
    assert cli.main([str(ab_folder), "--html", str(html_file), "--png", str(png_dir)]) == 0
    for name in ("ab_tps", "ab_p99"):
        path = png_dir / f"{name}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as img:
            assert "B/A" in img.info["Title"] and "(b_slower)" in img.info["Title"]
    text = html_file.read_text()
    assert "<h2>A/B comparison: ab-threads</h2>" in text and "verdict b_slower" in text
    assert text.count('src="data:image/png;base64,') == 2


def test_a_damaged_ab_json_is_one_line(ab_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ab_folder / "ab.json").write_text('{"ab": {"rounds": [{"round": 1, "a": {"tps": "many"}}]}}')
    assert cli.main([str(ab_folder)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"benchtop report: error: {ab_folder / 'ab.json'}: not a comparison benchtop ab wrote")
    assert err.count("\n") == 1
