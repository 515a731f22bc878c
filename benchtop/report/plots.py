"""The report's plots, in two stages: `build_plots(runs)` computes what to
draw as plain data (`Plot`: what the tests compare with the results files),
`draw(plot)` turns it into a matplotlib figure (Agg, imported on first use).
"""

from __future__ import annotations

import io
import math
import random
import shlex
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

from benchtop.report.data import RunData
from benchtop.record.workers import workers_of
from benchtop.report.series import (
    SERVER_PLOTS,
    latency_series,
    marks,
    server_series,
    type_latency_series,
)


def install_hint() -> str:
    """What to run when matplotlib is missing (it is a dependency, so only a
    broken or hand-made environment lacks it): the pip of the Python
    benchtop runs in, whichever that is."""
    return f"plots need matplotlib: {shlex.quote(sys.executable)} -m pip install 'matplotlib>=3.7'"


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    style: str = ""  # knee plots: points (probes), fit (the USL's curve), best (the answer)


@dataclass(frozen=True, slots=True)
class Plot:
    name: str  # file stem: throughput, latency_over_time, jitter, boxplot, latency_histogram, latency_cdf,
    # sweep_tps, sweep_p99, knee_tps, knee_p99, ab_tps, ab_p99, and the server/OS series (series.SERVER_PLOTS)
    title: str
    kind: str  # line, jitter, box, histogram, cdf, sweep, knee, ab
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    logx: bool = False
    logy: bool = False
    xunit: str = ""  # "ms": ticks say 100 µs, 1 ms, 1 s (the label then names only the quantity)
    yunit: str = ""
    vlines: tuple[float, ...] = field(default=())  # step boundaries
    marks: tuple[tuple[float, str], ...] = field(default=())  # (t, text): marks and thread/rate changes
    hlines: tuple[tuple[float, str], ...] = field(default=())  # (y, text): a knee search's p99 limit
    bands: tuple[tuple[float, float, str], ...] = field(default=())  # (low, high, text): a comparison's interval


def _groups(runs: list[RunData]) -> list[tuple[str, list[float]]]:
    """Measured per-interval TPS, per step for scenarios, per run otherwise."""
    out = []
    for r in runs:
        if r.steps:
            for _, steps in r.by_settings():
                for s in steps:
                    out.append((r.step_label(s), [float(iv["tps"]) for iv in r.measured(s["index"])]))
        else:
            out.append((r.label, [float(iv["tps"]) for iv in r.measured()]))
    return out


def latency_buckets(r: RunData) -> list[tuple[float, float]]:
    """(bucket midpoint in ms, % of the run's transactions) from its full
    latency histogram: shares, so runs of different lengths compare."""
    from benchtop.engine.histogram import Histogram

    sparse = r.histogram.get("latency")
    if not sparse:
        return []
    h = Histogram.from_sparse(sparse)
    total = h.total
    return [((low + high) / 2 / 1e6, 100.0 * c / total) for low, high, c in h.nonzero()]


def latency_percentiles(r: RunData) -> list[tuple[float, float]]:
    """The percentile view of the same histogram: (1 / (1 - share below),
    latency in ms) at each bucket's upper bound, the x of HdrHistogram's
    percentile plots (1 = the minimum, 10 = p90, 100 = p99, ...); the last
    bucket is drawn at one in N, N the run's transactions."""
    from benchtop.engine.histogram import Histogram

    sparse = r.histogram.get("latency")
    if not sparse:
        return []
    h = Histogram.from_sparse(sparse)
    total = h.total
    buckets = list(h.nonzero())
    out = [(1.0, buckets[0][0] / 1e6)]
    seen = 0
    for _low, high, c in buckets:
        seen += c
        share = seen / total
        out.append((1.0 / (1.0 - share) if share < 1 else float(total), high / 1e6))
    return out


PERCENTILE_TICKS = ((1.0, "0%"), (2.0, "50%"), (10.0, "90%"), (100.0, "99%"), (1e3, "99.9%"), (1e4, "99.99%"),
                    (1e5, "99.999%"), (1e6, "99.9999%"))


