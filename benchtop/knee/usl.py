"""The Universal Scalability Law (Gunther): throughput at concurrency N

    X(N) = lam * N / (1 + sigma * (N - 1) + kappa * N * (N - 1))

with sigma the contention (serialised share of the work) and kappa the
coherency cost (pairwise crosstalk).  `fit_usl` fits it to measured points
with scipy's curve_fit and carries the parameters' standard errors from the
covariance; the peak is at N* = sqrt((1 - sigma) / kappa).

A p99 limit breaks where Little's law's response time N / X(N), scaled by
the measured ratio of p99 to that mean, reaches it (`limit_threads`)."""

from __future__ import annotations

import importlib
import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

# fewer points than parameters leave the fit undetermined
MIN_POINTS = 3


def usl(n: Any, lam: float, sigma: float, kappa: float) -> Any:
    """X(N); `n` a number or a numpy array.

    >>> round(usl(1, 1000.0, 0.1, 0.0), 1), round(usl(10, 1000.0, 0.0, 0.0), 1)
    (1000.0, 10000.0)
    """
    return lam * n / _contention(n, sigma, kappa)


def _contention(n: Any, sigma: float, kappa: float) -> Any:
    """USL's denominator: how much slower N workers are than N alone."""
    return 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)


@dataclass(frozen=True, slots=True)
class UslFit:
    lam: float  # throughput of one worker alone (transactions/s)
    sigma: float  # contention
    kappa: float  # coherency
    lam_err: float | None  # standard errors from the covariance (None: not determined)
    sigma_err: float | None
    kappa_err: float | None
    points: int
    r2: float  # share of the throughput's variance the curve explains
    latency_ratio: float | None = None  # measured p99 / (N / X): the tail over Little's mean
    # the parameters' covariance (lam, sigma, kappa), row by row; None: not determined
    covariance: tuple[tuple[float, ...], ...] | None = None

    def throughput(self, n: float) -> float:
        return float(usl(float(n), self.lam, self.sigma, self.kappa))

    def throughput_err(self, n: float) -> float:
        """The standard error of `throughput(n)` from the parameters'
        covariance (the delta method; inf when it is not determined): few or
        scattered probes leave the curve uncertain, most of all far from them.

        >>> fit = UslFit(1000.0, 0.1, 0.001, 10.0, 0.01, 0.0001, 6, 0.99,
        ...              covariance=((100.0, 0.0, 0.0), (0.0, 1e-4, 0.0), (0.0, 0.0, 1e-8)))
        >>> 0 < fit.throughput_err(2) < fit.throughput_err(30)
        True
        """
        cov = self.covariance
        if cov is None:
            return math.inf
        d = _contention(n, self.sigma, self.kappa)
        x = self.lam * n / d
        grad = (n / d, -x * (n - 1.0) / d, -x * n * (n - 1.0) / d)
        var = sum(grad[i] * cov[i][j] * grad[j] for i in range(3) for j in range(3))
        return math.sqrt(var) if math.isfinite(var) and var >= 0 else math.inf

    @property
    def peak_threads(self) -> float:
        """N* = sqrt((1 - sigma) / kappa); infinite when kappa is 0 (throughput only flattens)."""
        if self.sigma >= 1.0:
            return 1.0
        if self.kappa <= 0.0:
            return math.inf
        return math.sqrt((1.0 - self.sigma) / self.kappa)

    @property
    def peak_tps(self) -> float:
        n = self.peak_threads
        if math.isfinite(n):
            return self.throughput(n)
        return self.ceiling_tps

    @property
    def ceiling_tps(self) -> float:
        """lam / sigma: what throughput approaches without coherency cost."""
        return self.lam / self.sigma if self.sigma > 0 else math.inf

    def p99_ms(self, n: float) -> float | None:
        """The p99 the fit expects at N (None without a latency ratio)."""
        if self.latency_ratio is None:
            return None
        x = self.throughput(n)
        return self.latency_ratio * n / x * 1000.0 if x > 0 else math.inf

    def limit_threads(self, limit_ms: float) -> float | None:
        """The concurrency where the expected p99 reaches `limit_ms` (None:
        no latency ratio; inf: never).  ratio * N / X(N) = L solves
        kappa N^2 + (sigma - kappa) N + (1 - sigma) - L lam / ratio = 0."""
        if self.latency_ratio is None or self.lam <= 0:
            return None
        c = (1.0 - self.sigma) - limit_ms / 1000.0 * self.lam / self.latency_ratio
        a, b = self.kappa, self.sigma - self.kappa
        if a > 0:
            disc = b * b - 4 * a * c
            return (-b + math.sqrt(disc)) / (2 * a) if disc >= 0 else None
        if b > 0:
            return -c / b
        return math.inf

    def to_dict(self, limit_ms: float | None = None) -> dict[str, Any]:
        def num(v: float | None, digits: int = 6) -> float | None:
            return None if v is None or not math.isfinite(v) else round(v, digits)

        d: dict[str, Any] = {
            "lambda": num(self.lam, 3), "lambda_err": num(self.lam_err, 3),
            "sigma": num(self.sigma), "sigma_err": num(self.sigma_err),
            "kappa": num(self.kappa, 8), "kappa_err": num(self.kappa_err, 8),
            "peak_threads": num(self.peak_threads, 2), "peak_tps": num(self.peak_tps, 2),
            "r2": num(self.r2, 4), "points": self.points,
            "latency_ratio": num(self.latency_ratio, 4),
        }
        if limit_ms is not None:
            d["limit_threads"] = num(self.limit_threads(limit_ms) or math.nan, 2)
        return d


