"""The knee's answer as one paragraph, from summary.json's `knee` object
(so a report of an old results folder says what the run said)."""

from __future__ import annotations

import math
from typing import Any, Mapping


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


def fitted_limit(knee: Mapping[str, Any]) -> float | None:
    """Where the USL fit says p99 crosses the limit, unless a probe past it
    stayed within the limit (the best measured setting is beyond it): then
    the probes, not the fit, say where the limit is, and neither the answer
    nor the chart claims a break before the best.

    >>> knee = {"setting": "threads", "best": {"threads": 16}, "usl": {"limit_threads": 13.2}}
    >>> fitted_limit(knee), fitted_limit(dict(knee, best={"threads": 12}))
    (None, 13.2)
    """
    limit = (knee.get("usl") or {}).get("limit_threads")
    if not isinstance(limit, (int, float)):
        return None
    best = knee.get("best")
    if isinstance(best, Mapping) and isinstance(best.get("threads"), (int, float)) and best["threads"] > limit:
        return None
    return float(limit)


def answer_text(knee: Mapping[str, Any]) -> str:
    """`best: 48 threads, 12.4k tps at p99 18 ms (limit 20 ms); USL peak at
    61 threads; contention 0.031, coherency 0.0004`, and how the search went.

    >>> print(answer_text({"setting": "threads", "p99_limit_ms": 20.0, "reason": "the bracket is within the tolerance",
    ...     "best": {"threads": 48, "tps": 12400.0, "p99_ms": 18.2},
    ...     "usl": {"sigma": 0.031, "sigma_err": 0.004, "kappa": 0.0004, "kappa_err": 0.0001, "peak_threads": 61.2,
    ...             "peak_tps": 13100.0, "limit_threads": 52.4},
    ...     "probes": [{}] * 9, "elapsed_s": 41.0}))
    best: 48 threads, 12.4k tps at p99 18 ms (limit 20 ms); USL peak at 61 threads (13.1k tps); contention 0.031 ± 0.004, coherency 0.0004 ± 0.0001; the p99 limit breaks near 52 threads. 9 probes in 41 s (the bracket is within the tolerance).
    """
    rate = knee.get("setting") == "rate"
    limit = knee.get("p99_limit_ms")
    limit_text = f" (limit {ms_text(limit)} ms)" if isinstance(limit, (int, float)) else ""
    best = knee.get("best")
    parts: list[str] = []
    if best:
        where = f"rate {best['rate']:g}/s" if rate else f"{best['threads']} thread{'' if best['threads'] == 1 else 's'}"
        parts.append(f"best: {where}, {tps_text(best['tps'])} tps at p99 {ms_text(best['p99_ms'])} ms{limit_text}")
    else:
        parts.append("best: none; the lowest setting already breaks the limit"
                     + (f" ({ms_text(limit)} ms)" if isinstance(limit, (int, float)) else ""))
    usl = knee.get("usl") or {}
    if usl.get("sigma") is not None:
        peak = usl.get("peak_threads")
        rng = knee.get("range") or []
        if peak is not None and rng and peak > FAR * float(rng[-1]):
            peak = None  # a coherency cost of nearly 0: no peak anyone would run at
        if peak is None:
            parts.append("USL: no peak in range (throughput levels off towards "
                         f"{tps_text(usl['lambda'] / usl['sigma'])} tps)" if usl.get("sigma") and usl.get("lambda")
                         else "USL: no peak in range")
        else:
            peak_tps = usl.get("peak_tps")
            parts.append(f"USL peak at {peak:.0f} threads" + (f" ({tps_text(peak_tps)} tps)" if peak_tps else ""))
        fit_text = (f"contention {_pm(usl['sigma'], usl.get('sigma_err'))}, "
                    f"coherency {_pm(usl['kappa'], usl.get('kappa_err'))}")
        r2 = usl.get("r2")
        if isinstance(r2, (int, float)) and r2 < LOOSE_R2:
            fit_text += f" (a loose fit: r² {r2:.2f})"  # noisy probes: read the USL's figures with care
        parts.append(fit_text)
        breaks = fitted_limit(knee)
        if limit_text and breaks is not None:
            parts.append(f"the p99 limit breaks near {breaks:.0f} threads")
        elif limit_text and usl.get("limit_threads") is not None:
            # the fit put the break before a probe that kept the limit: the probes rule
            parts.append(f"the USL fit's p99 limit ({usl['limit_threads']:.0f} threads) is before the best probe: "
                         "read the probes")
    text = "; ".join(parts) + "."
    probes = len(knee.get("probes") or [])
    elapsed = knee.get("elapsed_s")
    how = f" {probes} probe{'s' if probes != 1 else ''}"
    if isinstance(elapsed, (int, float)):
        how += f" in {elapsed:.0f} s"
    if knee.get("reason"):
        how += f" ({knee['reason']})"
    return text + how + "."
