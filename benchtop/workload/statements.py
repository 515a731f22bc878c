"""SQL text split into statements at the semicolons outside quotes, for
pgbench scripts and scenario hooks."""

from __future__ import annotations


def split_at_semicolons(text: str, quotes: str = "'\"") -> list[str]:
    """The pieces between semicolons outside `quotes`, as written (the last
    one is what follows the last semicolon, maybe empty).

    >>> split_at_semicolons("SELECT ';'; SELECT 2")
    ["SELECT ';'", ' SELECT 2']
    >>> split_at_semicolons("SELECT `a;b`;", quotes="'\\"`")
    ['SELECT `a;b`', '']
    """
    out: list[str] = []
    cur: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in quotes:
            quote = ch
        elif ch == ";":
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out
