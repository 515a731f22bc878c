"""General expressions of the script language: `a * 3 + b`, `w_id != s`,
`nurand(1023, 1, 3000)`, `not found or x >= 10`.

An expression compiles to a value that is either a constant (options and
numbers fold at compile time, strings only in compile-time comparisons) or a
register plus a constant; whatever needs computing at run time becomes
BT_OP_ARITH / BT_OP_RAND ops that write scratch registers ("%0", "%1", ...),
which the next statement may reuse.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Protocol

from benchtop.workload import program as P

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>()|&!,]))"
)
_DISTS = tuple(k for k in P.DIST)
# functions an expression may call besides the distributions
EXPR_FUNCTIONS = ("nurand", "min", "max", "random", *P.OP_RAND_PARAM, "least", "greatest", "abs", "mod")


class Ctx(Protocol):
    options: dict[str, Any]
    ops: list[list[int]]

    def reg(self, name: str, line: int, create: bool = False) -> int: ...

    def err(self, line: int, msg: str) -> Exception: ...

    def temp(self, line: int) -> int: ...


@dataclass(frozen=True, slots=True)
class Val:
    """A constant (reg == -1: `k`, or the string `s`) or register + k."""

    reg: int = -1
    k: int = 0
    s: str | None = None
    f: float | None = None  # a decimal constant: only a distribution's parameter takes one

    @property
    def const(self) -> bool:
        return self.reg < 0


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _c_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def fold_constant(op: str, a: int, b: int) -> int:
    if op == "/":
        return _c_div(a, b)
    if op == "%":
        return 0 if b == 0 else a - _c_div(a, b) * b
    table = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
        ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
        "and": lambda: int(bool(a) and bool(b)), "or": lambda: int(bool(a) or bool(b)),
        "|": lambda: a | b, "&": lambda: a & b, "min": lambda: min(a, b), "max": lambda: max(a, b),
    }
    return table[op]()


# pgbench's limits on the parameters (at least 2.0, above 0, 1.001 to 1000),
# bounded above where the engine's 32-bit millionths end
_PARAM_RANGE = {"random_gaussian": (2.0, 2000.0), "random_exponential": (0.000001, 2000.0),
                "random_zipfian": (1.001, 1000.0)}


class _Parser:
    def __init__(self, ctx: Ctx, text: str, line: int, emit: bool) -> None:
        self.ctx, self.text, self.line, self.emit = ctx, text, line, emit
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ctx.err(line, f"cannot read expression {text!r} at {text[pos:].strip()[:20]!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    # -- tokens
    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise self.ctx.err(self.line, f"expression {self.text!r} ends too early")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise self.ctx.err(self.line, f"expression {self.text!r}: expected {want!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> Val:
        v = self.or_()
        if self.i != len(self.toks):
            raise self.ctx.err(self.line, f"expression {self.text!r}: unexpected {self.toks[self.i][1]!r}")
        return v

    # -- emission
    def binop(self, op: str, a: Val, b: Val) -> Val:
        if a.f is not None or b.f is not None:
            raise self.ctx.err(self.line, f"expression {self.text!r}: decimal numbers are only allowed as the "
                                          "parameter of random_gaussian, random_exponential or random_zipfian")
        if a.s is not None or b.s is not None:
            if op not in ("==", "!=") or a.s is None or b.s is None:
                raise self.ctx.err(self.line, f"expression {self.text!r}: strings can only be compared "
                                              "with == or != to other strings or options")
            return Val(k=int((a.s == b.s) == (op == "==")))
        if a.const and b.const:
            if op in ("/", "%") and b.k == 0:
                raise self.ctx.err(self.line, f"expression {self.text!r}: division by zero")
            return Val(k=self.int64(fold_constant(op, a.k, b.k)))
        if op == "+" and b.const:
            return Val(a.reg, self.int64(a.k + b.k))
        if op == "+" and a.const:
            return Val(b.reg, self.int64(b.k + a.k))
        if op == "-" and b.const:
            return Val(a.reg, self.int64(a.k - b.k))
        if not self.emit:
            raise self.ctx.err(self.line, f"expression {self.text!r} must be constant here (numbers and options only)")
        dst = self.ctx.temp(self.line)
        self.ctx.ops.append([P.OP_ARITH, dst, a.reg, P.ARITH[op], b.reg, a.k, b.k])
        return Val(dst, 0)

    def int64(self, k: int) -> int:
        """A whole number the engine can hold (its registers are 64-bit)."""
        if not INT64_MIN <= k <= INT64_MAX:
            raise self.ctx.err(self.line, f"expression {self.text!r}: {k} is out of the 64-bit integer range "
                                          f"({INT64_MIN} to {INT64_MAX})")
        return k

    def rand(self, dist: int, lo: Val, hi: Val) -> Val:
        if lo.const and hi.const and lo.s is None and hi.s is None and hi.k < lo.k:
            raise self.ctx.err(self.line, f"expression {self.text!r}: empty range given to random ({lo.k} > {hi.k})")
        if not self.emit:
            raise self.ctx.err(self.line, f"expression {self.text!r}: random values are not allowed here")
        for v in (lo, hi):
            if v.s is not None or v.f is not None:
                raise self.ctx.err(self.line, f"expression {self.text!r}: random bounds must be whole numbers")
        dst = self.ctx.temp(self.line)
        self.ctx.ops.append([P.OP_RAND, dst, lo.reg, dist, hi.reg, lo.k, hi.k])
        return Val(dst, 0)

    def rand_param(self, fn: str, lo: Val, hi: Val, param: Val) -> Val:
        """pgbench's parameterised draws, with its limits on the parameter."""
        if not param.const or param.s is not None:
            raise self.ctx.err(self.line, f"{fn}(): the parameter must be a constant number")
        value = param.f if param.f is not None else float(param.k)
        # the engine holds the parameter in millionths in 32 bits: at most 2147
        low, high = _PARAM_RANGE[fn]
        if not (math.isfinite(value) and low <= value <= high):
            raise self.ctx.err(self.line, f"{fn}(): the parameter must be from {low:g} to {high:g}, not {value:g}")
        self.rand(0, lo, hi)  # checks the bounds; its op is replaced below
        op = self.ctx.ops[-1]
        op[0], op[3] = P.OP_RAND_PARAM[fn], round(value * 1_000_000)
        return Val(op[1], 0)

    # -- grammar, lowest precedence first
    def or_(self) -> Val:
        v = self.and_()
        while self.peek() in ("or", "||"):
            self.take()
            v = self.binop("or", v, self.and_())
        return v

    def and_(self) -> Val:
        v = self.not_()
        while self.peek() in ("and", "&&"):
            self.take()
            v = self.binop("and", v, self.not_())
        return v

    def not_(self) -> Val:
        if self.peek() in ("not", "!"):
            self.take()
            return self.binop("==", self.not_(), Val(k=0))
        return self.cmp()

    def cmp(self) -> Val:
        v = self.bitor()
        if self.peek() in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            v = self.binop(op, v, self.bitor())
        return v

    def bitor(self) -> Val:
        v = self.bitand()
        while self.peek() == "|":
            self.take()
            v = self.binop("|", v, self.bitand())
        return v

    def bitand(self) -> Val:
        v = self.add()
        while self.peek() == "&":
            self.take()
            v = self.binop("&", v, self.add())
        return v

    def add(self) -> Val:
        v = self.mul()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            v = self.binop(op, v, self.mul())
        return v

    def mul(self) -> Val:
        v = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()[1]
            v = self.binop(op, v, self.unary())
        return v

    def unary(self) -> Val:
        if self.peek() == "-":
            self.take()
            return self.binop("-", Val(k=0), self.unary())
        return self.atom()

    def args(self) -> list[Val]:
        self.take("(")
        out: list[Val] = []
        if self.peek() == ")":
            self.take()
            return out
        while True:
            out.append(self.or_())
            if self.take()[1] == ")":
                return out

    def atom(self) -> Val:
        kind, tok = self.take()
        if kind == "num":
            return Val(f=float(tok)) if "." in tok else Val(k=self.int64(int(tok)))
        if kind == "str":
            return Val(s=tok[1:-1])
        if tok == "(":
            v = self.or_()
            self.take(")")
            return v
        if kind != "name":
            raise self.ctx.err(self.line, f"expression {self.text!r}: unexpected {tok!r}")
        if self.peek() == "(":
            return self.call(tok, self.args())
        if tok in self.ctx.options:
            v = self.ctx.options[tok]
            if isinstance(v, bool):
                return Val(k=int(v))
            if isinstance(v, int):
                return Val(k=self.int64(v))
            if isinstance(v, float) and v.is_integer():
                return Val(k=self.int64(int(v)))
            if isinstance(v, str):
                return Val(s=v)
            raise self.ctx.err(self.line, f"option {tok!r} is {v!r}, not a whole number")
        if not self.emit:
            raise self.ctx.err(self.line, f"expression {self.text!r} must be constant here, but {tok!r} is a variable")
        return Val(self.ctx.reg(tok, self.line), 0)

    def call(self, fn: str, args: list[Val]) -> Val:
        def need(n: int, what: str) -> None:
            if len(args) != n:
                raise self.ctx.err(self.line, f"{fn}() takes {what}")

        if fn in _DISTS:
            need(2, "two arguments (low, high)")
            return self.rand(P.DIST[fn], args[0], args[1])
        if fn in ("min", "max"):
            need(2, "two arguments")
            return self.binop(fn, args[0], args[1])
        # pgbench's names (its \set expressions run here unchanged)
        if fn == "random":
            need(2, "two arguments (low, high)")
            return self.rand(P.DIST["uniform"], args[0], args[1])
        if fn in P.OP_RAND_PARAM:
            need(3, "three arguments (low, high, parameter)")
            return self.rand_param(fn, args[0], args[1], args[2])
        if fn in ("least", "greatest"):
            if not args:
                raise self.ctx.err(self.line, f"{fn}() takes at least one argument")
            v = args[0]
            for other in args[1:]:
                v = self.binop("min" if fn == "least" else "max", v, other)
            return v
        if fn == "abs":
            need(1, "one argument")
            return self.binop("max", args[0], self.binop("-", Val(k=0), args[0]))
        if fn == "mod":
            need(2, "two arguments")
            return self.binop("%", args[0], args[1])
        if fn == "nurand":
            # TPC-C 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x
            if len(args) not in (3, 4) or not all(a.const and a.s is None for a in args):
                raise self.ctx.err(self.line, "nurand() takes constant A, x, y and optionally C")
            a, x, y = (v.k for v in args[:3])
            # C is a run-time constant in [0, A]; a fixed one per A keeps runs comparable
            c = args[3].k if len(args) == 4 else random.Random(a).randint(0, a)
            u = self.binop("|", self.rand(P.DIST["uniform"], Val(k=0), Val(k=a)),
                           self.rand(P.DIST["uniform"], Val(k=x), Val(k=y)))
            return self.binop("+", self.binop("%", self.binop("+", u, Val(k=c)), Val(k=y - x + 1)), Val(k=x))
        raise self.ctx.err(self.line, f"unknown function {fn}(): use rand, uniform, gaussian, special, pareto, "
                                      "zipfian, nurand, min, max, or pgbench's random, random_gaussian, "
                                      "random_exponential, random_zipfian, abs, least, greatest, mod")


def compile_expr(ctx: Ctx, text: str, line: int) -> Val:
    """Emit the ops computing `text`; the result as a constant or register + k."""
    return _Parser(ctx, text, line, emit=True).parse()


def const_expr(ctx: Ctx, text: str, line: int) -> int | str:
    """A compile-time value (numbers, options, arithmetic on them)."""
    v = _Parser(ctx, text, line, emit=False).parse()
    return v.s if v.s is not None else v.k
