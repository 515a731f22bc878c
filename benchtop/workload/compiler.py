"""Compile a workload file (TOML, documented in docs/workload-format.md) into
a `Program` for one engine.

Errors are `WorkloadError("FILE:LINE: problem")`: one line that names the
file, the line and what is wrong.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtop.workload import program as P
from benchtop.workload.expr import EXPR_FUNCTIONS, INT64_MAX, INT64_MIN, compile_expr, const_expr

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_NAMED_PARAM = re.compile(r"(?<![:\w]):(\$?" + _IDENT + r")")
# the engine deals transaction types by weight in 32-bit integers (their sum too)
MAX_WEIGHT = 2**31 - 1


class WorkloadError(ValueError):
    """A workload file that cannot be compiled; one line with file and line."""


@dataclass
class SourceText:
    path: str
    text: str

    def line_of(self, needle: str, start: int = 0) -> int:
        pos = self.text.find(needle, start) if needle else -1
        return self.text.count("\n", 0, pos) + 1 if pos >= 0 else 1


@dataclass
class _Ctx:
    engine: str
    options: dict[str, Any]
    strings: dict[str, str]
    src: SourceText
    base_line: int = 1
    regs: dict[str, int] = field(default_factory=dict)
    sregs: dict[str, int] = field(default_factory=dict)
    ops: list[list[int]] = field(default_factory=list)
    params: list[tuple[int, int, int]] = field(default_factory=list)
    stmts: list[P.Stmt] = field(default_factory=list)
    stmt_index: dict[tuple[str, int, int, int], int] = field(default_factory=dict)
    templates: list[str] = field(default_factory=list)
    uses_tables: bool = False
    writes: bool = False
    temps: int = 0  # scratch registers used by the current statement

    def err(self, line: int, msg: str) -> WorkloadError:
        return WorkloadError(f"{self.src.path}:{line}: {msg}")

    def reg(self, name: str, line: int, create: bool = False) -> int:
        if name in self.regs:
            return self.regs[name]
        if not create:
            raise self.err(line, f"unknown variable {name!r} (set it first, or add it to [options])")
        if len(self.regs) >= P.NREGS:
            raise self.err(line, f"too many variables (at most {P.NREGS})")
        self.regs[name] = len(self.regs)
        return self.regs[name]

    def temp(self, line: int) -> int:
        self.temps += 1
        return self.reg(f"%{self.temps - 1}", line, create=True)

    def sreg(self, name: str, line: int, create: bool = False) -> int:
        if name in self.sregs:
            return self.sregs[name]
        if not create:
            raise self.err(line, f"unknown string variable {name!r}")
        if len(self.sregs) >= P.NSREGS:
            raise self.err(line, f"too many string variables (at most {P.NSREGS})")
        self.sregs[name] = len(self.sregs)
        return self.sregs[name]


# ------------------------------------------------------------------ expressions


def _const(ctx: _Ctx, tok: str, line: int) -> int | None:
    tok = tok.strip()
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if tok in ctx.options:
        v = ctx.options[tok]
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise ctx.err(line, f"option {tok!r} is {v!r}, not a whole number")
    return None


def _linear(ctx: _Ctx, text: str, line: int) -> tuple[int, int]:
    """`a + 3 - range_size` -> (register or -1, constant), with no op; any
    other expression (`a * b`, `nurand(...)`) is computed by ops emitted
    first and its result register returned."""
    try:
        reg, k = _linear_only(ctx, text, line)
    except WorkloadError:
        v = compile_expr(ctx, text, line)
        if v.s is not None:
            raise ctx.err(line, f"expression {text.strip()!r} is a string, not a number") from None
        return v.reg, v.k
    if not INT64_MIN <= k <= INT64_MAX:  # the engine's registers are 64-bit
        raise ctx.err(line, f"expression {text.strip()!r}: {k} is out of the 64-bit integer range "
                            f"({INT64_MIN} to {INT64_MAX})")
    return reg, k


def _linear_only(ctx: _Ctx, text: str, line: int) -> tuple[int, int]:
    text = text.strip()
    if not text:
        raise ctx.err(line, "empty expression")
    terms = re.findall(r"([+-]?)\s*([^+\-\s][^+\-]*)", text)
    if not terms or "".join(s + t for s, t in terms).replace(" ", "") != text.replace(" ", ""):
        raise ctx.err(line, f"cannot read expression {text!r}: use terms joined by + and -")
    reg, k = -1, 0
    for sign, tok in terms:
        tok = tok.strip()
        mult = -1 if sign == "-" else 1
        c = _const(ctx, tok, line)
        if c is not None:
            k += mult * c
            continue
        if not re.fullmatch(_IDENT, tok):
            raise ctx.err(line, f"cannot read {tok!r} in expression {text!r}")
        if reg >= 0 or mult < 0:
            raise ctx.err(line, f"expression {text!r}: only one variable, added, is supported")
        reg = ctx.reg(tok, line)
    return reg, k


def _cond(ctx: _Ctx, name: str, line: int) -> tuple[bool | None, int]:
    """A condition: (value, -1) when options decide it at compile time, or
    (None, register) for one computed at run time (a variable or any
    expression, whose ops are emitted here)."""
    neg = name.startswith("!") or name.startswith("not ")
    name = name[1:].strip() if name.startswith("!") else (name[4:].strip() if neg else name.strip())
    if name in ctx.options:
        on = bool(ctx.options[name])
        return (not on if neg else on), -1
    if not neg and name in ctx.regs:
        return None, ctx.regs[name]
    # a general condition: `w > 1`, `not found`, `scale > 1 and remote`
    v = compile_expr(ctx, f"not ({name})" if neg else name, line)
    if v.s is not None:
        raise ctx.err(line, f"condition {name!r} is a string, not a truth value")
    if v.const:
        return bool(v.k), -1
    if v.k != 0:
        dst = ctx.temp(line)
        ctx.ops.append([P.OP_SET, dst, v.reg, 0, 0, v.k, 0])
        return None, dst
    return None, v.reg


_CALL = re.compile(r"^(" + _IDENT + r")\s*\((.*)\)$")


def _split_args(text: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [a.strip() for a in out]


def _template(ctx: _Ctx, arg: str, line: int) -> str:
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "\"'":
        return arg[1:-1]
    if arg in ctx.strings:
        return ctx.strings[arg]
    raise ctx.err(line, f"unknown string template {arg!r}: define it under [strings] or quote it")


def _whole_call(text: str) -> re.Match[str] | None:
    """`f(a, b)` but not `f(a) * (b)`: the call must span the whole text."""
    m = _CALL.match(text)
    if not m:
        return None
    depth = 0
    for i in range(m.start(2) - 1, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return m if i == len(text) - 1 else None
    return None


def _compile_set(ctx: _Ctx, lhs: str, rhs: str, line: int) -> None:
    rhs = rhs.strip()
    m = _whole_call(rhs)
    if lhs.startswith("$") and m and m.group(1) == "words":
        args = _split_args(m.group(2))
        if len(args) != 3:
            raise ctx.err(line, "words() takes a comma list under [strings], a number and a digit count")
        words = _template(ctx, args[0], line)
        digits = const_expr(ctx, args[2], line)
        if not isinstance(digits, int) or not 1 <= digits <= 18:
            raise ctx.err(line, "words(): the digit count must be a number from 1 to 18")
        r, k = _linear(ctx, args[1], line)
        ctx.templates.append(words)
        ctx.ops.append([P.OP_WORDS, ctx.sreg(lhs[1:], line, True), r, len(ctx.templates) - 1, digits, k, 0])
        return
    if lhs.startswith("$"):
        if not m or m.group(1) != "str":
            raise ctx.err(line, f"string variable {lhs} takes str(TEMPLATE) or words(LIST, N, DIGITS)")
        tmpl = _template(ctx, m.group(2), line)
        ctx.templates.append(tmpl)
        ctx.ops.append([P.OP_STR, ctx.sreg(lhs[1:], line, True), 0, len(ctx.templates) - 1, 0, 0, 0])
        return
    if not re.fullmatch(_IDENT, lhs):
        raise ctx.err(line, f"bad variable name {lhs!r}")
    if m and m.group(1) in P.DIST:
        args = _split_args(m.group(2))
        if len(args) != 2:
            raise ctx.err(line, f"{m.group(1)}() takes two arguments (low, high)")
        r1, k1 = _linear(ctx, args[0], line)
        r2, k2 = _linear(ctx, args[1], line)
        if r1 < 0 and r2 < 0 and k2 < k1:
            raise ctx.err(line, f"{m.group(1)}({k1}, {k2}): empty range given to random")
        dst = ctx.reg(lhs, line, True)
        ctx.ops.append([P.OP_RAND, dst, r1, P.DIST[m.group(1)], r2, k1, k2])
        return
    if m and m.group(1) == "unique":
        ctx.ops.append([P.OP_UNIQUE, ctx.reg(lhs, line, True), 0, 0, 0, 0, 0])
        return
    if m and m.group(1) not in EXPR_FUNCTIONS and m.group(1) not in P.DIST:
        raise ctx.err(line, f"unknown function {m.group(1)}(): use rand, uniform, gaussian, special, pareto, "
                            "zipfian, nurand, min, max, unique, str, or pgbench's random, random_gaussian, "
                            "random_exponential, random_zipfian, abs, least, greatest, mod")
    n_ops = len(ctx.ops)
    # created first, so `set n = n + 1` counts from 0 (registers start at 0
    # and keep their value from one transaction to the next)
    dst = ctx.reg(lhs, line, True)
    r, k = _linear(ctx, rhs, line)
    last = ctx.ops[-1] if len(ctx.ops) > n_ops else None
    computed = (P.OP_ARITH, P.OP_RAND, *P.OP_RAND_PARAM.values())
    if last is not None and k == 0 and r == last[1] and last[0] in computed and r != dst:
        last[1] = dst  # write the result straight into the variable, not via a scratch register
        return
    ctx.ops.append([P.OP_SET, dst, r, 0, 0, k, 0])


_EXEC = re.compile(
    r"^exec\s+(read|write|other|begin|commit)\s*(\[[^\]]*\])?\s*(->\s*\$?" + _IDENT + r")?\s*:\s*(.+)$"
)


def _compile_exec(ctx: _Ctx, m: re.Match[str], line: int) -> None:
    kind_word, engines, into, sql = m.group(1), m.group(2), m.group(3), _fill(m.group(4).strip(), ctx.options)
    if engines:
        names = [e.strip() for e in engines[1:-1].split(",") if e.strip()]
        bad = [n for n in names if n not in P.ENGINES]
        if bad:
            raise ctx.err(line, f"unknown engine {bad[0]!r} in [...]: use {', '.join(P.ENGINES)}")
        if ctx.engine not in names:
            return
    is_begin = {"begin": 1, "commit": 2}.get(kind_word, 0)
    kind = P.QK["other"] if is_begin else P.QK[kind_word]
    if kind == P.QK["write"]:
        ctx.writes = True
    first_param = len(ctx.params)
    nparams = 0

    def sub(mm: re.Match[str]) -> str:
        nonlocal nparams
        name = mm.group(1)
        if name.startswith("$"):
            ctx.params.append((P.PARAM_SREG, ctx.sreg(name[1:], line), 0))
        else:
            c = _const(ctx, name, line)
            if c is not None:
                ctx.params.append((P.PARAM_CONST, 0, c))
            else:
                ctx.params.append((P.PARAM_REG, ctx.reg(name, line), 0))
        nparams += 1
        return "?"

    # :name inside quoted literals stays literal text
    parts = re.split(r"('(?:[^']|'')*')", sql)
    sql_q = "".join(p if i % 2 else _NAMED_PARAM.sub(sub, p) for i, p in enumerate(parts))
    if nparams > P.MAX_PARAMS:
        raise ctx.err(line, f"too many parameters ({nparams}; at most {P.MAX_PARAMS})")
    table_reg = -1
    if "{t}" in sql_q:
        if "t" not in ctx.regs:
            raise ctx.err(line, "statement uses {t} but no table variable t is set (e.g. set t = uniform(1, tables))")
        table_reg = ctx.regs["t"]
        ctx.uses_tables = True
    key = (sql_q, table_reg, kind, is_begin)
    if key not in ctx.stmt_index:
        ctx.stmt_index[key] = len(ctx.stmts)
        ctx.stmts.append(P.Stmt(sql=sql_q, table_reg=table_reg, nparams=nparams, kind=kind, is_begin=is_begin))
    a = -1
    if into:
        target = into[2:].strip()
        a = -2 - ctx.sreg(target[1:], line, True) if target.startswith("$") else ctx.reg(target, line, True)
    ctx.ops.append([P.OP_EXEC, a, first_param, ctx.stmt_index[key], nparams, kind, 0])


def _compile_script(ctx: _Ctx, script: str) -> None:
    stack: list[tuple[str, int, int]] = []  # (kind, op index or -1 for a skipped block, line)
    skip_depth = 0  # >0 while inside a block removed at compile time
    for offset, raw in enumerate(script.splitlines()):
        line = ctx.base_line + offset
        text = raw.split("#", 1)[0].strip() if not raw.strip().startswith("exec") else raw.strip()
        if not text:
            continue
        ctx.temps = 0
        word = text.split()[0]
        if word in ("loop", "if", "unless"):
            arg = text[len(word):].strip()
            if not arg:
                raise ctx.err(line, f"{word} needs an argument")
            if skip_depth:
                skip_depth += 1
                stack.append((word, -1, line))
                continue
            if word == "loop":
                r, k = _linear(ctx, arg, line)
                if r < 0 and k <= 0:
                    skip_depth = 1
                    stack.append((word, -1, line))
                    continue
                ctx.ops.append([P.OP_LOOP, 0, r, 0, 0, k, 0])
                stack.append((word, len(ctx.ops) - 1, line))
                continue
            const, reg = _cond(ctx, ("!" + arg) if word == "unless" else arg, line)
            if const is True:
                stack.append((word, -2, line))  # transparent block
            elif const is False:
                skip_depth = 1
                stack.append((word, -1, line))
            else:
                ctx.ops.append([P.OP_BEGIN_IF, reg, 0, 0, 0, 0, 0])
                stack.append((word, len(ctx.ops) - 1, line))
            continue
        if word == "end":
            if not stack:
                raise ctx.err(line, "'end' without an open loop/if")
            _, idx, _ = stack.pop()
            if skip_depth:
                skip_depth -= 1
            elif idx >= 0:
                ctx.ops[idx][4] = len(ctx.ops) - idx - 1
            continue
        if skip_depth:
            continue
        if word == "set":
            m = re.match(r"^set\s+(\$?" + _IDENT + r")\s*=\s*(.+)$", text)
            if not m:
                raise ctx.err(line, "expected: set NAME = EXPRESSION")
            _compile_set(ctx, m.group(1), m.group(2), line)
        elif word == "exec":
            m = _EXEC.match(text)
            if not m:
                raise ctx.err(line, "expected: exec read|write|other|begin|commit [engines] [-> var]: SQL")
            _compile_exec(ctx, m, line)
        elif word == "rollback":
            m = re.match(r"^rollback\s+if\s+(.+)$", text)
            if not m:
                raise ctx.err(line, "expected: rollback if CONDITION")
            const, reg = _cond(ctx, m.group(1).strip(), line)
            if const is True:
                reg = ctx.temp(line)
                ctx.ops.append([P.OP_SET, reg, -1, 0, 0, 1, 0])
            if const is not False:
                ctx.ops.append([P.OP_ROLLBACK_IF, reg, 0, 0, 0, 0, 0])
        elif word == "sleep":
            r, k = _linear(ctx, text[5:], line)
            ctx.ops.append([P.OP_SLEEP_US, 0, r, 0, 0, k, 0])
        else:
            raise ctx.err(line, f"unknown step {word!r}: use set, exec, loop, if, unless, end, rollback, sleep")
    if stack:
        kind, _, line = stack[-1]
        raise ctx.err(line, f"'{kind}' is never closed with 'end'")


# ------------------------------------------------------------------ files


def _read_toml(path: Path) -> tuple[dict[str, Any], SourceText]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read workload file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise WorkloadError(f"{path}:{line}: not a workload file (not UTF-8 text: byte {exc.start + 1})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        where = f"{path}:{m.group(1)}" if m else str(path)
        problem = re.sub(r" \(at line.*", "", msg)
        raise WorkloadError(f"{where}: invalid TOML: {problem}") from None
    return data, SourceText(str(path), text)


def _per_engine(value: Any, engine: str, what: str, src: SourceText) -> Any:
    """`x` or `{mysql = x, postgresql = y, default = z}` -> the engine's one."""
    if isinstance(value, dict):
        if engine in value:
            return value[engine]
        if engine == "null":
            for k in ("default", "mysql", "sqlite", "postgresql"):
                if k in value:
                    return value[k]
        if "default" in value:
            return value["default"]
        raise WorkloadError(f"{src.path}:{src.line_of(what)}: {what} has no variant for {engine} (and no default)")
    return value