def preload() -> None:
    """Import scipy's optimiser now (a second or more on a busy host), not
    in the middle of a probe."""
    importlib.import_module("scipy.optimize")


def fit_usl(n: Sequence[float], x: Sequence[float], p99_ms: Sequence[float] | None = None) -> UslFit | None:
    """The USL fitted to throughputs `x` at concurrencies `n` (None: fewer
    than three distinct concurrencies, or the fit did not converge).
    `p99_ms` (same order) gives the latency ratio for `limit_threads`, from
    the three highest concurrencies (the tail's shape near the limit)."""
    from scipy.optimize import OptimizeWarning, curve_fit

    pts = [(float(a), float(b)) for a, b in zip(n, x) if a > 0 and b > 0 and math.isfinite(b)]
    if len({a for a, _ in pts}) < MIN_POINTS:
        return None
    ns = np.array([a for a, _ in pts])
    xs = np.array([b for _, b in pts])
    lam0 = float(max(xs / ns))
    with warnings.catch_warnings():
        # too few points for a covariance is a None error, not a warning on stderr
        warnings.simplefilter("ignore", OptimizeWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            popt, pcov = curve_fit(usl, ns, xs, p0=(lam0, 0.05, 0.0005),
                                   bounds=([0.0, 0.0, 0.0], [np.inf, np.inf, np.inf]), maxfev=20000)
        except (RuntimeError, ValueError):
            return None
    errs = [float(math.sqrt(v)) if math.isfinite(v) and v >= 0 else None for v in np.diag(pcov)]
    cov: tuple[tuple[float, ...], ...] | None = tuple(tuple(float(v) for v in row) for row in pcov)
    if len(pts) <= MIN_POINTS or not np.all(np.isfinite(pcov)):
        errs = [None, None, None]
        cov = None
    resid = xs - usl(ns, *popt)
    total = float(np.sum((xs - xs.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid ** 2)) / total if total > 0 else 1.0
    ratio = None
    if p99_ms is not None:
        lat = sorted(((float(a), float(p), float(b)) for a, b, p in zip(n, x, p99_ms) if a > 0 and b > 0 and p > 0),
                     reverse=True)[:3]
        if lat:
            ratios = sorted(p / 1000.0 / (a / b) for a, p, b in lat)
            ratio = ratios[len(ratios) // 2]
    return UslFit(float(popt[0]), float(popt[1]), float(popt[2]), errs[0], errs[1], errs[2], len(pts), r2, ratio,
                  cov)
