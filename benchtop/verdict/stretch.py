"""The verdict of a stretch of intervals (a steady stretch between knob
changes, a scenario step, a whole run): the limit named most often, its
share of the intervals, and the evidence of a typical interval naming it.
Two limits named equally often are both real; the one its intervals named
with more confidence leads, not the one the warm-up happened to name first."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from benchtop.verdict.decide import Verdict
from benchtop.verdict.signals import NAMES


def interval_verdict(d: Mapping[str, Any]) -> Verdict | None:
    """The Verdict of a JSON interval object (None without one)."""
    v = d.get("verdict")
    if not isinstance(v, Mapping) or not isinstance(v.get("limit"), str):
        return None
    nxt = v.get("next")
    if not isinstance(nxt, Mapping):
        nxt = {}
    conf = v.get("confidence")
    figs = v.get("figures")
    nums = tuple((str(k), float(x)) for k, x in figs.items() if isinstance(x, (int, float))) \
        if isinstance(figs, Mapping) else ()
    why = v.get("lowered_by")
    return Verdict(str(v["limit"]), float(conf) if isinstance(conf, (int, float)) else 0.0,
                   str(v.get("evidence") or ""), nxt.get("limit"), nxt.get("evidence"), nums,
                   tuple(str(w) for w in why) if isinstance(why, list) else ())


def stretch_verdict(intervals: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """{limit, share, intervals, confidence, evidence, figures, lowered_by,
    shares} over the intervals that carry a verdict (evidence, figures and
    lowered_by of a typical interval); None when none does.

    >>> ivs = [{"verdict": {"limit": "locks", "confidence": 0.9, "evidence": f"{n} of 16 waiting"}} for n in (5, 6, 7)]
    >>> ivs.append({"verdict": {"limit": "server_cpu", "confidence": 0.6, "evidence": "x"}})
    >>> v = stretch_verdict(ivs)
    >>> v["limit"], v["share"], v["intervals"], v["evidence"], v["shares"]
    ('locks', 0.75, 4, '6 of 16 waiting', {'locks': 0.75, 'server_cpu': 0.25})
    >>> even = [{"verdict": {"limit": k, "confidence": c, "evidence": k}} for k, c in
    ...         (("disk", 0.6), ("locks", 0.8), ("disk", 0.6), ("locks", 0.8))]
    >>> stretch_verdict(even)["limit"]
    'locks'
    """
    verdicts = [v for v in (interval_verdict(d) for d in intervals) if v is not None]
    if not verdicts:
        return None
    counts = Counter(v.limit for v in verdicts)
    sure: dict[str, float] = {}
    for v in verdicts:
        sure[v.limit] = sure.get(v.limit, 0.0) + v.confidence
    limit = max(counts, key=lambda k: (counts[k], sure[k]))
    n = counts[limit]
    mine = [v for v in verdicts if v.limit == limit]
    typical = mine[len(mine) // 2]  # the middle one in time: not the warm-up's edge, not the stop's
    return {
        "limit": limit,
        "share": round(n / len(verdicts), 3),
        "intervals": len(verdicts),
        "confidence": round(sum(v.confidence for v in mine) / len(mine), 2),
        "evidence": typical.evidence,
        "figures": dict(typical.figures),
        "lowered_by": list(typical.lowered_by),
        "shares": {k: round(c / len(verdicts), 3) for k, c in counts.most_common()},
    }


def stretch_text(v: Mapping[str, Any]) -> str:
    """
    >>> stretch_text({"limit": "locks", "share": 0.75, "intervals": 4, "evidence": "6 of 16 waiting",
    ...               "shares": {"locks": 0.75, "server_cpu": 0.25}})
    'bound by lock waits in 75% of 4 intervals (6 of 16 waiting); server CPU 25%'
    """
    limit = str(v.get("limit"))
    name = NAMES.get(limit, limit)
    head = "limit unclear" if limit == "unclear" else f"bound by {name}"
    line = f"{head} in {100 * float(v.get('share') or 0):.0f}% of {v.get('intervals')} intervals"
    if v.get("evidence"):
        line += f" ({v['evidence']})"
    others = [f"{NAMES.get(k, k)} {100 * s:.0f}%" for k, s in (v.get("shares") or {}).items() if k != limit]
    if others:
        line += "; " + ", ".join(others)
    return line