def on_off(value: Any) -> bool | None:
    """A switch as sysbench spells it (on/off, true/false, yes/no, 1/0);
    None when it is none of those.

    >>> on_off("ON"), on_off(0), on_off("maybe")
    (True, False, None)
    """
    if isinstance(value, bool):
        return value
    s = str(value).lower()
    if s in ("on", "true", "yes", "1"):
        return True
    if s in ("off", "false", "no", "0"):
        return False
    return None


def _option_where(src: SourceText, name: str) -> str:
    """FILE:LINE of an option's line in [options] (the section's line when
    the option comes from an included file)."""
    m = re.compile(rf"^\s*{re.escape(name)}\s*=", re.M).search(src.text, max(src.text.find("[options]"), 0))
    return f"{src.path}:{src.text.count(chr(10), 0, m.start()) + 1 if m else src.line_of('[options]')}"


def _check_option_numbers(data: dict[str, Any], options: dict[str, Any], src: SourceText) -> None:
    """Every numeric option (the file's default or the command line's value)
    is finite, whole numbers within the engine's 64 bits, and within the
    file's [minimum] and [maximum]; the error names the option's line."""
    bounds = {name: data.get(name, {}) for name in ("minimum", "maximum")}
    defaults = data.get("options", {})
    for k, v in options.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        where = _option_where(src, k)
        flag = f"--{k.replace('_', '-')}"
        if isinstance(v, float) and not math.isfinite(v):
            raise WorkloadError(f"{where}: option {flag} takes a finite number, not {v}")
        if isinstance(v, int) and not INT64_MIN <= v <= INT64_MAX:
            raise WorkloadError(f"{where}: option {flag} is out of the 64-bit integer range, not {v}")
        lo = bounds["minimum"].get(k) if isinstance(bounds["minimum"], dict) else None
        hi = bounds["maximum"].get(k) if isinstance(bounds["maximum"], dict) else None
        if lo is None and isinstance(v, int) and isinstance(defaults.get(k), int) and defaults[k] >= 0:
            lo = 0  # a count, a size, a percentage: never negative unless [minimum] says so
        if isinstance(lo, (int, float)) and v < lo:
            raise WorkloadError(f"{where}: option {flag} must be at least {lo}, not {v}")
        if isinstance(hi, (int, float)) and v > hi:
            raise WorkloadError(f"{where}: option {flag} must be at most {hi}, not {v}")