def build_plots(runs: list[RunData]) -> list[Plot]:
    on_time = marks(runs)
    plots = [
        Plot(
            "throughput", "Throughput over time", "line", "seconds", "transactions/s",
            tuple(Series(r.label, tuple(float(iv["t"]) for iv in r.intervals), tuple(float(iv["tps"]) for iv in r.intervals))
                  for r in runs),
            vlines=tuple(float(s["t_start"]) for r in runs for s in r.steps[1:] if "t_start" in s) if len(runs) == 1 else (),
            marks=on_time,
        )
    ]
    lat = [Series(label, x, y) for r in runs for label, x, y in latency_series(r)]
    if lat:
        plots.append(Plot("latency_over_time", "Latency percentiles per interval", "line", "seconds",
                          "latency", tuple(lat), logy=True, yunit="ms", marks=on_time))
    by_type = [Series(label, x, y) for r in runs for label, x, y in type_latency_series(r)]
    if by_type:
        plots.append(Plot("latency_by_type", "Latency per transaction type per interval", "line", "seconds",
                          "latency", tuple(by_type), logy=True, yunit="ms", marks=on_time))
    per_run = [server_series(r) for r in runs]
    for name, title, ylabel, _extractors in SERVER_PLOTS:
        series = tuple(Series(label, x, y) for found in per_run for label, x, y in found.get(name, []))
        if series:
            plots.append(Plot(name, title, "line", "seconds", ylabel, series, marks=on_time))
    groups = [(name, values) for name, values in _groups(runs) if values]
    if groups:
        plots.append(Plot("jitter", "Per-interval throughput after warm-up (jitter)", "jitter", "", "transactions/s",
                          tuple(Series(name, tuple(float(i) for i in range(len(v))), tuple(v)) for name, v in groups)))
        plots.append(Plot("boxplot", "Throughput distribution after warm-up", "box", "", "transactions/s",
                          tuple(Series(name, (), tuple(v)) for name, v in groups)))
    hist = [(r.label, latency_buckets(r)) for r in runs]
    hist = [(label, b) for label, b in hist if b]
    if hist:
        plots.append(Plot("latency_histogram", "Latency histogram", "histogram", "latency", "% of transactions",
                          tuple(Series(label, tuple(x for x, _ in b), tuple(float(c) for _, c in b)) for label, b in hist),
                          logx=True, xunit="ms"))
        cdf = [(r.label, latency_percentiles(r)) for r in runs]
        plots.append(Plot("latency_cdf", "Latency by percentile", "cdf", "percentile", "latency",
                          tuple(Series(label, tuple(x for x, _ in pts), tuple(y for _, y in pts))
                                for label, pts in cdf if pts), logx=True, logy=True, yunit="ms"))
    # a knee search's probes are steps too, but its own plots draw them (with the fit)
    sweeps = [r for r in runs if r.is_sweep and "knee" not in r.summary]
    if sweeps:
        def by_threads(label: str, steps: list[dict[str, Any]], key: str) -> Series:
            pts = sorted((float(workers_of(s).connections),
                          float(s["tps"]) if key == "tps" else float(s["latency_ms"].get("p99", 0.0))) for s in steps)
            return Series(label, tuple(x for x, _ in pts), tuple(y for _, y in pts))

        # one line per run and server settings (a thread sweep under each setting of a settings sweep)
        lines = [(r.label + (f" [{text}]" if text else ""), steps) for r in sweeps for text, steps in r.by_settings()]
        plots.append(Plot("sweep_tps", "Throughput against threads", "sweep", "threads", "transactions/s",
                          tuple(by_threads(label, steps, "tps") for label, steps in lines), logx=True))
        plots.append(Plot("sweep_p99", "99th percentile latency against threads", "sweep", "threads", "p99 latency",
                          tuple(by_threads(label, steps, "p99") for label, steps in lines), logx=True, logy=True,
                          yunit="ms"))
    for r in runs:
        if isinstance(r.summary.get("knee"), dict):
            plots += knee_plots(r.label, r.summary["knee"])
    return plots


