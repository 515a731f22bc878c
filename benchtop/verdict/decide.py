"""The verdict of one interval: every rule's score against its threshold,
ranked; the first over its threshold is the limit, the second is named as
`next` when it is close.  Other processes' CPU (the neighbours) yield to a
limit the server's own counts establish and are named next to it.  An open
loop that delivers its rate is limited by the rate; a closed loop with
nothing over a threshold and fast queries by the network's round trips;
anything else is `unclear`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from benchtop.verdict import rules
from benchtop.verdict.rules import NETWORK_RULE, RATE_RULE, RESOURCE_RULES, Rule
from benchtop.verdict.signals import NAMES, Signals

NEXT_CLOSE: Final = 0.7  # a second rule at this fraction of its threshold or more is named as `next`
MISSING_PENALTY: Final = 0.75  # confidence kept per missing signal group (at most two counted)
FULL: Final = 0.95  # a verdict's full confidence: one rule half again over its threshold, nothing close, all read
SURE_AT: Final = 1.5  # ... "half again": the strength at which the margin counts in full
YIELDED_MARGIN: Final = 0.75  # of the margin kept by a limit the neighbours' wait stands beside


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
    figures: tuple[tuple[str, float], ...] = ()  # the numbers the evidence quotes, by name
    lowered_by: tuple[str, ...] = ()  # what kept the confidence below FULL, in words

    @property
    def name(self) -> str:
        return NAMES.get(self.limit, self.limit)

    def to_dict(self) -> dict[str, Any]:
        """The `verdict` object of a JSON interval line."""
        nxt = {"limit": self.next, "evidence": self.next_evidence} if self.next else None
        return {"limit": self.limit, "confidence": self.confidence, "evidence": self.evidence, "next": nxt,
                "figures": dict(self.figures), "lowered_by": list(self.lowered_by)}

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


def figures(s: Signals) -> tuple[tuple[str, float], ...]:
    """The numbers behind the evidence, known ones only, for scripts and reports."""
    wait, lock_share = rules.cpu_wait_share(s), None
    if s.lock_waiting is not None:
        lock_share = s.lock_waiting / max(s.sessions, s.lock_waiting, 1.0)
    values = {
        "syncs_per_txn": rules.server_syncs_per_txn(s) if s.writes_per_txn else None,
        "device_flushes_per_txn": rules.device_flushes_per_txn(s),
        "neighbour_cores": s.neighbour_cores,
        "server_cores": s.server_cores,
        "server_cpus": rules.server_cpus(s) if s.server_cores is not None else None,
        "client_cores": s.client_cores,
        "client_cpus": float(s.client_cpus),
        "cpu_wait_share": wait,
        "worker_cpu_wait": s.worker_cpu_wait,
        "server_cpu_wait": s.server_cpu_wait,
        "off_cpu_share": rules.off_cpu_share(s),
        "sync_ms": s.sync_ms,
        "commit_sync_share": rules.commit_sync_share(s),
        "lock_waiting_share": lock_share,
        "ms_per_query": rules.per_query_ms(s),
        "server_ms_per_query": s.server_ms_per_query,
        "outside_ms_per_query": rules.outside_ms_per_query(s),
        "pool_waiting": s.pool_waiting,
    }
    return tuple((k, round(v, 4)) for k, v in values.items() if v is not None)


def _missing(s: Signals) -> list[str]:
    return [f"not read: {m}" for m in s.missing]


def _lock_share_cap(s: Signals, confidence: float, why: list[str]) -> float:
    """A lock verdict is as sure as the sessions actually seen in lock waits:
    row lock waits per write with few sessions waiting are a weaker sign."""
    if s.lock_waiting is None:
        why.append("sessions in lock waits not read (from row lock waits per write alone)")
        return min(confidence, 0.55)
    share = s.lock_waiting / max(s.sessions, s.lock_waiting, 1.0)
    cap = 0.3 + 0.65 * min(1.0, share / (SURE_AT * rules.LOCK_WAITING_SHARE))
    if cap < confidence:
        why.append(f"{100 * share:.0f}% of sessions in lock waits")
        return cap
    return confidence


def decide(s: Signals) -> Verdict:
    """The limit of one interval, with its evidence in numbers, its figures
    and what lowered its confidence."""
    ranked = rank(s)
    over = [c for c in ranked if c.strength >= 1.0]
    penalty = MISSING_PENALTY ** min(len(s.missing), 2)
    nums = figures(s)
    why = _missing(s)
    if s.open_loop:
        if (RATE_RULE.score(s) or 0.0) >= 1.0:
            top = over[0] if over else None
            if top is not None:
                why.insert(0, f"{NAMES.get(top.rule.limit, top.rule.limit)} over its threshold too")
            why.insert(0, "the asked rate sets the throughput: what would hold a faster one back is not measured")
            return Verdict("rate", round(0.9 * (0.85 if top else 1.0), 2), RATE_RULE.evidence(s),
                           *_next(top, s), figures=nums, lowered_by=tuple(why))
        # the loop cannot keep up: something else is the limit (below), or it is unclear
    if over:
        first = over[0]
        second = ranked[1] if len(ranked) > 1 else None
        own: list[str] = []
        counted = [c for c in over if c.rule.limit != "neighbours" and _counted_by_the_server(c, s)]
        beside = next((c for c in over if c.rule.limit == "neighbours"), None)
        yielded = False
        if beside is not None and counted:
            # other processes lengthen every step of a load whose own limit the server counts too: that limit
            # is the answer that holds on a quiet host, the neighbours are what this host adds to it
            first, second, yielded = counted[0], beside, True
            own.append(f"other processes held the run back too ({beside.strength:.2f}x their threshold)")
        close = second is not None and second.strength >= NEXT_CLOSE
        # past its threshold by half again: sure; a close second halves the margin
        margin = min(1.0, (first.strength - 1.0) / (SURE_AT - 1.0))
        if margin < 1.0:
            own.insert(0, f"{first.strength:.2f}x its threshold (sure from {SURE_AT:g}x)")
        if yielded:
            margin *= YIELDED_MARGIN
        elif close and second is not None and first.strength - second.strength < margin:
            margin = max(0.0, first.strength - second.strength)
            own.append(f"{NAMES.get(second.rule.limit, second.rule.limit)} close behind "
                       f"({second.strength:.2f}x its threshold)")
        confidence = 0.55 + 0.4 * margin
        if first.rule.limit == "locks":
            confidence = _lock_share_cap(s, confidence, own)
        confidence *= penalty
        return Verdict(first.rule.limit, round(confidence, 2), first.rule.evidence(s),
                       *(_next(second, s) if close else (None, None)), figures=nums,
                       lowered_by=tuple(own + why) if round(confidence, 2) < FULL else ())
    if not s.open_loop and (NETWORK_RULE.score(s) or 0.0) >= 1.0:
        second = ranked[0] if ranked else None
        close = second is not None and second.strength >= NEXT_CLOSE
        # a verdict by elimination: only as sure as the signals that eliminated the rest
        why.insert(0, "a verdict by elimination (the server's statement time not read)")
        return Verdict("network", round(0.6 * penalty, 2), NETWORK_RULE.evidence(s),
                       *(_next(second, s) if close else (None, None)), figures=nums, lowered_by=tuple(why))
    evidence = ("no rule over its threshold: " + ", ".join(f"{c.rule.limit} {c.score:.2f} of {c.rule.threshold:g}"
                                                            for c in ranked[:3])) if ranked else ""
    if s.open_loop:
        evidence = RATE_RULE.evidence(s) + (f"; {evidence}" if evidence else "")
    if s.missing:
        evidence += ("; " if evidence else "") + "not read: " + ", ".join(s.missing)
    return Verdict("unclear", round(0.3 * penalty, 2), evidence, figures=nums,
                   lowered_by=tuple(["no rule over its threshold"] + why))


def _counted_by_the_server(c: Candidate, s: Signals) -> bool:
    """A limit the server's or the pooler's own counts establish, not one
    inferred from the workers' time (which the neighbours' queue shares):
    clients waiting in the pool, sessions seen in lock waits, sessions in
    I/O waits or every commit syncing by the server's own count."""
    if c.rule.limit == "pool":
        return True
    if c.rule.limit == "locks":
        waiting = rules.lock_waiting(s)
        return waiting is not None and waiting / max(s.sessions, 1.0) >= rules.LOCK_WAITING_SHARE
    if c.rule.limit == "disk":
        syncs = rules.server_syncs_per_txn(s)
        io = (s.io_waiting or 0.0) / max(s.sessions, 1.0)
        return bool(s.writes_per_txn) and syncs is not None and syncs >= rules.COMMIT_FLUSHES \
            or io >= rules.IO_WAITING_SHARE
    return False


def _next(c: Candidate | None, s: Signals) -> tuple[str | None, str | None]:
    if c is None:
        return None, None
    # the top statement is the first limit's to name; the second's evidence stops before it
    return c.rule.limit, c.rule.evidence(s).split("; top statement")[0]