def _coerce_option(name: str, default: Any, value: Any, where: str) -> Any:
    if isinstance(default, bool):
        switch = on_off(value)
        if switch is not None:
            return switch
        raise WorkloadError(f"{where}: option --{name.replace('_', '-')} takes on/off, not {value!r}")
    if isinstance(default, int):
        try:
            return int(value)
        except (TypeError, ValueError):
            raise WorkloadError(f"{where}: option --{name.replace('_', '-')} takes a whole number, not {value!r}") from None
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise WorkloadError(f"{where}: option --{name.replace('_', '-')} takes a number, not {value!r}") from None
    return value


def _num(ctx: _Ctx, tok: str, line: int) -> int | None:
    """A number, an option, or arithmetic on them (`scale * 30000`)."""
    c = _const(ctx, tok, line)
    if c is not None:
        return c
    try:
        v = const_expr(ctx, tok, line)
    except WorkloadError:
        return None
    return v if isinstance(v, int) else None


def _gen(ctx: _Ctx, spec: str, line: int) -> P.Gen:
    spec = spec.strip()
    m = _CALL.match(spec)
    if spec == "seq":
        return P.Gen(P.GEN_SEQ, lo=0)
    if m:
        fn, args = m.group(1), _split_args(m.group(2))
        if fn in P.DIST and len(args) == 2:
            lo, hi = (_num(ctx, a, line) for a in args)
            if lo is None or hi is None:
                raise ctx.err(line, f"load column {spec!r}: bounds must be numbers or options")
            return P.Gen(P.GEN_RAND, dist=P.DIST[fn], lo=lo, hi=hi)
        if fn == "str" and len(args) == 1:
            return P.Gen(P.GEN_TEMPLATE, text=_template(ctx, args[0], line))
        if fn == "seq" and len(args) == 1:
            off = _num(ctx, args[0], line)
            return P.Gen(P.GEN_SEQ, lo=off or 0)
        if fn == "div" and len(args) == 1:
            d = _num(ctx, args[0], line)
            if not d or d <= 0:
                raise ctx.err(line, f"load column {spec!r}: div() takes a positive number")
            return P.Gen(P.GEN_DIV, lo=d)
        if fn == "const" and len(args) == 1:
            c = _num(ctx, args[0], line)
            if c is None:
                raise ctx.err(line, f"load column {spec!r}: const() takes a number or option")
            return P.Gen(P.GEN_CONST, lo=c)
        if fn == "literal" and len(args) == 1:
            return P.Gen(P.GEN_LITERAL, text=args[0].strip("\"'"))
        nums = [_num(ctx, a, line) for a in args]
        if fn == "mod" and len(args) in (2, 3):
            if None in nums or nums[0] <= 0 or nums[1] <= 0:  # type: ignore[operator]
                raise ctx.err(line, f"load column {spec!r}: mod(step, n[, offset]) takes positive numbers or options")
            return P.Gen(P.GEN_MOD, lo=nums[0], hi=nums[1], dist=nums[2] if len(args) == 3 else 0)  # type: ignore[arg-type]
        if fn == "decimal" and len(args) == 3:
            if None in nums or not 0 <= nums[2] <= 18:  # type: ignore[operator]
                raise ctx.err(line, f"load column {spec!r}: decimal(low, high, places) takes numbers, places 0..18")
            return P.Gen(P.GEN_DECIMAL, lo=nums[0], hi=nums[1], dist=nums[2])  # type: ignore[arg-type]
        if fn == "words" and len(args) == 4:
            step, n, digits = (_num(ctx, a, line) for a in args[1:])
            if step is None or n is None or digits is None or step <= 0 or n <= 0 or not 1 <= digits <= 18:
                raise ctx.err(line, f"load column {spec!r}: words(LIST, step, n, digits) takes positive numbers")
            return P.Gen(P.GEN_WORDS, lo=step, hi=n, dist=digits, text=_template(ctx, args[0], line))
    raise ctx.err(line, f"unknown load column {spec!r}: use seq, seq(N), div(N), mod(step, n[, offset]), rand(a,b), "
                        "decimal(a, b, places), str(T), words(LIST, step, n, digits), const(N), literal(SQL)")


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k in ("options", "strings", "schema"):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def read_definition(path: Path, search: list[Path]) -> tuple[dict[str, Any], SourceText]:
    """The TOML data of a workload, with `base = "name"` files merged under it."""
    data, src = _read_toml(path)
    seen = {path.resolve()}
    while "base" in data:
        name = data.pop("base")
        if not isinstance(name, str):
            raise WorkloadError(f"{path}:{src.line_of('base')}: base must be a workload name")
        base_path = _find(name, search + [path.parent])
        if base_path is None or base_path.resolve() in seen:
            raise WorkloadError(f"{path}:{src.line_of('base')}: base workload {name!r} not found")
        seen.add(base_path.resolve())
        base_data, _ = _read_toml(base_path)
        if "base" in base_data:
            data["base"] = base_data.pop("base")
        data = _merge(base_data, data)
    return data, src


