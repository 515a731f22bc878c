"""The search as the dashboard draws it (benchtop.record.knee)."""

from __future__ import annotations

from benchtop.knee.answer import FAR, fitted_limit
from benchtop.knee.search import KneeSearch, Probe
from benchtop.record.knee import KneePoint, KneeView


def knee_view(search: KneeSearch) -> KneeView:
    s = search.settings

    def point(p: Probe) -> KneePoint:
        return KneePoint(p.x, p.tps, p.p99_ms, search.feasible(p))

    best = search.best
    fit = search.fit
    # the peak and the limit break as the answer states them: none from a loose fit, no break before the best
    usl = search.usl_dict() or {}
    peak = usl.get("peak_threads")
    if peak is not None and peak > FAR * s.high:
        peak = None
    crossing = (fitted_limit({"usl": usl, "best": {"threads": best.x} if best is not None and not s.rate else None})
                if s.p99_limit_ms is not None else None)
    return KneeView(low=s.low, high=s.high, rate=s.rate, p99_limit_ms=s.p99_limit_ms,
                    probes=tuple(point(p) for p in list(search.probes)),
                    best=point(best) if best is not None else None,
                    throughput=fit.throughput if fit is not None else None, peak=peak, limit_crossing=crossing)