def knee_plots(label: str, knee: dict[str, Any]) -> list[Plot]:
    """A knee search's probes against the setting, with the USL's fitted
    curve, the answer and the limit: throughput, and p99."""
    from benchtop.knee.answer import fitted_limit, loose
    from benchtop.knee.usl import usl

    key = "rate" if knee.get("setting") == "rate" else "threads"
    probes = [p for p in knee.get("probes") or [] if isinstance(p, dict) and key in p]
    if not probes:
        return []
    xs = tuple(float(p[key]) for p in probes)
    tps = Series(f"{label}: probes", xs, tuple(float(p["tps"]) for p in probes), "points")
    p99 = Series(f"{label}: probes", xs, tuple(float(p["p99_ms"]) for p in probes), "points")
    tps_series, p99_series = [tps], [p99]
    best = knee.get("best")
    if isinstance(best, dict):
        tps_series.append(Series(f"best: {best[key]:g} {key}", (float(best[key]),), (float(best["tps"]),), "best"))
        p99_series.append(Series(f"best: {best[key]:g} {key}", (float(best[key]),), (float(best["p99_ms"]),), "best"))
    fit = knee.get("usl") or {}
    marks: list[tuple[float, str]] = []
    if key == "threads" and fit.get("sigma") is not None and fit.get("lambda"):
        lo, hi = min(xs), max(xs) * 1.5
        if fit.get("limit_threads"):  # where the limit breaks is worth seeing, if near the probes
            hi = max(hi, min(fit["limit_threads"] * 1.1, max(xs) * 4))
        peak = None if loose(fit) else fit.get("peak_threads")  # as the answer: no peak from a loose fit
        if peak:
            hi = max(hi, min(peak * 1.2, max(xs) * 4))
            if peak <= hi:  # a peak far past the probes is no mark on their axis
                marks.append((float(peak), f"USL peak {peak:.0f}"))
        grid = tuple(lo * (hi / lo) ** (i / 79) for i in range(80))
        curve = tuple(float(usl(n, fit["lambda"], fit["sigma"], fit["kappa"])) for n in grid)
        what = f"USL fit: contention {fit['sigma']:.3g}, coherency {fit['kappa']:.2g}"
        tps_series.append(Series(what, grid, curve, "fit"))
        ratio = fit.get("latency_ratio")
        if ratio:
            p99_series.append(Series("USL fit (p99 ≈ ratio × N / X)", grid,
                                     tuple(ratio * n / x * 1000.0 for n, x in zip(grid, curve)), "fit"))
        breaks = fitted_limit(knee)  # as the answer says it: never a break before the best probe
        if breaks and breaks <= hi:
            marks.append((breaks, f"limit breaks {breaks:.0f}"))
    limit = knee.get("p99_limit_ms")
    hlines = ((float(limit), f"p99 limit {limit:g} ms"),) if isinstance(limit, (int, float)) else ()
    xlabel = "arrival rate (transactions/s)" if key == "rate" else "threads (concurrency)"
    return [
        Plot("knee_tps", "Knee search: throughput against " + ("rate" if key == "rate" else "concurrency"), "knee",
             xlabel, "transactions/s", tuple(tps_series), logx=True, marks=tuple(marks)),
        Plot("knee_p99", "Knee search: p99 latency against " + ("rate" if key == "rate" else "concurrency"), "knee",
             xlabel, "p99 latency", tuple(p99_series), logx=True, logy=True, yunit="ms", marks=tuple(marks),
             hlines=hlines),
    ]


def mark_groups(marks: tuple[tuple[float, str], ...], min_gap: float) -> list[tuple[float, list[str]]]:
    """Marks less than `min_gap` after the first of a group join it (drawn
    as one label at its time, their texts side by side).

    >>> mark_groups(((0.2, "a: step 1"), (0.3, "b: step 1"), (7.2, "a: step 2"), (7.4, "b: step 2")), 0.5)
    [(0.2, ['a: step 1', 'b: step 1']), (7.2, ['a: step 2', 'b: step 2'])]
    """
    groups: list[tuple[float, list[str]]] = []
    for x, text in sorted(marks):
        if groups and x - groups[-1][0] < min_gap:
            groups[-1][1].append(text)
        else:
            groups.append((x, [text]))
    return groups


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ImportError(install_hint()) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def ms_label(v: float) -> str:
    """A latency given in ms as a log axis tick: plain numbers with their
    unit, never 10^k notation.

    >>> [ms_label(v) for v in (0.0005, 0.01, 0.25, 1, 2, 10, 100, 1000, 20000)]
    ['500 ns', '10 µs', '250 µs', '1 ms', '2 ms', '10 ms', '100 ms', '1 s', '20 s']
    """
    for scale, unit in ((1000.0, "s"), (1.0, "ms"), (1e-3, "µs")):
        if v >= scale * (1 - 1e-9):
            return f"{v / scale:.3g} {unit}"
    return f"{v / 1e-6:.3g} ns"