@dataclass(frozen=True, slots=True)
class RunDefaults:
    """What a workload file says a run of it does unless the command line
    says otherwise: `rate` (the default --rate; 0 = closed loop), `arrival`
    (the default --arrival) and `prepare` (false: the text protocol, as
    --no-prepare)."""

    rate: float = 0.0
    prepare: bool = True
    arrival: str = "uniform"


ARRIVALS = ("uniform", "poisson")  # the arrival processes a run, a group or a file may name


def run_defaults(data: dict[str, Any], src: SourceText) -> RunDefaults:
    """The top-level `rate`, `arrival` and `prepare` keys, checked.

    >>> run_defaults({"rate": 200.5, "prepare": False, "arrival": "poisson"}, SourceText("w.toml", "rate = 200.5"))
    RunDefaults(rate=200.5, prepare=False, arrival='poisson')
    >>> run_defaults({"rate": -1}, SourceText("w.toml", "rate = -1"))
    Traceback (most recent call last):
    benchtop.workload.compiler.WorkloadError: w.toml:1: rate is the default --rate: transactions/s from 0 to 1e9, not -1
    """
    rate = data.get("rate", 0.0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (math.isfinite(rate) and 0 <= rate <= 1e9):
        raise WorkloadError(f"{src.path}:{src.line_of('rate')}: rate is the default --rate: transactions/s "
                            f"from 0 to 1e9, not {rate!r}")
    prepare = data.get("prepare", True)
    if not isinstance(prepare, bool):
        raise WorkloadError(f"{src.path}:{src.line_of('prepare')}: prepare is true or false, not {prepare!r}")
    arrival = data.get("arrival", "uniform")
    if arrival not in ARRIVALS:
        raise WorkloadError(f"{src.path}:{src.line_of('arrival')}: arrival is the default --arrival: "
                            f"{' or '.join(ARRIVALS)}, not {arrival!r}")
    return RunDefaults(float(rate), prepare, str(arrival))


def _find(name: str, search: list[Path]) -> Path | None:
    for d in search:
        p = d / f"{name}.toml"
        if p.is_file():
            return p
    return None


def compile_definition(
    data: dict[str, Any], src: SourceText, engine: str, overrides: dict[str, Any] | None = None
) -> P.Program:
    if engine not in P.ENGINES:
        raise WorkloadError(f"unknown engine {engine!r}: use {', '.join(P.ENGINES)}")
    options_default = data.get("options", {})
    if not isinstance(options_default, dict):
        raise WorkloadError(f"{src.path}:{src.line_of('[options]')}: [options] must be a table")
    options = dict(options_default)
    for k, v in (overrides or {}).items():
        if k in options and v is not None:
            options[k] = _coerce_option(k, options_default[k], v, _option_where(src, k))
    choices = data.get("choices", {})
    for k, allowed in (choices.items() if isinstance(choices, dict) else ()):
        if isinstance(allowed, list) and k in options and options[k] not in allowed:
            raise WorkloadError(f"{src.path}: option --{k.replace('_', '-')} takes "
                                f"{', '.join(map(str, allowed))}, not {options[k]!r}")
    _check_option_numbers(data, options, src)
    strings = {k: str(v) for k, v in data.get("strings", {}).items()}
    ctx = _Ctx(engine=engine, options=options, strings=strings, src=src)

    txns = data.get("transaction", [])
    if isinstance(txns, dict):
        txns = [txns]
    if not txns:
        raise WorkloadError(f"{src.path}:1: no [[transaction]] defined")
    types: list[P.TxnType] = []
    search_from = 0
    for t in txns:
        if not isinstance(t, dict) or "script" not in t:
            raise WorkloadError(f"{src.path}:{src.line_of('[[transaction]]', search_from)}: a [[transaction]] needs a script")
        name = str(t.get("name", f"txn{len(types) + 1}"))
        script = t["script"]
        if not isinstance(script, str):
            raise WorkloadError(f"{src.path}:{src.line_of('script', search_from)}: script must be a string")
        pos = src.text.find(script.splitlines()[0] if script.strip() else "script", search_from)
        if pos < 0:
            pos = src.text.find("script", search_from)
        ctx.base_line = src.text.count("\n", 0, max(pos, 0)) + 1
        search_from = max(pos, 0)
        weight_raw = t.get("weight", 1)
        weight = _const(ctx, str(weight_raw), ctx.base_line) if not isinstance(weight_raw, int) else weight_raw
        if weight is None or not 0 <= weight <= MAX_WEIGHT:
            raise WorkloadError(f"{src.path}:{ctx.base_line}: weight of {name!r} must be a number from 0 to "
                                f"{MAX_WEIGHT} or an option, not {weight_raw!r}")
        first = len(ctx.ops)
        _compile_script(ctx, script)
        if weight > 0:
            types.append(P.TxnType(name=name, weight=weight, first_op=first, nops=len(ctx.ops) - first))
    if not types:
        raise WorkloadError(f"{src.path}:1: every transaction has weight 0")
    if sum(t.weight for t in types) > MAX_WEIGHT:
        raise WorkloadError(f"{src.path}:1: the transactions' weights add up to more than {MAX_WEIGHT}")
    if len(types) > P.MAX_TXN_TYPES:
        raise WorkloadError(f"{src.path}:1: too many transaction types (at most {P.MAX_TXN_TYPES})")

    tables_opt = data.get("schema", {}).get("tables", "tables")
    ntables = _const(ctx, str(tables_opt), 1) if tables_opt is not None else 1
    ntables = ntables if ntables and ntables > 0 else 1

    init = [0] * len(ctx.regs)
    schema = _schema(data.get("schema"), engine, ntables, src, options)
    loads = tuple(_load(ctx, ld, ntables) for ld in _as_list(data.get("load"))
                  if _when(ld.get("when"), options))
    return P.Program(
        name=str(data.get("name", Path(src.path).stem)),
        engine=engine,
        options=options,
        ops=tuple(tuple(op) for op in ctx.ops),  # type: ignore[misc]
        params=tuple(ctx.params),
        stmts=tuple(ctx.stmts),
        strings=tuple(ctx.templates),
        txn_types=tuple(types),
        init_regs=tuple(init),
        max_table=ntables if ctx.uses_tables else 0,
        schema=schema,
        loads=loads,
        description=str(data.get("description", "")),
        source=src.path,
        read_only=not ctx.writes,
        extra=_extra(data, engine, src, options),
        groups=_groups(data, types, src, ctx),
        presets=_presets(data, src),
    )


def _groups(data: dict[str, Any], types: list[P.TxnType], src: SourceText, ctx: _Ctx) -> tuple[P.Group, ...]:
    """`[[group]]`s: name, transactions (a list of names, their file weights,
    or a table of name = weight), threads, rate, arrival."""
    out: list[P.Group] = []
    index = {t.name: i for i, t in enumerate(types)}
    for g in _as_list(data.get("group")):
        line = src.line_of("[[group]]", 0 if not out else src.text.find(f'"{out[-1].name}"') + 1)
        if not isinstance(g, dict) or not isinstance(g.get("name"), str) or "transactions" not in g:
            raise WorkloadError(f"{src.path}:{line}: a [[group]] needs a name and transactions")
        name = g["name"]
        if not re.fullmatch(_IDENT, name) or name in (o.name for o in out):
            raise WorkloadError(f"{src.path}:{line}: group name {name!r} must be a unique identifier")
        raw = g["transactions"]
        pairs = list(raw.items()) if isinstance(raw, dict) else [(t, None) for t in _as_names(raw)]
        weights = [0] * len(types)
        for txn, w in pairs:
            if txn not in index:
                raise WorkloadError(f"{src.path}:{line}: group {name}: no transaction named {txn!r} "
                                    f"(have {', '.join(index)})")
            weight = types[index[txn]].weight if w is None else _const(ctx, str(w), line)
            if weight is None or not 0 <= weight <= MAX_WEIGHT:
                raise WorkloadError(f"{src.path}:{line}: group {name}: weight of {txn!r} must be a number from 0 "
                                    f"to {MAX_WEIGHT}")
            weights[index[txn]] = weight
        if not any(weights):
            raise WorkloadError(f"{src.path}:{line}: group {name} runs no transaction (every weight is 0)")
        if sum(weights) > MAX_WEIGHT:
            raise WorkloadError(f"{src.path}:{line}: group {name}: the weights add up to more than {MAX_WEIGHT}")
        threads, rate = g.get("threads", 1), g.get("rate", 0)
        threads = _const(ctx, str(threads), line) if not isinstance(threads, int) else threads
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 0:
            raise WorkloadError(f"{src.path}:{line}: group {name}: rate must be a number >= 0 (0 = closed loop)")
        if threads is None or threads < 0:
            raise WorkloadError(f"{src.path}:{line}: group {name}: threads must be a number >= 0")
        arrival = str(g.get("arrival", "uniform"))
        if arrival not in ARRIVALS:
            raise WorkloadError(f"{src.path}:{line}: group {name}: arrival is {' or '.join(ARRIVALS)}")
        out.append(P.Group(name=name, threads=threads, rate=float(rate), arrival=arrival, weights=tuple(weights)))
    if len(out) > P.MAX_GROUPS:
        raise WorkloadError(f"{src.path}: at most {P.MAX_GROUPS} groups")
    return tuple(out)


def _as_names(raw: Any) -> list[str]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        return []
    return [n for item in items for n in item.split("+")]


def _presets(data: dict[str, Any], src: SourceText) -> dict[str, tuple[str, ...]]:
    """`[presets]`: name = ["group.threads=N", "group.rate=R", ...]."""
    raw = data.get("presets", {})
    out: dict[str, tuple[str, ...]] = {}
    for name, settings in (raw.items() if isinstance(raw, dict) else ()):
        if not isinstance(settings, list) or not all(isinstance(v, str) for v in settings):
            raise WorkloadError(f"{src.path}:{src.line_of(name)}: preset {name!r} is a list of "
                                "\"group.threads=N\" / \"group.rate=R\" strings")
        out[str(name)] = tuple(settings)
    return out


def _extra(data: dict[str, Any], engine: str, src: SourceText, options: dict[str, Any]) -> dict[str, object]:
    """[report] (per-minute rates) and [[consistency]] (checks) for the
    code that reports on and checks a run."""
    out: dict[str, object] = {}
    if isinstance(data.get("report"), dict):
        out["report"] = dict(data["report"])
    checks = []
    for c in _as_list(data.get("consistency")):
        if not isinstance(c, dict) or "name" not in c or "sql" not in c:
            raise WorkloadError(f"{src.path}:{src.line_of('[[consistency]]')}: a [[consistency]] needs name and sql")
        checks.append((str(c["name"]), _fill(str(_per_engine(c["sql"], engine, "sql", src)), options)))
    if checks:
        out["consistency"] = tuple(checks)
    return out


def _as_list(v: Any) -> list[dict[str, Any]]:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _when(cond: Any, options: dict[str, Any]) -> bool:
    if cond is None:
        return True
    cond = str(cond).strip()
    neg = cond.startswith("!")
    v = bool(options.get(cond.lstrip("!"), False))
    return not v if neg else v


def _schema(raw: Any, engine: str, ntables: int, src: SourceText, options: dict[str, Any]) -> P.Schema | None:
    if not raw:
        return None

    def stmts(key: str) -> tuple[str, ...]:
        if key not in raw:
            return ()
        v = _per_engine(raw[key], engine, key, src)
        when = raw.get(f"{key}_when")
        if when is not None and not _when(when, options):
            return ()
        v = [v] if isinstance(v, str) else v
        return tuple(_fill(s, options) for s in v)

    check = _per_engine(raw.get("check", ""), engine, "check", src)
    return P.Schema(
        tables=ntables,
        create=stmts("create"),
        after_load=stmts("after_load"),
        indexes=stmts("indexes"),
        drop=stmts("drop"),
        check=_fill(str(check), options),
        once_before=stmts("once_before"),
    )


def _fill(sql: str, options: dict[str, Any]) -> str:
    """`{opt:name}` in DDL becomes the option's value (e.g. a storage engine)."""
    return re.sub(r"\{opt:(" + _IDENT + r")\}", lambda m: str(options.get(m.group(1), "")), sql)


def _load(ctx: _Ctx, ld: dict[str, Any], ntables: int) -> P.LoadSpec:
    line = ctx.src.line_of("[[load]]")
    insert = _per_engine(ld.get("insert"), ctx.engine, "insert", ctx.src)
    cols = _per_engine(ld.get("columns"), ctx.engine, "columns", ctx.src)
    if not insert or not isinstance(cols, list):
        raise ctx.err(line, "[[load]] needs insert = \"INSERT ... VALUES \" and columns = [...]")
    rows = _num(ctx, str(ld.get("rows", "table_size")), line)
    if rows is None or rows < 0:
        raise ctx.err(line, "[[load]] rows must be a number or an option")
    per_table = ld.get("per_table", True)
    return P.LoadSpec(
        insert_prefix=str(insert),
        cols=tuple(_gen(ctx, str(c), line) for c in cols),
        first_table=1,
        last_table=ntables if per_table else 1,
        rows=rows,
        rows_per_insert=int(ld.get("rows_per_insert", 1000)),
        rows_per_commit=int(ld.get("rows_per_commit", 0)),
        complete_between=_between(ctx, ld.get("complete_between"), rows, line),
    )


def _between(ctx: _Ctx, value: Any, rows: int, line: int) -> tuple[int, int] | None:
    """A [[load]]'s complete_between: [LOW, HIGH] around its rows."""
    if value is None:
        return None
    bounds = [_num(ctx, str(v), line) for v in value] if isinstance(value, list) and len(value) == 2 else []
    low, high = (bounds if bounds else [None, None])
    if low is None or high is None or not 0 <= low <= rows <= high:
        raise ctx.err(line, "[[load]] complete_between must be [LOW, HIGH] around rows (numbers, options, arithmetic)")
    return low, high
