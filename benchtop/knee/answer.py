"""The knee's answer as one paragraph, from summary.json's `knee` object
(so a report of an old results folder says what the run said)."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from benchtop.knee.probe import ProbeTiming

# the transactions a probe's p99 stands on
MIN_TRANSACTIONS = ProbeTiming().min_transactions


# a fit explaining less of the probes' variance than this is said to be loose
LOOSE_R2 = 0.9
# a predicted peak further than this many times the searched range is no peak
FAR = 10


def tps_text(v: float) -> str:
    """>>> tps_text(12400.0), tps_text(950.4), tps_text(1_530_000.0)
    ('12.4k', '950', '1.53M')
    """
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.0f}"


def ms_text(v: float) -> str:
    """>>> ms_text(18.04), ms_text(1.234), ms_text(0.0415)
    ('18', '1.23', '0.0415')
    """
    return f"{v:.0f}" if v >= 10 else f"{v:.3g}"


def _pm(value: float, err: Any) -> str:
    text = f"{value:.2g}" if value < 0.001 else f"{value:.3g}"
    if isinstance(err, (int, float)) and math.isfinite(err):
        text += f" ± {err:.1g}"
    return text


def loose(usl: Mapping[str, Any]) -> bool:
    """Whether the fit explains too little of the probes' variance to take
    a peak or a limit break from it (an old folder's fit without r² is not)."""
    r2 = usl.get("r2")
    return isinstance(r2, (int, float)) and r2 < LOOSE_R2


def fitted_limit(knee: Mapping[str, Any]) -> float | None:
    """Where the USL fit says p99 crosses the limit, unless a probe past it
    stayed within the limit (the best measured setting is beyond it): then
    the probes, not the fit, say where the limit is, and neither the answer
    nor the chart claims a break before the best.  A loose fit places none.

    >>> knee = {"setting": "threads", "best": {"threads": 16}, "usl": {"limit_threads": 13.2}}
    >>> fitted_limit(knee), fitted_limit(dict(knee, best={"threads": 12}))
    (None, 13.2)
    """
    usl = knee.get("usl") or {}
    limit = usl.get("limit_threads")
    if not isinstance(limit, (int, float)) or loose(usl):
        return None
    best = knee.get("best")
    if isinstance(best, Mapping) and isinstance(best.get("threads"), (int, float)) and best["threads"] > limit:
        return None
    return float(limit)


def _range_text(values: Any, fmt: Callable[[float], str], unit: str) -> str:
    """`12.1k-12.6k tps` for a list of figures ("" without two)."""
    if not isinstance(values, list) or len(values) < 2:
        return ""
    lo, hi = min(values), max(values)
    return f"{fmt(lo)}-{fmt(hi)}{unit}" if fmt(lo) != fmt(hi) else f"{fmt(lo)}{unit} in each"


def _sureness(best: Mapping[str, Any], probes: list[Mapping[str, Any]], key: str) -> str:
    """How sure the best's figures are: steady or not, how often measured,
    its TPS and p99 across the probe's parts, and too few transactions for
    a p99 when it had them."""
    if "steady" not in best:
        return ""  # a folder from before probes said
    times = sum(1 for p in probes if p.get(key) == best.get(key))
    again = " (measured twice)" if times > 1 else ""
    figures = [] if best["steady"] else [f"TPS cv {100 * float(best.get('cv', 0.0)):.0f}%"]
    spans = [t for t in (_range_text(best.get("tps_parts"), tps_text, " tps"),
                         _range_text(best.get("p99_parts"), ms_text, " ms p99")) if t]
    parts = best.get("p99_parts")
    if spans and isinstance(parts, list):
        figures.append(f"{', '.join(spans)} across its {len(parts)} parts")
    count = best.get("transactions")
    if not best["steady"] and isinstance(count, int) and count < MIN_TRANSACTIONS:
        figures.append(f"{count:,} transactions of the {MIN_TRANSACTIONS:,} a p99 needs")
    if best.get("confirmed"):  # held to confirm the answer: its figures are that hold's
        head = (f"held {float(best.get('held_s', 0.0)):g} s under the limits"
                + ("" if best["steady"] else ", NOT steady"))
    else:
        head = ("steady" if best["steady"] else "NOT steady") + again
    return f"{head}: {', '.join(figures)}" if figures else head


def _usl_parts(knee: Mapping[str, Any], limit_text: str) -> list[str]:
    """The fit's sentences: its peak and where the limit breaks (named as
    extrapolations outside the probed settings; left out of a loose fit),
    and its parameters."""
    usl = knee.get("usl") or {}
    rng = list(knee.get("range") or [])
    parts: list[str] = []
    fit_text = (f"contention {_pm(usl['sigma'], usl.get('sigma_err'))}, "
                f"coherency {_pm(usl['kappa'], usl.get('kappa_err'))}")
    is_loose = loose(usl)
    probed = usl.get("probed") or rng
    beyond = (f", extrapolated beyond the probes ({probed[0]:g}-{probed[-1]:g} threads)"
              if probed else ", extrapolated beyond the probes")
    if is_loose:
        parts.append(f"USL: a loose fit (r² {usl['r2']:.2f}), no peak or limit break taken from it")
    else:
        peak = usl.get("peak_threads")
        if peak is not None and rng and peak > FAR * float(rng[-1]):
            peak = None  # a coherency cost of nearly 0: no peak anyone would run at
        if peak is None:
            parts.append("USL: no peak in range (throughput levels off towards "
                         f"{tps_text(usl['lambda'] / usl['sigma'])} tps)" if usl.get("sigma") and usl.get("lambda")
                         else "USL: no peak in range")
        else:
            peak_tps = usl.get("peak_tps")
            parts.append(f"USL peak at {peak:.0f} threads" + (f" ({tps_text(peak_tps)} tps)" if peak_tps else "")
                         + (beyond if usl.get("peak_extrapolated") else ""))
    parts.append(fit_text)
    breaks = fitted_limit(knee)
    if limit_text and breaks is not None:
        parts.append(f"the p99 limit breaks near {breaks:.0f} threads"
                     + (beyond if usl.get("limit_extrapolated") else ""))
    elif limit_text and not is_loose and usl.get("limit_threads") is not None:
        # the fit put the break before a probe that kept the limit: the probes rule
        parts.append(f"the USL fit's p99 limit ({usl['limit_threads']:.0f} threads) is before the best probe: "
                     "read the probes")
    return parts


def answer_text(knee: Mapping[str, Any]) -> str:
    """`best: 48 threads, 12.4k tps at p99 18 ms (limit 20 ms), steady ...;
    USL peak at 61 threads; contention 0.031, coherency 0.0004`, and how the
    search went (and that it was cut short, when it was).

    >>> print(answer_text({"setting": "threads", "p99_limit_ms": 20.0, "reason": "the bracket is within the tolerance",
    ...     "best": {"threads": 48, "tps": 12400.0, "p99_ms": 18.2, "steady": True,
    ...              "tps_parts": [12100.0, 12600.0, 12500.0], "p99_parts": [17.4, 18.6, 18.0]},
    ...     "usl": {"sigma": 0.031, "sigma_err": 0.004, "kappa": 0.0004, "kappa_err": 0.0001, "peak_threads": 61.2,
    ...             "peak_tps": 13100.0, "limit_threads": 52.4, "r2": 0.97, "probed": [1, 64],
    ...             "peak_extrapolated": False, "limit_extrapolated": False},
    ...     "probes": [{}] * 9, "elapsed_s": 41.0, "complete": True}))
    best: 48 threads, 12.4k tps at p99 18 ms (limit 20 ms), steady: 12.1k-12.6k tps, 17-19 ms p99 across its 3 parts; USL peak at 61 threads (13.1k tps); contention 0.031 ± 0.004, coherency 0.0004 ± 0.0001; the p99 limit breaks near 52 threads. 9 probes in 41 s (the bracket is within the tolerance).
    """
    rate = knee.get("setting") == "rate"
    key = "rate" if rate else "threads"
    limit = knee.get("p99_limit_ms")
    limit_text = f" (limit {ms_text(limit)} ms)" if isinstance(limit, (int, float)) else ""
    best = knee.get("best")
    probes = list(knee.get("probes") or [])
    cut = knee.get("complete") is False
    parts: list[str] = []
    if best:
        where = f"rate {best['rate']:g}/s" if rate else f"{best['threads']} thread{'' if best['threads'] == 1 else 's'}"
        sure = _sureness(best, probes, key)
        parts.append(f"{'best so far' if cut else 'best'}: {where}, {tps_text(best['tps'])} tps at p99 "
                     f"{ms_text(best['p99_ms'])} ms{limit_text}" + (f", {sure}" if sure else ""))
    elif cut:
        parts.append("best: none measured before the search was cut short")
    else:
        parts.append("best: none; the lowest setting already breaks the limit"
                     + (f" ({ms_text(limit)} ms)" if isinstance(limit, (int, float)) else ""))
    usl = knee.get("usl") or {}
    if usl.get("sigma") is not None:
        parts.extend(_usl_parts(knee, limit_text))
    text = "; ".join(parts) + "."
    n = len(probes)
    elapsed = knee.get("elapsed_s")
    how = f" {n} probe{'s' if n != 1 else ''}"
    if isinstance(elapsed, (int, float)):
        how += f" in {elapsed:.0f} s"
    if cut:
        how += f", cut short ({knee.get('reason') or 'stopped'}): the search did not finish"
    elif knee.get("reason"):
        how += f" ({knee['reason']})"
    return text + how + "."
