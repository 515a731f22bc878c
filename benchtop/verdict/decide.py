"""The verdict of one interval: every rule's score against its threshold,
ranked; the first over its threshold is the limit, the second is named as
`next` when it is close.  An open loop that delivers its rate is limited by
the rate; a closed loop with nothing over a threshold and fast queries by
the network's round trips; anything else is `unclear`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from benchtop.verdict.rules import NETWORK_RULE, RATE_RULE, RESOURCE_RULES, Rule
from benchtop.verdict.signals import NAMES, Signals

NEXT_CLOSE: Final = 0.7  # a second rule at this fraction of its threshold or more is named as `next`
MISSING_PENALTY: Final = 0.75  # confidence kept per missing signal group (at most two counted)


@dataclass(frozen=True, slots=True)
class Candidate:
    rule: Rule
    score: float

    @property
    def strength(self) -> float:
        """The score in units of the rule's threshold (1.0: at the threshold)."""
        return self.score / self.rule.threshold if self.rule.threshold else 0.0


@dataclass(frozen=True, slots=True)
class Verdict:
    limit: str
    confidence: float  # 0..1
    evidence: str
    next: str | None = None  # the second-ranked limit when close
    next_evidence: str | None = None

    @property
    def name(self) -> str:
        return NAMES.get(self.limit, self.limit)

    def to_dict(self) -> dict[str, Any]:
        """The `verdict` object of a JSON interval line."""
        nxt = {"limit": self.next, "evidence": self.next_evidence} if self.next else None
        return {"limit": self.limit, "confidence": self.confidence, "evidence": self.evidence, "next": nxt}

    def text(self) -> str:
        """One line: `bound by server CPU: postgres 1.71 of 2 cores, ...; next: ...`.

        >>> Verdict("locks", 0.8, "9.0 of 16 sessions waiting on locks", "server_cpu", "postgres 0.90 of 2 cores").text()
        'bound by lock waits: 9.0 of 16 sessions waiting on locks; next: server CPU (postgres 0.90 of 2 cores)'
        """
        head = "limit unclear" if self.limit == "unclear" else f"bound by {self.name}"
        line = f"{head}: {self.evidence}" if self.evidence else head
        if self.next:
            line += f"; next: {NAMES.get(self.next, self.next)} ({self.next_evidence})"
        return line


def rank(s: Signals) -> list[Candidate]:
    """The resource rules that could be scored, strongest first (ties in LIMITS order)."""
    out = []
    for rule in RESOURCE_RULES:
        score = rule.score(s)
        if score is not None:
            out.append(Candidate(rule, score))
    out.sort(key=lambda c: -c.strength)  # stable: the rules' order breaks ties
    return out


def decide(s: Signals) -> Verdict:
    """The limit of one interval, with its evidence in numbers."""
    ranked = rank(s)
    over = [c for c in ranked if c.strength >= 1.0]
    penalty = MISSING_PENALTY ** min(len(s.missing), 2)
    if s.open_loop:
        if (RATE_RULE.score(s) or 0.0) >= 1.0:
            top = over[0] if over else None
            return Verdict("rate", round(0.9 * (0.85 if top else 1.0), 2), RATE_RULE.evidence(s),
                           *_next(top, s))
        # the loop cannot keep up: something else is the limit (below), or it is unclear
    if over:
        first = over[0]
        second = ranked[1] if len(ranked) > 1 else None
        close = second is not None and second.strength >= NEXT_CLOSE
        # past its threshold by half again: sure; a close second halves the margin
        margin = min(1.0, (first.strength - 1.0) / 0.5)
        if close and second is not None:
            margin = min(margin, max(0.0, first.strength - second.strength))
        confidence = (0.55 + 0.4 * margin) * penalty
        return Verdict(first.rule.limit, round(confidence, 2), first.rule.evidence(s),
                       *(_next(second, s) if close else (None, None)))
    if not s.open_loop and (NETWORK_RULE.score(s) or 0.0) >= 1.0:
        second = ranked[0] if ranked else None
        close = second is not None and second.strength >= NEXT_CLOSE
        # a verdict by elimination: only as sure as the signals that eliminated the rest
        return Verdict("network", round(0.6 * penalty, 2), NETWORK_RULE.evidence(s),
                       *(_next(second, s) if close else (None, None)))
    evidence = ("no rule over its threshold: " + ", ".join(f"{c.rule.limit} {c.score:.2f} of {c.rule.threshold:g}"
                                                            for c in ranked[:3])) if ranked else ""
    if s.open_loop:
        evidence = RATE_RULE.evidence(s) + (f"; {evidence}" if evidence else "")
    if s.missing:
        evidence += ("; " if evidence else "") + "not read: " + ", ".join(s.missing)
    return Verdict("unclear", round(0.3 * penalty, 2), evidence)


def _next(c: Candidate | None, s: Signals) -> tuple[str | None, str | None]:
    if c is None:
        return None, None
    # the top statement is the first limit's to name; the second's evidence stops before it
    return c.rule.limit, c.rule.evidence(s).split("; top statement")[0]


