"""pgbench custom scripts (`pgbench -f FILE@WEIGHT`) on the native engine:
`benchtop --pgbench-script FILE[@WEIGHT]`.

Each script becomes one transaction type of a program, translated line by
line into the workload script language (so an error names the script's own
file and line):

    \\set NAME EXPR        set NAME = EXPR   (pgbench's operators and random,
                          random_gaussian, random_exponential, random_zipfian,
                          abs, least, greatest, mod; `:var` or `var`)
    \\sleep N [us|ms|s]    sleep N microseconds
    SQL;                  exec read|write|other|begin|commit: SQL (`:var` are
                          bound parameters, as pgbench -M prepared sends them)
    SQL \\gset [PREFIX]    the same, the first row's column into PREFIX+column
                          (one column, kept as an integer)

Variables are integers; `--define NAME=VALUE` (pgbench's -D) sets constants,
`scale` among them (1 unless defined, as pgbench's -s for custom scripts).
Any other meta-command is refused with its line number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchtop.workload.compiler import WorkloadError, SourceText, compile_definition
from benchtop.workload.program import Program
from benchtop.workload.statements import split_at_semicolons

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_SUPPORTED = ("set", "sleep")
_KINDS = {
    "select": "read", "with": "read", "values": "read", "show": "read", "table": "read",
    "insert": "write", "update": "write", "delete": "write", "merge": "write", "copy": "write",
    "begin": "begin", "start": "begin", "commit": "commit", "end": "commit",
}


@dataclass(frozen=True, slots=True)
class ScriptSpec:
    path: str
    weight: int = 1


def parse_script_arg(arg: str) -> ScriptSpec:
    """FILE or FILE@WEIGHT, as pgbench's -f.

    >>> parse_script_arg("tpcb.sql@3")
    ScriptSpec(path='tpcb.sql', weight=3)
    """
    path, at, weight = arg.rpartition("@")
    if not at or not weight.isdigit():
        return ScriptSpec(arg)
    if int(weight) < 1:
        raise WorkloadError(f"--pgbench-script {arg}: the weight must be at least 1")
    return ScriptSpec(path, int(weight))


def parse_defines(items: list[str] | tuple[str, ...]) -> dict[str, int]:
    """--define NAME=VALUE (integers, as the script's variables are)."""
    out: dict[str, int] = {"scale": 1}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(_IDENT, name) or not re.fullmatch(r"-?\d+", value.strip()):
            raise WorkloadError(f"--define {item!r}: use NAME=INTEGER")
        out[name] = int(value)
    return out


def _strip_comment(line: str) -> str:
    """The line without a `--` comment outside quotes."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif line.startswith("--", i):
            return line[:i]
    return line


def _column_name(sql: str, path: str, line: int) -> str:
    """The name PostgreSQL gives the one column of a SELECT (its alias, the
    column or the function called), which \\gset stores under."""
    m = re.match(r"(?is)\s*select\s+(.*?)\s+from\s", sql + " ") or re.match(r"(?is)\s*select\s+(.*)$", sql)
    items = _top_level_split(m.group(1)) if m else []
    if len(items) != 1:
        raise WorkloadError(f"{path}:{line}: \\gset stores one column here: select exactly one")
    item = items[0].strip()
    alias = re.search(r"(?i)(?:\bas\s+)?(" + _IDENT + r")\s*$", item)
    if re.fullmatch(r"(?:" + _IDENT + r"\.)*" + _IDENT, item):
        return item.rsplit(".", 1)[-1].lower()
    call = re.fullmatch(r"(" + _IDENT + r")\s*\(.*\)", item, re.S)
    if call:
        return call.group(1).lower()
    if alias and not item.endswith(")"):
        return alias.group(1).lower()
    raise WorkloadError(f"{path}:{line}: \\gset: give the column a name (SELECT ... AS name)")


def _top_level_split(text: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _exec_line(sql: str, into: str | None) -> str:
    sql = " ".join(sql.split())
    word = sql.split()[0].lower() if sql.split() else ""
    kind = _KINDS.get(word, "other")
    arrow = f" -> {into}" if into else ""
    return f"exec {kind}{arrow}: {sql}"


def translate(text: str, path: str) -> str:
    """The workload script for a pgbench script: one output line per input
    line, so the compiler's line numbers are the file's."""
    lines = text.splitlines()
    out = [""] * len(lines)
    pending: list[str] = []  # SQL text not yet ended by ';'
    pending_line = 0
    i = 0
    while i < len(lines):
        lineno = i + 1
        raw = lines[i]
        # a backslash at the end continues a meta-command on the next line
        while raw.rstrip().endswith("\\") and raw.lstrip().startswith("\\") and i + 1 < len(lines):
            i += 1
            raw = raw.rstrip()[:-1] + " " + lines[i]
        stripped = raw.strip()
        if stripped.startswith("\\") and not pending:
            word, _, arg = stripped[1:].partition(" ")
            arg = _strip_comment(arg).strip()
            if word == "gset":
                raise WorkloadError(f"{path}:{lineno}: \\gset must end a query, in place of its ';'")
            if word not in _SUPPORTED:
                raise WorkloadError(f"{path}:{lineno}: \\{word} is not supported by --pgbench-script "
                                    "(supported: \\set, \\sleep, \\gset after a query)")
            out[lineno - 1] = _meta(word, arg, path, lineno)
            i += 1
            continue
        body = _strip_comment(raw)
        gset = re.search(r"\\gset(?:\s+(" + _IDENT + r"))?\s*$", body)
        if gset:
            body = body[:gset.start()]
        elif other := re.search(r"\\(\w+)(?:\s+\S+)?\s*$", body):
            raise WorkloadError(f"{path}:{lineno}: \\{other.group(1)} after a query is not supported by "
                                "--pgbench-script (only \\gset)")
        if body.strip() and not pending:
            pending_line = lineno
        parts = split_at_semicolons(body)  # the last piece may go on on the next line
        for done in parts[:-1]:
            pending.append(done)
            sql = " ".join(pending).strip()
            if sql:
                out[pending_line - 1] = _join(out[pending_line - 1], _exec_line(sql, None), path, pending_line)
            pending = []
            pending_line = lineno
        if parts[-1].strip():
            if not pending:
                pending_line = lineno
            pending.append(parts[-1])
        if gset:
            sql = " ".join(pending).strip()
            if not sql:
                raise WorkloadError(f"{path}:{lineno}: \\gset must follow a query")
            prefix = gset.group(1) or ""
            gset_exec = _exec_line(sql, prefix + _column_name(sql, path, lineno))
            out[pending_line - 1] = _join(out[pending_line - 1], gset_exec, path, pending_line)
            pending = []
        i += 1
    if " ".join(pending).strip():
        out[pending_line - 1] = _join(out[pending_line - 1], _exec_line(" ".join(pending), None), path, pending_line)
    if not any(ln.startswith("exec") for part in out for ln in part.splitlines()):
        raise WorkloadError(f"{path}: the script runs no SQL")
    return "\n".join(out) + "\n"


def _join(existing: str, new: str, path: str, line: int) -> str:
    if existing:
        # two statements on one line: the second cannot keep its own line number
        raise WorkloadError(f"{path}:{line}: several SQL statements on one line are not supported "
                            "(put each on a line of its own)")
    return new


def _meta(word: str, arg: str, path: str, line: int) -> str:
    if word == "set":
        m = re.fullmatch(r"(" + _IDENT + r")\s+(.+)", arg)
        if not m:
            raise WorkloadError(f"{path}:{line}: expected: \\set NAME EXPRESSION")
        return f"set {m.group(1)} = {_expr(m.group(2))}"
    m = re.fullmatch(r"(\S+)\s*(us|ms|s)?", arg)
    if not m:
        raise WorkloadError(f"{path}:{line}: expected: \\sleep NUMBER [us|ms|s]")
    factor = {"us": 1, "ms": 1000, "s": 1_000_000, None: 1_000_000}[m.group(2)]
    amount = _expr(m.group(1))
    return f"sleep {amount}" if factor == 1 else f"sleep ({amount}) * {factor}"


def _expr(text: str) -> str:
    """pgbench's `:var` is a plain name in the script language."""
    return re.sub(r"(?<![:\w]):(" + _IDENT + r")", r"\1", text.strip())


def pgbench_program(scripts: list[ScriptSpec], engine: str, defines: dict[str, int]) -> Program:
    """One transaction type per script, dealt by weight."""
    if not scripts:
        raise WorkloadError("no --pgbench-script given")
    txns: list[dict[str, Any]] = []
    for spec in scripts:
        try:
            raw = Path(spec.path).read_bytes()
        except OSError as exc:
            raise WorkloadError(f"--pgbench-script {spec.path}: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[:exc.start].count(b"\n") + 1
            raise WorkloadError(f"{spec.path}:{line}: not a pgbench script (not UTF-8 text)") from None
        script = translate(text, spec.path)
        # compiled alone first, so an error carries this file's name and line
        one = {"name": Path(spec.path).stem, "options": defines,
               "transaction": [{"name": Path(spec.path).stem, "script": script}]}
        compile_definition(one, SourceText(spec.path, script), engine)
        txns.append({"name": _unique(Path(spec.path).stem, txns), "weight": spec.weight, "script": script})
    names = ", ".join(Path(s.path).name for s in scripts)
    data = {"name": "pgbench-script", "description": f"pgbench scripts: {names}", "options": defines,
            "transaction": txns}
    return replace(compile_definition(data, SourceText("<pgbench scripts>", ""), engine), strict_eval=True)


def _unique(name: str, txns: list[dict[str, Any]]) -> str:
    taken = {t["name"] for t in txns}
    n, out = 2, name
    while out in taken:
        out, n = f"{name}_{n}", n + 1
    return out
