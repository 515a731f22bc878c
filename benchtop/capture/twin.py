"""A capture as a workload file (docs/workload-format.md): one transaction
type holding the captured statements, each run as many times per
transaction as it ran per captured transaction (a whole number, plus one
more with the fraction's probability), with placeholders drawn from the
fitted distributions; `rate` is the captured transaction rate and `prepare`
says whether the clients sent literals (text protocol) or parameters.  The
statements run in the order the capture saw them run within a transaction
(reads first, then writes by count, where it saw none), and a placeholder seen
taking an earlier statement's value in the same transaction takes it here too."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from benchtop.capture.fit import Draw, Pool, fit
from benchtop.capture.model import Capture, Order, Same, Statement
from benchtop.capture.normalize import runnable, short, split_at_placeholders

# the engine deals at most 32 transaction types (benchtop.workload.program.MAX_TXN_TYPES)
_MAX_TYPES = 32
# what a value was fitted to, as the file says it
_SOURCES = {"samples": "the values seen", "column": "the column's range or length",
            "rows per execution": "the range's width from the rows per execution",
            "unknown": "nothing seen: a guess"}
# fractions of an execution per transaction, in millionths
_SCALE = 1_000_000
# a statement run this close to once per transaction ran once in each (the others were in flight at the window's
# ends), so it can share a value with another
_ONCE = 0.02


@dataclass(frozen=True, slots=True)
class _Block:
    """Statements run together as often as the first: a lone statement, or a
    DELETE and the INSERT that puts the same key back (sysbench's
    delete_inserts), which must share the key or the table drains."""

    stmts: tuple[Statement, ...]
    shared: tuple[tuple[int, int], ...] = ()  # (insert placeholder, delete placeholder)


def _pairs(body: list[Statement]) -> list[_Block]:
    """The body in blocks: each DELETE by one key joined with an INSERT into
    the same table that sets that key and ran as often (within 10%), in the
    DELETE's place whichever of the two comes first."""
    partner: dict[int, tuple[int, int]] = {}  # delete -> (insert, the insert's placeholder of the key)
    taken: set[int] = set()
    for i, s in enumerate(body):
        phs = s.placeholders
        if not (s.text.lstrip().lower().startswith("delete") and len(phs) == 1 and phs[0].role == "eq"
                and phs[0].column is not None):
            continue
        key = phs[0].column
        for j, t in enumerate(body):
            if j in taken or not t.text.lstrip().lower().startswith("insert"):
                continue
            hit = [p.index for p in t.placeholders if p.role == "insert" and p.column is not None
                   and p.column.name.lower() == key.name.lower() and p.column.table == key.table]
            if hit and abs(t.calls - s.calls) <= 0.1 * max(s.calls, 1):
                partner[i] = (j, hit[0])
                taken.add(j)
                break
    blocks: list[_Block] = []
    for i, s in enumerate(body):
        if i in taken:
            continue
        if i in partner:
            j, at = partner[i]
            blocks.append(_Block((s, body[j]), ((at, 0),)))
        else:
            blocks.append(_Block((s,)))
    return blocks


def _times(per_txn: float) -> tuple[int, int]:
    """(whole executions, millionths of one more) per transaction.

    >>> _times(5.0), _times(0.25), _times(1.9999999)
    ((5, 0), (0, 250000), (2, 0))
    """
    whole = math.floor(per_txn)
    frac = round((per_txn - whole) * _SCALE)
    if frac >= _SCALE:
        return whole + 1, 0
    return whole, frac


class _Script:
    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.lines: list[str] = []
        self.strings: dict[str, str] = {}

    def add(self, line: str, depth: int = 0) -> None:
        self.lines.append("  " * depth + line)

    def string_template(self, length: int) -> str:
        name = f"text{length}"
        self.strings[name] = "#" * length
        return name

    def statement(self, s: Statement, draws: tuple[Draw, ...], depth: int, names: dict[int, str],
                  prefix: str = "v", keep: dict[int, str] | None = None) -> dict[int, str]:
        """set lines for the placeholders (those not in `names`), then the
        exec; variables are `prefix` and the placeholder's position, or the
        name `keep` gives a placeholder whose value a later statement takes.
        The parameter of each placeholder, by index."""
        keep = keep or {}
        refs: list[str] = []
        nstrs = 0
        for pos, (ph, d) in enumerate(zip(s.placeholders, draws, strict=True)):
            if ph.index in names:
                refs.append(names[ph.index])
                continue
            why = f"  # {_SOURCES.get(d.source, d.source)}" if d.source else ""
            if d.kind == "string":
                nstrs += 1
                var = f"${keep[ph.index]}" if ph.index in keep else f"$s{nstrs}"
                self.add(f"set {var} = str({self.string_template(d.length)}){why}", depth)
            else:
                var = keep.get(ph.index, f"{prefix}{pos + 1}")
                if d.kind == "width":
                    self.add(f"set {var} = {refs[-1][1:]} + {d.lo}{why}", depth)
                elif d.lo == d.hi:
                    self.add(f"set {var} = {d.lo}{why}", depth)
                else:
                    self.add(f"set {var} = uniform({d.lo}, {d.hi}){why}", depth)
            refs.append(f":{var}")
        pieces = split_at_placeholders(runnable(s.text, self.engine))
        sql = pieces[0] + "".join(r + p for r, p in zip(refs, pieces[1:], strict=True))
        kind = s.kind if s.kind in ("read", "write", "begin", "commit") else "other"
        self.add(f"exec {kind}: {sql.strip()}", depth)
        return {ph.index: ref for ph, ref in zip(s.placeholders, refs, strict=True)}