def plain_label(v: float) -> str:
    """A number as a log axis tick: 0.5, 2, 100, 20k; never 10^k notation.

    >>> [plain_label(v) for v in (0.5, 2, 100, 2000, 3e6)]
    ['0.5', '2', '100', '2k', '3M']
    """
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"


def _log_ticks(axis: Any, unit: str) -> None:
    """Round, labelled ticks on a log axis: every decade, with 2 and 5 in
    between when the axis spans less than two decades, every digit below
    one decade (else matplotlib labels the minor ticks 2x10^0, 3x10^0...)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    span = math.log10(hi / lo) if lo > 0 and hi > 0 else 3.0
    label = ms_label if unit == "ms" else plain_label
    subs = (1.0,) if span >= 2 else (1.0, 2.0, 5.0) if span >= 1 else tuple(float(d) for d in range(1, 10))
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: label(v)))
    axis.set_minor_formatter(NullFormatter())


SPREAD_APART = 4.0  # runs' medians this many times apart are drawn side by side, each on its own scale


def spread(plot: Plot) -> float:
    """How many times the largest run's median is the smallest's (1: alike).

    >>> round(spread(Plot("b", "", "box", "", "", (Series("a", (), (400.0, 420.0)), Series("b", (), (12e3, 11e3))))), 1)
    28.0
    """
    medians = [statistics.median(s.y) for s in plot.series if s.y]
    low = min((m for m in medians if m > 0), default=0.0)
    return max(medians) / low if low > 0 else 1.0


def _draw_apart(plot: Plot) -> Any:
    """Jitter or boxes of runs far apart (400 vs 12k tps), one panel each
    with its own y axis from 0: on one axis the smaller run is a flat line,
    and a log axis would hide a drop to 0."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(plot.series), figsize=(9, 4.5), dpi=100, squeeze=False)
    fig.suptitle(plot.title + " (each run on its own scale)")
    rng = random.Random(0)
    for i, (ax, s) in enumerate(zip(axes[0], plot.series)):
        if plot.kind == "jitter":
            ax.scatter([rng.uniform(-0.25, 0.25) for _ in s.y], s.y, s=8, alpha=0.6, color=f"C{i}")
            ax.set_xlim(-0.5, 0.5)
        else:
            ax.boxplot([list(s.y)], showfliers=True)
        ax.set_xticks([0 if plot.kind == "jitter" else 1], [s.label], rotation=30, ha="right")
        top = max((y for y in s.y if math.isfinite(y)), default=0.0)
        ax.set_ylim(0.0, top * 1.08 if top > 0 else 1.0)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel(plot.ylabel)
    fig.tight_layout()
    return fig


