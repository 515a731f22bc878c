"""Statement texts as servers normalize them: the placeholders of a digest
(`?` on MySQL/MariaDB, `$n` on PostgreSQL), what each stands for (the column
it is compared with or assigned to), and the literals of a statement seen
whole (pg_stat_activity, events_statements_history_long) put back in the
order of those placeholders."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<comment>/\*.*?\*/|--[^\n]*)
    |(?P<str>[Ee]?'(?:[^'\\]|\\.|'')*')
    |(?P<qident>`[^`]*`|"[^"]*")
    |(?P<list>\(\s*\.\.\.\s*\))
    |(?P<ph>\?|\$\d+)
    |(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<op><=|>=|<>|!=|::|\|\||[^\s])""",
    re.S | re.X,
)
# words after which a `-` starts a negative number rather than a subtraction
_BEFORE_NEGATIVE = {"select", "where", "and", "or", "not", "between", "values", "set", "then", "when", "else",
                    "in", "limit", "offset", "by", "on", "returning", "is", "like", "case", "return"}
_WRITES = {"insert", "update", "delete", "replace", "merge", "copy", "upsert"}
_READS = {"select", "with", "show", "table", "values", "explain"}
_COMPARE = {"=", "<", ">", "<=", ">=", "!=", "<>"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # str, qident, list, ph, num, ident, op
    text: str
    start: int
    end: int

    @property
    def name(self) -> str:
        """An identifier without its quotes."""
        return self.text[1:-1] if self.kind == "qident" else self.text


def tokens(sql: str) -> list[Token]:
    """The significant tokens of a statement (no blanks, no comments).

    >>> [t.text for t in tokens("SELECT `c` FROM t WHERE id BETWEEN ? AND ?")]
    ['SELECT', '`c`', 'FROM', 't', 'WHERE', 'id', 'BETWEEN', '?', 'AND', '?']
    """
    out = []
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup or "op"
        if kind not in ("ws", "comment"):
            out.append(Token(kind, m.group(), m.start(), m.end()))
    return out


def statement_kind(text: str) -> str:
    """begin, commit, rollback, read, write or other, from the first word.

    >>> [statement_kind(s) for s in ("BEGIN", "start transaction", "END", "COMMIT", "SELECT 1", "UPDATE t SET a=1")]
    ['begin', 'begin', 'commit', 'commit', 'read', 'write']
    """
    toks = tokens(text)
    word = toks[0].text.lower() if toks else ""
    if word == "begin" or (word == "start" and len(toks) > 1 and toks[1].text.lower() == "transaction"):
        return "begin"
    if word in ("commit", "end"):
        return "commit"
    if word in ("rollback", "abort"):
        return "rollback"
    if word in _WRITES:
        return "write"
    if word in _READS:
        return "read"
    return "other"


def literal_spans(sql: str) -> list[tuple[int, int]]:
    """Where the constants of a statement are, a minus sign before a number
    included where it makes a negative number (as pg_stat_statements does).

    >>> s = "UPDATE a SET b = b + -12 WHERE id = 7 AND n = 'x'"
    >>> [s[a:b] for a, b in literal_spans(s)]
    ['-12', '7', "'x'"]
    >>> s = "SELECT a -1 FROM t"
    >>> [s[a:b] for a, b in literal_spans(s)]
    ['1']
    """
    toks = tokens(sql)
    spans = []
    for i, t in enumerate(toks):
        if t.kind not in ("num", "str"):
            continue
        start = t.start
        if t.kind == "num" and i > 0 and toks[i - 1].text == "-" and toks[i - 1].end == t.start:
            before = toks[i - 2] if i > 1 else None
            if before is None or (before.kind == "op" and before.text != ")") or (
                    before.kind == "ident" and before.text.lower() in _BEFORE_NEGATIVE):
                start = toks[i - 1].start
        spans.append((start, t.end))
    return spans


def with_numbered_params(sql: str) -> tuple[str, list[str]]:
    """A statement seen whole, its constants replaced by $1, $2, ... as
    pg_stat_statements shows it, and the constants in that order.

    >>> with_numbered_params("SELECT abalance FROM pgbench_accounts WHERE aid = 5;")
    ('SELECT abalance FROM pgbench_accounts WHERE aid = $1', ['5'])
    """
    out, values, pos = [], [], 0
    for n, (a, b) in enumerate(literal_spans(sql), start=1):
        out.append(sql[pos:a])
        out.append(f"${n}")
        values.append(sql[a:b])
        pos = b
    out.append(sql[pos:])
    return "".join(out).strip().rstrip(";").strip(), values


def literal_values(sql: str) -> list[str]:
    """The constants of a statement, in order (strings unquoted).

    >>> literal_values("INSERT INTO t (a, b) VALUES (-3, 'it''s')")
    ['-3', "it's"]
    """
    out = []
    for a, b in literal_spans(sql):
        text = sql[a:b]
        if text[:1] in "'eE" and text.endswith("'") and len(text) >= 2:
            body = text[text.index("'") + 1:-1]
            text = body.replace("''", "'")
        out.append(text)
    return out


def with_question_marks(sql: str) -> str:
    """A statement seen whole with its constants made `?` again (a prepared
    statement's execution as a log or the processlist shows it).

    >>> with_question_marks("SELECT c FROM t WHERE id BETWEEN 5 AND 104 AND c = 'x'")
    'SELECT c FROM t WHERE id BETWEEN ? AND ? AND c = ?'
    """
    for a, b in reversed(literal_spans(sql)):
        sql = sql[:a] + "?" + sql[b:]
    return sql


def short(text: str, width: int) -> str:
    """Blanks folded, cut to `width` with an ellipsis.

    >>> short("SELECT  a, b FROM t", 12)
    'SELECT a,...'
    """
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def folded(text: str) -> str:
    """Blanks folded and a trailing semicolon dropped, for comparing texts.

    >>> folded("  SELECT 1\\n  FROM t ; ")
    'SELECT 1 FROM t'
    """
    return " ".join(text.split()).rstrip(";").rstrip()


def expand_lists(text: str) -> str:
    """A MySQL digest's `VALUES (...)` as one `?` per inserted column, so the
    statement runs again (other `(...)` lists become one `?`).

    >>> expand_lists("INSERT INTO `t` ( ID , `k` ) VALUES (...) ")
    'INSERT INTO `t` ( ID , `k` ) VALUES (?, ?) '
    >>> expand_lists("SELECT a FROM t WHERE id IN (...)")
    'SELECT a FROM t WHERE id IN (?)'
    """
    toks = tokens(text)
    out, pos = [], 0
    for i, t in enumerate(toks):
        if t.kind != "list":
            continue
        n = 1
        if i > 0 and toks[i - 1].text.lower() == "values":
            cols = _insert_columns(toks[:i - 1])
            n = max(1, len(cols))
        out.append(text[pos:t.start])
        out.append("(" + ", ".join(["?"] * n) + ")")
        pos = t.end
    out.append(text[pos:])
    return "".join(out)


def _insert_columns(toks: list[Token]) -> list[str]:
    """The column list `( a , b )` that ends `toks` (before VALUES)."""
    if not toks or toks[-1].text != ")":
        return []
    cols: list[str] = []
    for t in reversed(toks[:-1]):
        if t.text == "(":
            return list(reversed(cols))
        if t.kind in ("ident", "qident"):
            cols.append(t.name)
    return []


@dataclass(frozen=True, slots=True)
class Site:
    """What a placeholder stands for: its role (eq, cmp, between_lo,
    between_hi, set, insert, arith, other), the table of the statement and
    the column (both "" when unknown)."""

    role: str
    table: str
    column: str


def placeholder_sites(text: str) -> list[Site]:
    """One Site per placeholder of a normalized statement (lists expanded first).

    >>> [(s.role, s.table, s.column) for s in placeholder_sites("UPDATE `t1` SET `k` = `k` + ? WHERE ID = ?")]
    [('arith', 't1', 'k'), ('eq', 't1', 'ID')]
    >>> [s.role for s in placeholder_sites("SELECT c FROM t WHERE id BETWEEN $1 AND $2")]
    ['between_lo', 'between_hi']
    >>> [(s.role, s.column) for s in placeholder_sites("INSERT INTO t (a, b) VALUES (?, ?)")]
    [('insert', 'a'), ('insert', 'b')]
    >>> [(s.role, s.column) for s in placeholder_sites("UPDATE t SET c = ? WHERE id = ?")]
    [('set', 'c'), ('eq', 'id')]
    """
    toks = tokens(expand_lists(text))
    table = main_table(toks)
    sites = []
    for i, t in enumerate(toks):
        if t.kind != "ph":
            continue
        sites.append(_site(toks, i, table))
    return sites


def _site(toks: list[Token], i: int, table: str) -> Site:
    prev = toks[i - 1] if i > 0 else None
    prev2 = toks[i - 2] if i > 1 else None
    if prev is not None and prev.text.lower() == "between" and prev2 is not None:
        return Site("between_lo", table, prev2.name if prev2.kind in ("ident", "qident") else "")
    if (prev is not None and prev.text.lower() == "and" and prev2 is not None and prev2.kind == "ph"
            and i > 2 and toks[i - 3].text.lower() == "between"):
        named = toks[i - 4] if i > 3 else None
        return Site("between_hi", table, named.name if named is not None and named.kind in ("ident", "qident") else "")
    if prev is not None and prev.text in ("+", "-") and prev2 is not None and prev2.kind in ("ident", "qident"):
        return Site("arith", table, prev2.name)
    if prev is not None and prev.text in _COMPARE and prev2 is not None and prev2.kind in ("ident", "qident"):
        in_set = _in_set_clause(toks, i)
        role = "set" if in_set else ("eq" if prev.text == "=" else "cmp")
        return Site(role, table, prev2.name)
    inserted = _values_column(toks, i)
    if inserted is not None:
        return Site("insert", table, inserted)
    return Site("other", table, "")


def _in_set_clause(toks: list[Token], i: int) -> bool:
    for t in reversed(toks[:i]):
        word = t.text.lower()
        if word == "set":
            return True
        if word in ("where", "select", "from", "on", "having", "values"):
            return False
    return False


def _values_column(toks: list[Token], i: int) -> str | None:
    """The inserted column a placeholder inside `VALUES (...)` fills."""
    depth, pos = 0, 0
    for j in range(i - 1, -1, -1):
        t = toks[j]
        if t.text == ")":
            depth += 1
        elif t.text == "(":
            if depth == 0:
                if j > 0 and toks[j - 1].text.lower() == "values":
                    cols = _insert_columns(toks[:j - 1])
                    return cols[pos] if pos < len(cols) else ""
                return None
            depth -= 1
        elif t.text == "," and depth == 0:
            pos += 1
    return None


def main_table(toks: list[Token]) -> str:
    """The table a statement reads from, updates or inserts into."""
    for i, t in enumerate(toks[:-1]):
        if t.text.lower() in ("from", "update", "into"):
            nxt = toks[i + 1]
            if nxt.kind in ("ident", "qident"):
                # schema.table: the table
                if i + 3 < len(toks) and toks[i + 2].text == "." and toks[i + 3].kind in ("ident", "qident"):
                    return toks[i + 3].name
                return nxt.name
    return ""


def runnable(text: str, engine: str) -> str:
    """A normalized text that runs again.  A MySQL digest puts a blank
    between a function's name and its parenthesis, which makes MySQL read
    `SUM (` as a call of a stored function `SUM`: the blank goes (after any
    unquoted name it changes nothing: `IN(`, `VALUES(`, `t(a, b)`).

    >>> runnable("SELECT SUM ( `k` ) FROM `t` WHERE ID IN (...)", "mysql")
    'SELECT SUM( `k` ) FROM `t` WHERE ID IN(...)'
    >>> runnable("SELECT sum (k) FROM t", "postgresql")
    'SELECT sum (k) FROM t'
    """
    if engine != "mysql":
        return text
    toks = tokens(text)
    out, pos = [], 0
    for a, b in zip(toks, toks[1:]):
        if a.kind == "ident" and b.text in ("(", "(...)") or (a.kind == "ident" and b.kind == "list"):
            out.append(text[pos:a.end])
            pos = b.start
    out.append(text[pos:])
    return "".join(out)


def split_at_placeholders(text: str) -> list[str]:
    """The statement's text around its placeholders (lists expanded): n + 1
    pieces for n placeholders, blanks folded.

    >>> split_at_placeholders("SELECT c FROM t WHERE id BETWEEN $1 AND $2")
    ['SELECT c FROM t WHERE id BETWEEN ', ' AND ', '']
    """
    text = " ".join(expand_lists(text).split())
    pieces, pos = [], 0
    for t in tokens(text):
        if t.kind == "ph":
            pieces.append(text[pos:t.start])
            pos = t.end
    pieces.append(text[pos:])
    return pieces