class _Shares:
    """The placeholders that take an earlier statement's value (`uses`, by
    statement text and index), and the parameters of those earlier ones once
    written (each set in a variable of its own, x1, x2, ... in order)."""

    def __init__(self, uses: dict[tuple[str, int], Same]) -> None:
        self.uses = uses
        self.sources = {(x.source, x.source_index) for x in uses.values()}
        self.refs: dict[tuple[str, int], str] = {}

    def write(self, script: _Script, s: Statement, draws: tuple[Draw, ...], depth: int,
              names: dict[int, str], prefix: str = "v") -> dict[int, str]:
        names = dict(names)
        for ph in s.placeholders:
            x = self.uses.get((s.text, ph.index))
            if x is not None and (x.source, x.source_index) in self.refs:
                names[ph.index] = self.refs[(x.source, x.source_index)]
                seen = (f"the same in {x.equal} of {x.of} transactions seen" if x.of else
                        "assumed: the row the transaction wrote, read back by its key; no values seen to tell")
                script.add(f"# ${ph.index + 1} takes the value of ${x.source_index + 1} of {short(x.source, 48)} ({seen})",
                           depth)
        keep: dict[int, str] = {}
        for ph in s.placeholders:
            if (s.text, ph.index) in self.sources:
                keep[ph.index] = f"x{len(self.refs) + len(keep) + 1}"
        refs = script.statement(s, draws, depth, names, prefix, keep)
        for i in keep:
            self.refs[(s.text, i)] = refs[i]
        return refs


def _links(order: Order | None, body: list[Statement], transactions: int) -> dict[tuple[str, int], Same]:
    """The order's shared values that the twin can keep: between statements
    that run once per transaction, the earlier one before the later in `body`."""
    if order is None or transactions <= 0:
        return {}
    at = {s.text: i for i, s in enumerate(body) if abs(s.calls / transactions - 1.0) <= _ONCE}
    return {(x.statement, x.index): x for x in order.shared
            if x.source in at and x.statement in at and at[x.source] < at[x.statement]}


def _comment(s: Statement, total: int) -> str:
    share = 100.0 * s.calls / total if total else 0.0
    rows = s.rows / s.calls if s.calls else 0.0
    return f"# {share:.1f}% of executions, {s.mean_ms:.3f} ms mean, {rows:.2f} rows each"


def _body_block(script: _Script, block: _Block, per_txn: float, total: int, pool: Pool, shares: _Shares,
                at: int = 0) -> None:
    whole, frac = _times(per_txn)
    if whole == 0 and frac == 0:
        return
    for s in block.stmts:
        script.add(_comment(s, total), at)
    depth = at
    if frac:
        script.add(f"set n = {whole} + (uniform(1, {_SCALE}) <= {frac})", at)
        script.add("loop n", at)
        depth = at + 1
    elif whole > 1:
        script.add(f"loop {whole}", at)
        depth = at + 1
    first = block.stmts[0]
    refs = shares.write(script, first, fit(first, pool), depth, {})
    shared = {ins: refs[dele] for ins, dele in block.shared}
    for s in block.stmts[1:]:
        shares.write(script, s, fit(s, pool), depth, shared, prefix="w")
    if depth > at:
        script.add("end", at)


def _alternative_blocks(script: _Script, blocks: list[_Block], transactions: int, total: int, pool: Pool,
                        shares: _Shares, n: int) -> None:
    """Blocks of which a transaction runs one (never two were seen in one):
    each as often as its count says, as many times as the group ran per
    transaction."""
    calls = sum(b.stmts[0].calls for b in blocks)
    script.add(f"# one of these {len(blocks)} a transaction, as production ran them (never two in one seen)")
    script.add(f"set pick{n} = uniform(1, {_SCALE})")
    edge = 0
    for i, block in enumerate(blocks):
        lo, edge = edge, _SCALE if i == len(blocks) - 1 else edge + round(block.stmts[0].calls / calls * _SCALE)
        script.add(f"if pick{n} > {lo} and pick{n} <= {edge}")
        _body_block(script, block, calls / transactions, total, pool, shares, at=1)
        script.add("end")