def draw(plot: Plot) -> Any:
    """The matplotlib Figure of a Plot (close it with `close(fig)`)."""
    if plot.kind in ("jitter", "box") and len(plot.series) > 1 and spread(plot) > SPREAD_APART:
        return _draw_apart(plot)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    if plot.kind in ("line", "sweep"):
        for s in plot.series:
            ax.plot(s.x, s.y, label=s.label, marker="o" if plot.kind == "sweep" else None, linewidth=1.2)
        for x in plot.vlines:
            ax.axvline(x, color="grey", linestyle=":", linewidth=0.8)
        lo, hi = ax.get_xlim()
        for x, texts in mark_groups(plot.marks, 0.02 * (hi - lo)):
            ax.axvline(x, color="tab:red", linestyle="--", linewidth=0.7, alpha=0.7)
            # marks at about the same time (two runs' step changes) side by side, not drawn over each other
            ax.annotate("\n".join(texts), (x, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                        fontsize="x-small", va="top", ha="right", color="tab:red")
        if plot.kind == "sweep":
            xs = sorted({x for s in plot.series for x in s.x})
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
    elif plot.kind == "knee":
        styles: dict[str, dict[str, Any]] = {"points": dict(marker="o", linestyle="none"), "fit": dict(linestyle="--", linewidth=1.2),
                  "best": dict(marker="*", markersize=14, linestyle="none", color="tab:green")}
        for s in plot.series:
            ax.plot(s.x, s.y, label=s.label, **styles.get(s.style, {}))
        for x, text in plot.marks:
            ax.axvline(x, color="grey", linestyle=":", linewidth=0.8)
            ax.annotate(text, (x, 1.0), xycoords=("data", "axes fraction"), rotation=90, fontsize="x-small",
                        va="top", ha="right", color="grey")
        for y, text in plot.hlines:
            ax.axhline(y, color="tab:red", linestyle="--", linewidth=1.0, label=text)
        ax.set_xscale("log")
        probes = sorted({x for s in plot.series if s.style == "points" for x in s.x})
        if 1 < len(probes) <= 12:  # ticks where the probes ran (1, 2, 4, 8, 16), not at 1, 2, 5, 10, 20
            ax.set_xticks(probes, [plain_label(x) for x in probes])
            ax.minorticks_off()
        else:
            _log_ticks(ax.xaxis, "")
    elif plot.kind == "ab":
        for low, high, text in plot.bands:
            ax.axhspan(low, high, color="tab:blue", alpha=0.15, label=text)
        for y, text in plot.hlines:
            ax.axhline(y, color="tab:blue", linestyle="--", linewidth=1.2, label=text)
        for s in plot.series:
            ax.plot(s.x, s.y, marker="o", linestyle="none", color="tab:orange", label=s.label)
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=0.8, label="no difference (1)")
        rounds = sorted({x for s in plot.series for x in s.x})
        if rounds and len(rounds) <= 30:
            ax.set_xticks(rounds, [f"{x:g}" for x in rounds])
    elif plot.kind == "jitter":
        rng = random.Random(0)  # the same file draws the same picture
        for i, s in enumerate(plot.series):
            xs = [i + rng.uniform(-0.25, 0.25) for _ in s.y]
            ax.scatter(xs, s.y, s=8, alpha=0.6, label=s.label)
        ax.set_xticks(range(len(plot.series)), [s.label for s in plot.series], rotation=30, ha="right")
    elif plot.kind == "box":
        ax.boxplot([list(s.y) for s in plot.series], showfliers=True)
        ax.set_xticks(range(1, len(plot.series) + 1), [s.label for s in plot.series], rotation=30, ha="right")
    elif plot.kind == "histogram":
        for s in plot.series:
            ax.step(s.x, s.y, where="mid", label=s.label)
        ax.set_xscale("log")
    elif plot.kind == "cdf":
        for s in plot.series:
            ax.step(s.x, s.y, where="pre", label=s.label)
        ax.set_xscale("log")
        top = max((max(s.x) for s in plot.series if s.x), default=1.0)
        ticks = [(x, label) for x, label in PERCENTILE_TICKS if x <= top * 1.0001]
        ax.set_xticks([x for x, _ in ticks], [label for _, label in ticks])
        ax.minorticks_off()
    if plot.kind == "histogram" and plot.logx:
        _log_ticks(ax.xaxis, plot.xunit)
    if plot.logy:
        ax.set_yscale("log")
        _log_ticks(ax.yaxis, plot.yunit)
    elif plot.kind in ("line", "jitter", "box", "sweep", "knee"):
        top = max((y for s in plot.series for y in s.y if math.isfinite(y)), default=0.0)
        # a rate read against zero (600 vs 700 tps is not a doubling), with room above the highest line
        ax.set_ylim(0.0, top * 1.08 if top > 0 else 1.0)
    if plot.kind in ("line", "sweep", "histogram", "cdf", "knee", "ab") and plot.series:
        if plot.kind == "line":
            # beside the plot: over time every corner holds data
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        else:
            ax.legend(fontsize="small", loc="best")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def to_png(fig: Any, metadata: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata=metadata, bbox_inches="tight")  # legends beside the axes included
    return buf.getvalue()


def png_metadata(plot: Plot) -> dict[str, str]:
    """PNG text chunks naming the plot and its series (what a reader of the
    file, or a test, can check without looking at pixels)."""
    return {"Title": plot.title, "Description": "; ".join(s.label for s in plot.series),
            "Software": "benchtop report"}


def close(fig: Any) -> None:
    _pyplot().close(fig)


def render_png(plot: Plot) -> bytes:
    fig = draw(plot)
    try:
        return to_png(fig, png_metadata(plot))
    finally:
        close(fig)