def _in_order(body: list[Statement], order: Order | None) -> None:
    """Reads first, then writes by count, where no order was seen; the
    statements the order places take the places of those, in its order (a
    partial order, of the statements sampled often enough, moves no other).

    >>> b = [Statement(t, "write" if t < "c" else "read", n, 1.0) for t, n in (("a", 5), ("b", 9), ("c", 1), ("d", 1))]
    >>> _in_order(b, None); [s.text for s in b]
    ['c', 'd', 'b', 'a']
    >>> _in_order(b, Order("x", 9, ("a", "d"))); [s.text for s in b]
    ['c', 'a', 'b', 'd']
    """
    body.sort(key=lambda s: (s.kind != "read", s.kind != "write", -s.calls))
    if order is None:
        return
    place = {text: i for i, text in enumerate(order.statements)}
    slots = [i for i, s in enumerate(body) if s.text in place]
    for i, s in zip(slots, sorted((body[i] for i in slots), key=lambda s: place[s.text]), strict=True):
        body[i] = s


def _most(stmts: list[Statement]) -> Statement | None:
    return max(stmts, key=lambda s: s.calls) if stmts else None


def twin_toml(cap: Capture, name: str = "twin") -> str:
    """The workload file's text."""
    stmts = [s for s in cap.statements if s.calls > 0]
    if not stmts:
        # an empty file would only fail later, in the run, without saying why
        why = f": {cap.notes[0]}" if cap.notes else ""
        raise ValueError(f"the capture holds no statements to run{why}")
    total = sum(s.calls for s in stmts)
    begin = _most([s for s in stmts if s.kind == "begin"])
    commit = _most([s for s in stmts if s.kind == "commit"])
    body = [s for s in stmts if s.kind not in ("begin", "commit", "rollback")]
    order = cap.order if cap.transactions > 0 else None
    _in_order(body, order)
    links = _links(order, body, cap.transactions)
    once = {x.statement for x in links.values()} | {x.source for x in links.values()}
    shares = _Shares(links)
    pool = Pool.of(stmts)
    txns: list[tuple[str, int, _Script]] = []
    if cap.transactions > 0:
        script = _Script(cap.engine)
        if begin is not None:
            script.add(_comment(begin, total))
        # boundaries counted but not seen (prepared statements on PostgreSQL): the standard words
        script.add(f"exec begin: {' '.join(begin.text.split()) if begin is not None else 'BEGIN'}")
        blocks = _pairs(body)
        group = {t: i for i, g in enumerate(order.alternatives if order else ()) for t in g}
        together = {i: [b for b in blocks if group.get(b.stmts[0].text) == i and b.stmts[0].text not in once]
                    for i in set(group.values())}
        for block in blocks:
            first = block.stmts[0]
            members = together.get(group.get(first.text, -1), [])
            if len(members) > 1 and any(b is block for b in members):
                if block is members[0]:
                    _alternative_blocks(script, members, cap.transactions, total, pool, shares, group[first.text] + 1)
                continue
            _body_block(script, block, 1.0 if first.text in once else first.calls / cap.transactions, total, pool,
                        shares)
        if commit is not None:
            script.add(_comment(commit, total))
        script.add(f"exec commit: {' '.join(commit.text.split()) if commit is not None else 'COMMIT'}")
        txns.append(("captured", 1, script))
    else:
        # no transactions opened: each statement is one (autocommit), dealt by its count
        for i, s in enumerate(sorted(body, key=lambda s: -s.calls)[:_MAX_TYPES]):
            script = _Script(cap.engine)
            _body_block(script, _Block((s,)), 1.0, total, pool, _Shares({}))
            txns.append((f"s{i + 1}", s.calls, script))
    strings: dict[str, str] = {}
    for _, _, sc in txns:
        strings.update(sc.strings)
    rate = cap.rate
    out = [
        f"# benchtop workload from-capture: {cap.engine} {cap.target}, {cap.window_s:.1f} s window,",
        f"# {cap.transactions} transactions ({rate:.2f}/s), {total} statements; values from {cap.sample_source}",
        *(f"# note: {n}" for n in cap.notes),
        *([f"# order: as seen in {order.transactions} transactions ({order.source}); "
           f"{len(links)} values taken from an earlier statement"] if order is not None else []),
        f"name = {json.dumps(name)}",
        f"description = {json.dumps(f'captured from {cap.target}: {len(stmts)} statements, {rate:.1f} transactions/s')}",
        "# the captured rate: the default --rate of a run of this file",
        f"rate = {rate:.3f}",
        "# production's clients do not wait for one another: independent arrivals (exponential gaps, as",
        "# pgbench -R sends them) meet, and wait for each other's row locks, as often as theirs do",
        'arrival = "poisson"',
        "# the clients sent values in the statements' text (no prepared statements)" if cap.literals
        else "# the clients sent prepared statements",
        f"prepare = {'false' if cap.literals else 'true'}",
        "",
    ]
    if strings:
        out.append("[strings]")
        out += [f"{k} = {json.dumps(v)}" for k, v in sorted(strings.items())]
        out.append("")
    for tname, weight, sc in txns:
        text = "\n".join(sc.lines)
        if "'''" in text:
            raise ValueError("a captured statement holds ''' and cannot be written as a TOML literal string")
        out += ["[[transaction]]", f"name = {json.dumps(tname)}", f"weight = {weight}", "script = '''", text, "'''",
                ""]
    return "\n".join(out)
